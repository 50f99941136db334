"""sdrlib.data.stats.data_conclusion: notebook 00's closing sentences from its result tables."""
from __future__ import annotations

import pandas as pd

from sdrlib.data.stats import data_conclusion


def _write(tmp_path, name, rows):
    pd.DataFrame(rows).to_csv(tmp_path / f"{name}.csv", index=False)


def test_data_conclusion_reads_every_number_from_the_tables(tmp_path):
    _write(tmp_path, "00_dataset_summary", [{"split": "train", "studies": 1200, "no_finding": 600, "single": 400,
                                             "multi": 200}])
    _write(tmp_path, "00_report_language", [
        {"statistic": "unique_sentence_ratio", "this corpus": 0.4567, "IU-Xray reference": 0.39},
        {"statistic": "distinct_words_findings", "this corpus": 812, "IU-Xray reference": 1321},
        {"statistic": "top_findings_set_pct", "this corpus": 2.25, "IU-Xray reference": 1.4}])
    _write(tmp_path, "00_pixel_probe", [
        {"observation": "Cardiomegaly", "n_pos_train": 9, "n_pos_test": 4, "auroc": 0.91},
        {"observation": "Fracture", "n_pos_train": 9, "n_pos_test": 2, "auroc": 0.52},
        {"observation": "Edema", "n_pos_train": 1, "n_pos_test": 0, "auroc": None}])
    _write(tmp_path, "00_labeler_sentences_heldout", [
        {"observation": "Edema", "recall_pos": 1.0, "recall_neg": 1.0, "recall_unc": None, "accuracy": 1.0},
        {"observation": "Fracture", "recall_pos": 0.5, "recall_neg": 1.0, "recall_unc": None, "accuracy": 0.9},
        {"observation": "micro (all)", "recall_pos": 0.8, "recall_neg": 1.0, "recall_unc": 0.6, "accuracy": 0.95,
         "precision_pos": 1.0, "precision_neg": 0.8, "precision_unc": 1.0}])
    text = "\n".join(data_conclusion(tmp_path))
    assert "train 1,200" in text and "600 no finding, 400 single, 200 multi" in text
    assert "ratio 0.46 here, 0.39 in IU-Xray" in text and "812 here, 1,321" in text and "2.25% of reports" in text
    assert "AUROC for 2 of 3 observations, from 0.52 (Fracture) to 0.91 (Cardiomegaly)" in text
    assert "2 to 4 positive test studies" in text
    assert "mean accuracy 0.950 over 2 observations" in text  # the pooled row is not an observation
    assert "positive 0.80, negative 1.00, uncertain 0.60" in text and "errors on 1 (Fracture)" in text
    assert "00_labeler_synthetic_test: not written" in text
    assert "better" not in text and "higher" not in text
    first = data_conclusion(tmp_path)[0]  # the answer to the notebook's question opens the conclusion
    assert first.startswith("Answer: the model sees synthetic radiographs in which 1 of 2 probed observations")
    # the answer is recall / F1 per reading class (pooled), never the accuracy that "not mentioned" inflates
    assert ("read by the labeler on hand-written held-out sentences, have recall / F1 positive 0.80 / 0.89, negative "
            "1.00 / 0.89, uncertain 0.60 / 0.75 (pooled over the observations") in first
    assert "accuracy" not in first and "%" not in first


def test_a_small_share_keeps_its_digit(tmp_path):
    """One report in two thousand (0.05 %) reads "0.05%", as the table shows it, not "0.1%" (one decimal rounded
    the default run's 0.050 up to 0.1)."""
    _write(tmp_path, "00_report_language", [
        {"statistic": "unique_sentence_ratio", "this corpus": 0.355, "IU-Xray reference": 0.39},
        {"statistic": "distinct_words_findings", "this corpus": 806, "IU-Xray reference": 1321},
        {"statistic": "top_findings_set_pct", "this corpus": 0.05, "IU-Xray reference": 1.4}])
    text = "\n".join(data_conclusion(tmp_path))
    assert "covers 0.05% of reports here, 1.4% in IU-Xray" in text and "0.1%" not in text


def test_data_conclusion_on_an_empty_folder_names_what_is_missing(tmp_path):
    lines = data_conclusion(tmp_path)
    assert len(lines) == 6 and all("not written" in line for line in lines)
