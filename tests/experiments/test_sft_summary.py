"""sdrlib.experiments.sft_summary (notebook 03's logic)."""

import pandas as pd
import pytest

from sdrlib.experiments.sft_summary import NO_DIFFERENCE, comparison_sentence, report_variety, sft_conclusion


def test_report_variety_counts_the_modal_report():
    v = report_variety(["a", "b", "a", "a"])
    assert v == {"n": 4, "distinct": 2, "modal_count": 3, "modal_share": 0.75}
    with pytest.raises(ValueError):
        report_variety([])


def test_comparison_sentence_has_a_direction_only_when_the_interval_excludes_zero():
    row = dict(B="random_train", value_a=0.3, value_b=0.2, diff=0.1, ci_low=0.02, ci_high=0.2, p_value=0.01)
    assert comparison_sentence("SFT", row).startswith("SFT is above random_train (0.300 vs 0.200")
    assert comparison_sentence("SFT", pd.Series({**row, "diff": -0.1, "ci_low": -0.2, "ci_high": -0.01})
                               ).startswith("SFT is below")
    # the word given from the row's family (Holm over its table) wins over the row alone
    assert "no difference detected" in comparison_sentence("SFT", row, word="no difference detected")
    s = comparison_sentence("SFT", {**row, "ci_low": -0.01})
    assert NO_DIFFERENCE in s and "above" not in s


def test_sft_conclusion_from_result_files(tmp_path):
    assert sft_conclusion(tmp_path) == []
    sig = pd.DataFrame([
        dict(section="findings", metric="clinical_f1_micro14@labeler", value_a=0.0, value_b=0.23, diff=-0.23,
             ci_low=-0.45, ci_high=-0.08, p_value=0.02, B="random_train"),
        dict(section="findings", metric="clinical_f1_micro14@labeler", value_a=0.0, value_b=0.0, diff=0.0,
             ci_low=0.0, ci_high=0.0, p_value=1.0, B="SFT shuffled images"),
        dict(section="impression", metric="clinical_f1_micro14@labeler", value_a=0.5, value_b=0.0, diff=0.5,
             ci_low=0.4, ci_high=0.6, p_value=0.001, B="SFT shuffled images")])
    sig.to_csv(tmp_path / "sft_vs_baselines_significance.csv", index=False)
    pd.DataFrame([dict(A="another study's image", B="own image", value_a=6.461, value_b=6.4611, diff=-0.0001,
                       ci_low=-0.0006, ci_high=0.0003, p_value=0.63)]).to_csv(tmp_path / "sft_image_nll.csv", index=False)
    lines = sft_conclusion(tmp_path)
    assert len(lines) == 6
    assert lines[0].startswith("Answer: no evidence at this size that the SFT policy reads the image")  # answer first
    lines = lines[1:]
    assert "SFT is below random_train (0.000 vs 0.230" in lines[0]
    assert NO_DIFFERENCE in lines[1] and "no evidence" in lines[2]  # the impression row does not count
    assert NO_DIFFERENCE in lines[3] and "6.4610 vs 6.4611 nats" in lines[3] and "not make" in lines[4]
