"""Unit tests for sdrlib.metrics pieces, each checked against the library it wraps.

BLEU / chrF++ against sacrebleu, ROUGE against rouge-score, METEOR against nltk,
clinical F1 against scikit-learn, bootstrap corpus values against the libraries
on materialised resamples. No BERTScore model here (see test_metrics_suite.py).
"""

from __future__ import annotations

import gzip
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sdrlib.metrics.base import mean_result
from sdrlib.metrics.clinical import (FIVE, clinical_results, f1_counts, label_matrix, per_sample_f1,
                                     strata_from_labels)
from sdrlib.vocabulary import CHEXPERT_14
from sdrlib.metrics.nlg import nlg_results
from sdrlib.metrics.significance import bootstrap_weights, paired_bootstrap

PREDS = ["The heart is enlarged. There is a small left pleural effusion.",
         "Lungs are clear. No pneumothorax.",
         "Mild pulmonary edema with bilateral effusions.",
         "",
         "Right lower lobe consolidation, concerning for pneumonia."]
REFS = ["The heart is enlarged. There is a small left pleural effusion.",
        "The lungs are clear without focal consolidation. No pneumothorax.",
        "Moderate pulmonary edema. Small bilateral pleural effusions.",
        "Stable cardiomegaly.",
        "Left upper lobe mass."]


@pytest.fixture()
def no_network(monkeypatch):
    """Refuse every socket connection (evaluate hides Hub calls) and force HF offline."""
    import socket

    def refuse(*args, **kwargs):
        raise OSError("network access refused in tests")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")


def by_name(results):
    return {r.name: r for r in results}


