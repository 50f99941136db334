"""Tests for sdrlib.experiments.sft_start: the image-blind guesser, the per-label table, the summary, the supervised
ceiling and the command (a tiny smoke SFT end to end, validation studies only)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from sdrlib.experiments.sft_start import (MARGIN, OBSERVATIONS, StartInputError, findings_of, guesser_f1, label_table,
                                          label_targets, main, probe_ceiling, start_summary)
from sdrlib.metrics.clinical import f1_counts, label_matrix
from training_helpers import TINY_POLICY


def test_guesser_f1_is_the_f1_of_its_expected_counts_and_of_a_simulated_blind_guesser():
    assert guesser_f1(0.2, 0.2) == pytest.approx(0.2)
    assert guesser_f1(0.0, 0.0) == 0.0  # neither positive: F1 0, as f1_counts gives
    assert guesser_f1(0.5, 0.0) == 0.0
    assert guesser_f1(0.1, 0.3) == pytest.approx(2 * 0.1 * 0.3 / 0.4)
    np.testing.assert_allclose(guesser_f1([0.1, 0.4], [0.3, 0.4]), [0.15, 0.4])
    rng = np.random.default_rng(0)
    n, p, q = 200_000, 0.12, 0.3
    ref, guess = rng.random(n) < p, rng.random(n) < q  # independent of each other: image-blind
    tp, fp, fn = (ref & guess).sum(), (~ref & guess).sum(), (ref & ~guess).sum()
    assert 2 * tp / (2 * tp + fp + fn) == pytest.approx(float(guesser_f1(p, q)), abs=0.005)
    for bad in ((1.2, 0.1), (0.1, -0.1), (math.nan, 0.1)):
        with pytest.raises(StartInputError, match=r"\[0, 1\]"):
            guesser_f1(*bad)


def _refs():
    # 10 references: Edema in 4, Cardiomegaly in 2, Fracture in none, Support Devices uncertain in 1
    refs = [{"Edema": 1}] * 4 + [{"Cardiomegaly": 1, "Edema": 0}] * 2 + [{"Support Devices": -1}] + [{}] * 3
    return refs


def test_label_table_counts_precision_recall_f1_and_the_guesser_by_hand():
    refs = _refs()
    # policy: Edema on 2 of its 4 and on 2 normals (tp 2, fp 2, fn 2); Cardiomegaly on every report
    ec, c = {"Edema": 1, "Cardiomegaly": 1}, {"Cardiomegaly": 1}
    preds = [ec] * 2 + [c] * 4 + [c] + [ec] * 2 + [c]
    tab = label_table(preds, refs).set_index("observation")
    assert list(tab.index) == list(OBSERVATIONS) + ["No Finding"]
    e = tab.loc["Edema"]
    assert (e.n_ref_pos, e.prevalence, e.rate) == (4, 0.4, 0.4)
    assert (e.precision, e.recall, e.f1) == pytest.approx((0.5, 0.5, 0.5))
    assert e.guesser_f1 == pytest.approx(0.4) and e.margin == pytest.approx(0.1) and bool(e.clears)
    c = tab.loc["Cardiomegaly"]  # always positive: recall 1, precision = prevalence: F1 equals the guesser's
    assert (c.rate, c.precision, c.recall) == pytest.approx((1.0, 0.2, 1.0))
    assert c.f1 == pytest.approx(c.guesser_f1) and not bool(c.clears)
    f = tab.loc["Fracture"]  # no positive anywhere: not judged
    assert f.n_ref_pos == 0 and pd.isna(f.clears) and math.isnan(f.recall) and math.isnan(f.precision)
    assert pd.isna(tab.loc["No Finding", "clears"])  # shown, never judged
    sd = tab.loc["Support Devices"]  # uncertain reference counts positive (CXB-14's convention)
    assert sd.n_ref_pos == 1 and sd.f1 == 0.0 and not bool(sd.clears)
    # the F1 column is the project's per-observation F1
    ref_f1 = f1_counts(label_matrix(preds), label_matrix(refs))["per_observation"]
    assert all(tab.loc[o, "f1"] == pytest.approx(ref_f1[o]) for o in tab.index)


def test_summary_counts_pathologies_without_support_devices_and_the_labels_clearing_the_guesser():
    refs = _refs()
    summ = start_summary(refs, refs)  # the references themselves: every judged label clears
    assert summ["micro14"] == pytest.approx(1.0)
    assert summ["judged"] == 3 and summ["clear_guesser"] == 3  # Edema, Cardiomegaly, Support Devices
    assert summ["pathologies_reference"] == pytest.approx(0.6)  # 6 pathologies over 10; Support Devices not one
    assert summ["pathologies_ratio"] == pytest.approx(1.0)
    assert summ["normal_share_reference"] == pytest.approx(0.4)
    assert summ["observations_present"] == 3  # Edema, Cardiomegaly, Support Devices
    blind = start_summary([{}] * 10, refs)
    assert blind["clear_guesser"] == 0 and blind["pathologies_generated"] == 0.0
    assert blind["normal_share_generated"] == 1.0 and blind["micro14"] == 0.0


def test_a_policy_that_ignores_the_image_does_not_clear_the_guesser_and_one_that_reads_it_does():
    rng = np.random.default_rng(1)
    n = 4000
    refs = [{o: 1 for o in OBSERVATIONS[:6] if rng.random() < 0.15} for _ in range(n)]
    blind = [refs[j] for j in rng.permutation(n)]  # right label rates, wrong studies
    reads = [{o: 1 for o in d if rng.random() < 0.8} for d in refs]  # 80 % recall, no false positive
    assert start_summary(blind, refs)["clear_guesser"] == 0
    assert start_summary(reads, refs)["clear_guesser"] == 6
    tab = label_table(blind, refs)
    judged = tab[tab.clears.notna()]
    assert (judged.margin.abs() < MARGIN).all()


def test_draws_pool_their_counts_and_a_wrong_count_is_refused():
    refs = _refs()
    one = label_table(refs, refs)
    two = label_table(refs + [{}] * 10, refs)  # draw 2 writes all-normal reports
    e1, e2 = one.set_index("observation").loc["Edema"], two.set_index("observation").loc["Edema"]
    assert e2.n_ref_pos == e1.n_ref_pos == 4  # per draw
    assert (e2.rate, e2.recall, e2.precision) == pytest.approx((0.2, 0.5, 1.0))
    with pytest.raises(StartInputError, match="11 generated label dicts for 10 references"):
        label_table(refs + [{}], refs)
    with pytest.raises(StartInputError, match="0 generated"):
        start_summary([], refs)


def test_findings_of_reads_the_template_and_gives_empty_text_off_it():
    assert findings_of(["<think> No effusion. </think> <answer> Normal. </answer>", "no template"]) == [
        "No effusion.", ""]


def test_probe_ceiling_reads_a_linear_label_and_not_noise_and_skips_rare_labels():
    rng = np.random.default_rng(0)
    n, d = 600, 20
    x = rng.standard_normal((n, d))
    y = np.stack([(x[:, 0] + 0.3 * rng.standard_normal(n) > 1).astype(int),  # linear in feature 0
                  (rng.random(n) < 0.3).astype(int),  # noise
                  np.r_[np.ones(3, int), np.zeros(n - 3, int)]], axis=1)  # 3 positives: too rare to fit
    ceil = probe_ceiling(x[:400], y[:400], x[400:], y[400:], ["a", "noise", "rare"]).set_index("observation")
    assert ceil.loc["a", "auroc"] > 0.95 and ceil.loc["a", "f1"] > 0.7
    assert 0.35 < ceil.loc["noise", "auroc"] < 0.65
    assert math.isnan(ceil.loc["rare", "auroc"]) and math.isnan(ceil.loc["rare", "f1"])
    assert ceil.loc["a", "n_pos_fit"] == int(y[:400, 0].sum())
    with pytest.raises(StartInputError, match="one width"):
        probe_ceiling(x[:10], y[:10], x[:10, :3], y[:10], ["a", "noise", "rare"])
    with pytest.raises(StartInputError, match=r"\(n, 2\)"):
        probe_ceiling(x, y, x, y, ["a", "noise"])
    with pytest.raises(StartInputError, match="0 / 1"):
        probe_ceiling(x, y * 2, x, y, ["a", "noise", "rare"])
    bad = x.copy()
    bad[0, 0] = np.nan
    with pytest.raises(StartInputError, match="NaN"):
        probe_ceiling(bad, y, x, y, ["a", "noise", "rare"])


def test_label_targets_count_uncertain_as_positive():
    got = label_targets([{"Edema": -1, "No Finding": 0}, {"Edema": 0}, {}], ["Edema"])
    np.testing.assert_array_equal(got, [[1], [0], [0]])
    with pytest.raises(StartInputError, match="'Oedema'"):
        label_targets([{}], ["Oedema"])


@pytest.fixture(scope="module")
def start_run(tmp_path_factory):
    import torch

    root = tmp_path_factory.mktemp("sdr")
    mp = pytest.MonkeyPatch()
    mp.setenv("SDR_ROOT", str(root))
    torch.set_num_threads(1)
    sets = [f"{k}={v}" for k, v in {**TINY_POLICY, "sft.max_steps": 2, "sft.batch_size": 4, "data.n_train": 24,
                                     "data.n_val": 12, "data.image_size": 32}.items()]
    out = root / "evidence"
    argv = ["--profile", "smoke", "--name", "tiny", "--out", str(out), "--seeds", "0", "1", "--ceiling", "pixels"]
    for s in sets:
        argv += ["--set", s]
    rc = main(argv)
    yield rc, out, argv
    mp.undo()


def test_command_writes_the_validation_table_with_the_ceiling_and_the_summary(start_run):
    rc, out, _ = start_run
    assert rc == 0
    tab = pd.read_csv(out / "tiny.csv")
    assert list(tab.observation) == list(OBSERVATIONS) + ["No Finding"]
    assert {"f1", "guesser_f1", "precision", "recall", "margin", "ceiling_auroc_pixels", "ceiling_f1_pixels"} <= set(
        tab.columns)
    info = json.loads((out / "tiny.json").read_text())
    assert info["split"] == "val" and info["n_studies"] == 12 and info["seeds"] == [0, 1]
    assert info["summary"]["n_reports"] == 24  # 12 validation studies x 2 draws
    assert set(info["per_seed"]) == {"0", "1"} and "clear_guesser" in info["per_seed"]["0"]
    pooled = info["summary"]["pathologies_generated"]
    one = [v["pathologies_generated"] for v in info["per_seed"].values()]
    assert pooled == pytest.approx(np.mean(one))  # the pooled mean is the mean of the draws' means (equal sizes)
    assert info["overrides"]["sft.max_steps"] == 2 and info["provenance"]["profile"] == "smoke"
    assert info["sft_seed"] == 0  # the profile's seed unless --sft-seed says otherwise


def test_command_refuses_to_overwrite_its_tables_without_force(start_run, capsys):
    _, out, argv = start_run
    before = (out / "tiny.csv").read_bytes()
    assert main(argv) == 2
    assert "--force" in capsys.readouterr().err
    assert (out / "tiny.csv").read_bytes() == before
    assert main(["--profile", "smoke", "--name", "x", "--set", "nokey"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:  # argparse's one line, as for its own errors
        main(["--profile", "smoke", "--name", "x", "--sft-seed", "-1"])
    assert stop.value.code == 2
    assert "--sft-seed" in capsys.readouterr().err


def test_comparison_sets_written_starts_side_by_side_and_refuses_other_studies(start_run, tmp_path, capsys):
    from sdrlib.experiments.sft_start import SUMMARY_ROWS, comparison

    _, out, _ = start_run
    wide, summ = comparison(out, ["tiny", "tiny"])
    assert list(wide.observation) == list(OBSERVATIONS) + ["No Finding"]
    assert {"tiny: f1", "tiny: guesser_f1", "ceiling_auroc_pixels"} <= set(wide.columns)
    assert list(summ.index) == list(SUMMARY_ROWS)
    assert main(["--compare", "tiny", "--out", str(out)]) == 0
    assert "tiny: guesser_f1" in capsys.readouterr().out
    with pytest.raises(StartInputError, match="--name other"):
        comparison(out, ["tiny", "other"])
    t = pd.read_csv(out / "tiny.csv")
    t.loc[0, "n_ref_pos"] += 1
    t.to_csv(tmp_path / "moved.csv", index=False)
    (tmp_path / "moved.json").write_text((out / "tiny.json").read_text())
    (tmp_path / "tiny.csv").write_text((out / "tiny.csv").read_text())
    (tmp_path / "tiny.json").write_text((out / "tiny.json").read_text())
    with pytest.raises(StartInputError, match="different studies"):
        comparison(tmp_path, ["tiny", "moved"])
    with pytest.raises(SystemExit) as e:  # neither --name nor --compare: argparse's one-line usage error
        main(["--profile", "smoke"])
    assert e.value.code == 2
    assert "--name is required" in capsys.readouterr().err


def test_draw_spread_tests_each_start_against_the_first_over_its_draws(tmp_path):
    from sdrlib.experiments.sft_start import SEED_KEYS, draw_spread

    def write(name, micro):
        per = {str(i): {k: (m if k == "micro14" else 0.5) for k in SEED_KEYS} for i, m in enumerate(micro)}
        (tmp_path / f"{name}.json").write_text(json.dumps({"per_seed": per}), encoding="utf-8")

    write("a", [0.40, 0.42, 0.41, 0.43])
    write("b", [0.50, 0.52, 0.51, 0.53])  # far above a's draws
    write("c", [0.41, 0.43, 0.40, 0.42])  # a's draws in another order
    t = draw_spread(tmp_path, ["a", "b", "c"]).set_index(["start", "value"])
    assert t.loc[("a", "micro14"), "mean"] == pytest.approx(0.415) and math.isnan(t.loc[("a", "micro14"), "p_vs_first"])
    assert t.loc[("b", "micro14"), "p_vs_first"] < 0.001 and t.loc[("c", "micro14"), "p_vs_first"] > 0.9
    assert math.isnan(t.loc[("b", "macro14"), "p_vs_first"])  # no spread in either: no test
    with pytest.raises(StartInputError, match="--name d"):
        draw_spread(tmp_path, ["a", "d"])