# --------------------------------------------------------------------------- package hygiene
def test_import_is_light():
    code = ("import sys, sdrlib.metrics as m; from sdrlib.metrics import evaluate_reports, paired_bootstrap;"
            "print(sorted(x for x in ('torch', 'bert_score', 'evaluate', 'transformers') if x in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2], check=True)
    assert out.stdout.strip() == "[]"


def test_local_modules_load_offline_and_compute(no_network):
    from sdrlib.metrics.nlg import MODULE_NAMES, MODULES_DIR, load_module

    for name in MODULE_NAMES:
        assert (MODULES_DIR / name / f"{name}.py").exists()
    load_module.cache_clear()
    r = load_module("sdr_rouge").compute(predictions=["a b"], references=["a b"])
    assert r["rouge1"] == [1.0]


# --------------------------------------------------------------------------- lexical metrics vs libraries
def test_bleu_matches_sacrebleu_sentence_and_corpus(no_network):
    from sacrebleu.metrics import BLEU

    res = by_name(nlg_results(PREDS, REFS, groups=["bleu"]))
    for n in range(1, 5):
        sent = BLEU(max_ngram_order=n, effective_order=True, lowercase=True)
        want = [sent.sentence_score(p, [r]).score / 100 for p, r in zip(PREDS, REFS)]
        np.testing.assert_allclose(res[f"bleu_s{n}"].sample, want, atol=1e-12)
        corp = BLEU(max_ngram_order=n, lowercase=True).corpus_score(PREDS, [REFS]).score / 100
        assert res[f"bleu_c{n}"].corpus == pytest.approx(corp, abs=1e-12)
        assert res[f"bleu_c{n}"].sample is None
    assert res["bleu_s4"].sample[0] == pytest.approx(1.0)  # identical pair
    assert res["bleu_s1"].sample[3] == 0.0  # empty prediction


def test_rouge_matches_rouge_score(no_network):
    from rouge_score import rouge_scorer

    res = by_name(nlg_results(PREDS, REFS, groups=["rouge"]))
    sc = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    for t in ("rouge1", "rouge2", "rougeL"):
        want = [sc.score(r, p)[t].fmeasure for p, r in zip(PREDS, REFS)]
        np.testing.assert_allclose(res[t].sample, want, atol=1e-12)
        assert res[t].corpus == pytest.approx(np.mean(want))
    assert res["rouge1"].sample[0] == 1.0 and res["rouge1"].sample[4] < 0.35


def test_chrf_matches_sacrebleu(no_network):
    from sacrebleu.metrics import CHRF

    r = by_name(nlg_results(PREDS, REFS, groups=["chrf"]))["chrf++"]
    m = CHRF(word_order=2)
    np.testing.assert_allclose(r.sample, [m.sentence_score(p, [q]).score / 100 for p, q in zip(PREDS, REFS)])
    assert r.corpus == pytest.approx(m.corpus_score(PREDS, [REFS]).score / 100)


def test_undefined_references_get_nan_and_no_weight(no_network):
    from sacrebleu.metrics import BLEU

    defined = np.array([True, True, False, True, True])
    res = by_name(nlg_results(PREDS, REFS, groups=["bleu", "rouge"], defined=defined))
    assert np.isnan(res["rouge1"].sample[2]) and np.isnan(res["bleu_s1"].sample[2])
    keep = [i for i in range(5) if defined[i]]
    want = BLEU(max_ngram_order=4, lowercase=True).corpus_score([PREDS[i] for i in keep],
                                                                [[REFS[i] for i in keep]]).score / 100
    assert res["bleu_c4"].corpus == pytest.approx(want)
    assert res["rouge1"].corpus == pytest.approx(np.nanmean(res["rouge1"].sample))


# --------------------------------------------------------------------------- METEOR and WordNet
def test_meteor_without_wordnet_is_labelled_exact_stem(no_network):
    from nltk.translate.meteor_score import meteor_score

    r = nlg_results(["the heart is large"], ["the heart is big"], groups=["meteor"], wordnet=None)[0]
    assert r.name == "meteor_exact_stem"

    class NoSyn:
        def synsets(self, *a, **k):
            return []

    want = meteor_score([["the", "heart", "is", "big"]], ["the", "heart", "is", "large"], wordnet=NoSyn())
    assert r.sample[0] == pytest.approx(want)


def test_wordnet_reader_and_meteor_synonyms(no_network):
    from sdrlib.metrics.wordnet import LEXNAMES_30, load_wordnet

    wn = load_wordnet()
    if wn is None:
        pytest.skip("WordNet not installed (apt-get install --no-install-recommends wordnet-base)")
    assert wn.get_version() == "3.0"
    assert "large" in {lem.name() for s in wn.synsets("big") for lem in s.lemmas()}
    assert wn.synsets("car")[0].lexname() == "noun.artifact"
    man = Path("/usr/share/man/man5/lexnames.5WN.gz")
    if man.exists():  # our built-in lexnames list equals the installed manual's table
        rows = re.findall(r"^(\d\d)\s+(\S+)", gzip.open(man, "rt").read(), flags=re.M)
        assert [name for _, name in rows] == LEXNAMES_30
    hyp, ref = ["the chest is clear"], ["the thorax is clear"]
    with_wn = nlg_results(hyp, ref, groups=["meteor"], wordnet=wn)[0]
    without = nlg_results(hyp, ref, groups=["meteor"], wordnet=None)[0]
    assert with_wn.name == "meteor"
    assert with_wn.sample[0] == pytest.approx(1 - 0.5 * (1 / 4) ** 3)  # chest ~ thorax via WordNet
    assert without.sample[0] == pytest.approx(0.75 * (1 - 0.5 * (2 / 3) ** 3))  # 3/4 matched, 2 chunks
    same = nlg_results(["the heart is big"], ["the heart is big"], groups=["meteor"], wordnet=wn)[0]
    assert same.sample[0] == pytest.approx(1 - 0.5 * (1 / 4) ** 3)  # one chunk of 4 matches


def test_wordnet_explicit_bad_path_is_an_error(tmp_path):
    from sdrlib.metrics.wordnet import load_wordnet

    with pytest.raises(FileNotFoundError, match="WordNet"):
        load_wordnet(tmp_path)


# --------------------------------------------------------------------------- clinical F1 vs scikit-learn
def _random_labels(rng, n):
    out = []
    for _ in range(n):
        d = {}
        for o in CHEXPERT_14:
            u = rng.random()
            if u < 0.15:
                d[o] = 1
            elif u < 0.22:
                d[o] = -1
            elif u < 0.4:
                d[o] = 0
        out.append(d)
    return out


@pytest.mark.parametrize("uncertain", ["positive", "negative"])
def test_clinical_f1_matches_sklearn(uncertain):
    from sklearn.metrics import f1_score

    rng = np.random.default_rng(0)
    pl, rl = _random_labels(rng, 60), _random_labels(rng, 60)
    P = label_matrix(pl, CHEXPERT_14, uncertain=uncertain)
    R = label_matrix(rl, CHEXPERT_14, uncertain=uncertain)
    got = f1_counts(P, R, CHEXPERT_14)
    assert got["macro14"] == pytest.approx(f1_score(R, P, average="macro", zero_division=0))
    assert got["micro14"] == pytest.approx(f1_score(R, P, average="micro", zero_division=0))
    cols = [CHEXPERT_14.index(o) for o in FIVE]
    assert got["macro5"] == pytest.approx(f1_score(R[:, cols], P[:, cols], average="macro", zero_division=0))
    assert got["micro5"] == pytest.approx(f1_score(R[:, cols], P[:, cols], average="micro", zero_division=0))
    per = f1_score(R, P, average=None, zero_division=0)
    np.testing.assert_allclose([got["per_observation"][o] for o in CHEXPERT_14], per)
    res = by_name(clinical_results(pl, rl, "test", uncertain=uncertain))
    assert res["clinical_f1_macro14@test"].corpus == pytest.approx(got["macro14"])
    assert res["clinical_f1[Edema]@test"].corpus == pytest.approx(got["per_observation"]["Edema"])


def test_uncertain_convention_and_hand_values():
    P = label_matrix([{"Edema": 1}, {}], ["Edema", "Pneumonia"])
    R = label_matrix([{"Edema": -1}, {"Edema": 0, "Pneumonia": -1}], ["Edema", "Pneumonia"])
    assert P.tolist() == [[1, 0], [0, 0]] and R.tolist() == [[1, 0], [0, 1]]
    np.testing.assert_allclose(per_sample_f1(P, R), [1.0, 0.0])
    assert per_sample_f1(np.zeros((1, 2)), np.zeros((1, 2)))[0] == 1.0  # both empty: agree
    strict = label_matrix([{"Edema": -1}], ["Edema"], uncertain="negative")
    assert strict.tolist() == [[0]]


def test_label_input_errors_name_the_sample():
    with pytest.raises(ValueError, match=r"labels\[1\].*'Edemaa'"):
        label_matrix([{}, {"Edemaa": 1}])
    with pytest.raises(ValueError, match=r"labels\[0\].*value 2"):
        label_matrix([{"Edema": 2}])


def test_strata_from_reference_labels():
    labels = [{"No Finding": 1}, {"Support Devices": 1}, {"Edema": -1, "Support Devices": 1},
              {"Edema": 1, "Pleural Effusion": 1}, {"Edema": 0, "Pneumonia": 0}]
    assert strata_from_labels(labels).tolist() == ["no_finding", "no_finding", "single", "multi", "no_finding"]
    assert strata_from_labels(labels, uncertain="negative")[2] == "no_finding"


# --------------------------------------------------------------------------- paired bootstrap
def test_bootstrap_identical_systems_and_clear_winner():
    rng = np.random.default_rng(1)
    v = rng.random(80)
    a, b = mean_result("m", "", v), mean_result("m", "", v.copy())
    r = paired_bootstrap(a, b, n_resamples=300, seed=0)
    assert r["diff"] == 0 and r["p_value"] == 1.0 and r["ci_low"] == r["ci_high"] == 0
    better = mean_result("m", "", np.clip(v + 0.2, 0, 1))
    r = paired_bootstrap(better, a, n_resamples=300, seed=0)
    assert r["diff"] > 0.1 and r["ci_low"] > 0 and r["p_value"] < 0.01
    again = paired_bootstrap(better, a, n_resamples=300, seed=0)
    assert again == r  # seeded


def test_bootstrap_noise_is_not_significant():
    rng = np.random.default_rng(2)
    a = mean_result("m", "", rng.random(200))
    b = mean_result("m", "", rng.random(200))
    r = paired_bootstrap(a, b, n_resamples=500, seed=3)
    assert r["ci_low"] < r["diff"] < r["ci_high"]
    assert r["p_value"] > 0.05 or r["ci_low"] * r["ci_high"] > 0  # p and CI tell the same story


def test_resampled_corpus_values_equal_the_libraries_on_the_resample(no_network):
    """A bootstrap weight vector must give what sacrebleu / sklearn give on the materialised resample."""
    from sacrebleu.metrics import BLEU, CHRF
    from sklearn.metrics import f1_score

    w = bootstrap_weights(len(PREDS), 3, seed=5)
    res = by_name(nlg_results(PREDS, REFS, groups=["bleu", "chrf", "rouge"]))
    rng = np.random.default_rng(4)
    pl, rl = _random_labels(rng, len(PREDS)), _random_labels(rng, len(PREDS))
    clin = by_name(clinical_results(pl, rl, "t"))
    for row in w:
        idx = np.repeat(np.arange(len(PREDS)), row.astype(int))
        p, r = [PREDS[i] for i in idx], [REFS[i] for i in idx]
        assert res["bleu_c4"].value_for(row)[0] == pytest.approx(
            BLEU(lowercase=True).corpus_score(p, [r]).score / 100)
        assert res["chrf++"].value_for(row)[0] == pytest.approx(CHRF(word_order=2).corpus_score(p, [r]).score / 100)
        assert res["rouge1"].value_for(row)[0] == pytest.approx(res["rouge1"].sample[idx].mean())
        P, R = label_matrix([pl[i] for i in idx]), label_matrix([rl[i] for i in idx])
        assert clin["clinical_f1_macro14@t"].value_for(row)[0] == pytest.approx(
            f1_score(R, P, average="macro", zero_division=0))


def test_bootstrap_rejects_mismatched_systems():
    with pytest.raises(ValueError, match="samples"):
        paired_bootstrap(mean_result("m", "", np.ones(3)), mean_result("m", "", np.ones(4)))
    with pytest.raises(ValueError, match="at least one"):
        bootstrap_weights(0, 10, 0)
