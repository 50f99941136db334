"""Tests of the synthetic dataset (sdrlib.data.synthcxr) and sdrlib.data.load_split on it."""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from sdrlib.config import load_profile
from sdrlib.data import Record, load_split, records_to_frame, stratum
from sdrlib.data.synthcxr import (DEVICES, GENERATOR_VERSION, KINDS, Finding, dataset_dir, generate_dataset,
                                  generate_study, read_manifest, render_image)
from sdrlib.vocabulary import merge_labels
from sdrlib.clinical import label_report


def _hashes(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def studies():
    return [generate_study(0, "train", i, 48) for i in range(300)]


def test_same_seed_same_bytes_and_manifest(tmp_path):
    kw = dict(seed=3, n_train=10, n_val=3, n_test=3, image_size=48)
    m1 = generate_dataset(tmp_path / "a", **kw)
    m2 = generate_dataset(tmp_path / "b", **kw)
    h1, h2 = _hashes(tmp_path / "a"), _hashes(tmp_path / "b")
    assert h1 == h2 and m1 == m2
    assert len([k for k in h1 if k.endswith(".png")]) == 16
    assert {"train.parquet", "val.parquet", "test.parquet", "manifest.json"} <= set(h1)
    # the manifest records version, seed, sizes and the hash of every other file
    man = read_manifest(tmp_path / "a")
    assert man["generator_version"] == GENERATOR_VERSION and man["seed"] == 3
    assert man["sizes"] == {"train": 10, "val": 3, "test": 3} and man["image_size"] == 48
    assert man["files"] == {k: v for k, v in h1.items() if k != "manifest.json"}
    m3 = generate_dataset(tmp_path / "c", **{**kw, "seed": 4})
    assert m3["files"]["train.parquet"] != m1["files"]["train.parquet"]


def test_studies_are_independent_of_dataset_size():
    a = generate_study(0, "val", 5, 48)
    b = generate_study(0, "val", 5, 48)
    c = generate_study(0, "test", 5, 48)
    assert a.findings == b.findings and np.array_equal(a.image, b.image)
    assert a.study_id == "syn-val-00005" and c.study_id == "syn-test-00005"
    assert (a.findings, a.impression) != (c.findings, c.impression) or not np.array_equal(a.image, c.image)


def test_bad_arguments_raise_named_errors(tmp_path):
    with pytest.raises(ValueError, match="n_train"):
        generate_dataset(tmp_path / "x", seed=0, n_train=-1, n_val=1, n_test=1)
    with pytest.raises(ValueError, match="image size"):
        render_image([], [], np.random.default_rng(0), size=8)
    with pytest.raises(ValueError, match="split"):
        generate_study(0, "dev", 0)
    assert not (tmp_path / "x").exists()


def test_report_shape_and_labels(studies):
    from sdrlib.reports import split_sentences

    n_f = [len(split_sentences(s.findings)) for s in studies]
    n_i = [len(split_sentences(s.impression)) for s in studies]
    assert min(n_f) >= 3 and max(n_f) <= 8  # 3-7 sentences, +1 optional neutral remark
    assert min(n_i) >= 1 and max(n_i) <= 3
    for s in studies:
        assert s.labels == merge_labels(s.labels_findings, s.labels_impression)
    # labels are what a CheXpert reader gets from the text: the offline labeler agrees on >= 95%
    agree = np.mean([label_report(s.findings + " " + s.impression) == s.labels for s in studies])
    assert agree >= 0.95
    # hedging exists, and negated pertinent findings exist
    values = Counter(v for s in studies for k, v in s.labels.items() if k != "No Finding")
    assert values[-1] > 0 and values[0] > 0 and values[1] > 0


def test_strata_and_prevalence_resemble_real_cohorts(studies):
    strata = Counter(stratum(s.labels) for s in studies)
    frac = {k: v / len(studies) for k, v in strata.items()}
    assert 0.35 <= frac["no_finding"] <= 0.65
    assert frac["single"] >= 0.12 and frac["multi"] >= 0.12
    positives = Counter(k for s in studies for k, v in s.labels.items() if v == 1 and k != "No Finding")
    assert len(positives) >= 11  # nearly every observation occurs in 300 studies


def test_text_varies_for_the_same_finding(studies):
    normal_first = {s.findings.split(". ")[0] for s in studies if stratum(s.labels) == "no_finding"}
    assert len(normal_first) >= 8  # random sentence order and paraphrases
    sentences = [t for s in studies for t in s.findings.split(". ")]
    ratio = len(set(sentences)) / len(sentences)
    assert 0.03 < ratio < 0.6  # bounded vocabulary, but not one fixed template


def _mean_region(findings, devices, region, seeds=range(6), size=64):
    """Mean pixel value in a (row0, row1, col0, col1) fraction box, over several nuisance seeds."""
    r0, r1, c0, c1 = (int(v * size) for v in region)
    vals = [render_image(findings, devices, np.random.default_rng(s), size)[r0:r1, c0:c1].mean() for s in seeds]
    return float(np.mean(vals))


@pytest.mark.parametrize("findings, devices, region, sign", [
    ([Finding("cardiomegaly", severity="severe")], [], (0.55, 0.70, 0.68, 0.76), +1),  # left heart border moves out
    ([Finding("effusion", side="right", severity="large")], [], (0.50, 0.70, 0.12, 0.35), +1),
    ([Finding("pneumothorax", side="left", severity="large")], [], (0.25, 0.55, 0.78, 0.88), -1),
    ([Finding("consolidation", location="left lower lobe")], [], (0.58, 0.70, 0.66, 0.80), +1),
    ([Finding("edema", side="bilateral", severity="severe")], [], (0.40, 0.60, 0.25, 0.38), +1),
    ([], ["ett"], (0.02, 0.28, 0.47, 0.53), +1),
    ([], ["pacer"], (0.15, 0.22, 0.70, 0.82), +1),
])
def test_images_carry_the_findings(findings, devices, region, sign):
    with_f = _mean_region(findings, devices, region)
    without = _mean_region([], [], region)
    assert sign * (with_f - without) > 4.0, (with_f, without)


_EFF = Finding("effusion", side="bilateral", severity="moderate")


@pytest.mark.parametrize("findings, base", [
    ([Finding("opacity", location="right upper lobe")], []),
    ([Finding("nodule", location="right upper lobe", size_cm=0.6, detail="nodule")], []),  # the smallest nodule
    ([Finding("nodule", location="lingula", size_cm=2.2, detail="nodule")], []),  # over the heart: still denser
    ([Finding("fracture", side="left", location="7th", detail="acute")], []),
    ([Finding("fracture", side="right", location="5th", detail="healed")], []),
    ([Finding("atelectasis", side="right", location="right base", detail="linear", hedged=True)], []),
    ([_EFF, Finding("atelectasis", side="left", location="left base", detail="compressive")], [_EFF]),
])
def test_findings_a_radiologist_sees_span_several_pixels_at_96_px(findings, base):
    """Drawn and not drawn under one nuisance: at least 15 pixels change by 10 grey levels or more, and the finding
    adds density (a compressive atelectasis shows above the fluid; before SynthCXR 2.3 it lay under it, unseen)."""
    for seed in range(3):
        d = (render_image(findings, [], np.random.default_rng(seed)).astype(int)
             - render_image(base, [], np.random.default_rng(seed)).astype(int))
        assert (d >= 10).sum() >= 15 and d[d > 0].sum() > 3 * -d[d < 0].sum(), (seed, (d >= 10).sum())


def test_fractures_are_drawn_on_their_rib_and_hedged_atelectasis_as_a_patchy_opacity():
    def rows(f):
        d = (render_image([f], [], np.random.default_rng(0)).astype(int)
             - render_image([], [], np.random.default_rng(0)).astype(int))
        return np.nonzero(d >= 10)[0].mean()

    assert rows(Finding("fracture", side="right", location="9th", detail="healed")) > 20 + rows(
        Finding("fracture", side="right", location="4th", detail="healed"))  # a 9th-rib fracture was drawn on the 4th
    at = dict(side="right", location="right base", detail="linear")
    stated, hedged = (render_image([Finding("atelectasis", hedged=h, **at)], [], np.random.default_rng(0))
                      for h in (False, True))
    assert np.abs(stated.astype(int) - hedged.astype(int)).max() >= 10


def test_image_is_grayscale_uint8_of_requested_size():
    img = render_image([Finding("nodule", location="right upper lobe", size_cm=1.5)], ["cvc"],
                       np.random.default_rng(1), size=80)
    assert img.shape == (80, 80) and img.dtype == np.uint8 and img.std() > 10


def test_load_split_generates_on_demand_and_regenerates_on_config_change(sdr_root):
    over = {"data.n_train": 6, "data.n_val": 2, "data.n_test": 3, "data.image_size": 40}
    cfg = load_profile("smoke", over)
    train = load_split(cfg, "train")
    assert len(train) == 6 and all(isinstance(r, Record) for r in train)
    r = train[0]
    assert r.split == "train" and r.findings and r.impression and r.labels is not None
    with Image.open(r.image_paths[0]) as im:
        assert im.size == (40, 40) and im.mode == "L"
    folder = dataset_dir(cfg)
    assert str(folder).startswith(str(sdr_root))
    stamp = (folder / "manifest.json").stat().st_mtime_ns
    test, rep = load_split(cfg, "test", with_report=True)
    assert len(test) == 3 and rep.n_loaded == 3 and rep.n_skipped == 0
    assert (folder / "manifest.json").stat().st_mtime_ns == stamp  # reused, not regenerated
    # a different size in the profile -> regenerated
    cfg2 = load_profile("smoke", {**over, "data.n_test": 4})
    assert len(load_split(cfg2, "test")) == 4
    assert json.loads((folder / "manifest.json").read_text())["sizes"]["test"] == 4
    # a damaged Parquet file -> regenerated
    (folder / "val.parquet").write_bytes(b"garbage")
    assert len(load_split(cfg2, "val")) == 2
    with pytest.raises(ValueError, match="split"):
        load_split(cfg2, "validation")
    df = records_to_frame(train)
    assert len(df) == 6 and {"stratum", "Cardiomegaly", "findings"} <= set(df.columns)
    assert not any(p.name.startswith(".") for p in folder.parent.iterdir())  # no temp folders left
    assert os.path.isabs(r.image_paths[0])


# --------------------------------------------------------------------------- report language (issue 11)
def _reports(seed, n, split="train"):
    from sdrlib.data.synthcxr import generate_report

    return [generate_report(seed, split, i) for i in range(n)]


def test_generate_report_equals_generate_study_without_the_image():
    from sdrlib.data.synthcxr import generate_report

    for i in (0, 7, 19, 42):
        a, b = generate_study(0, "train", i, 32), generate_report(0, "train", i)
        assert (a.findings, a.impression, a.labels, a.truth, a.devices) == (
            b.findings, b.impression, b.labels, b.truth, b.devices)
        assert b.image.shape == (0, 0)


def test_same_seed_same_corpus_and_other_seed_other_corpus():
    a, b, c = _reports(5, 60), _reports(5, 60), _reports(6, 60)
    assert [(s.findings, s.impression, s.labels) for s in a] == [(s.findings, s.impression, s.labels) for s in b]
    assert [s.findings for s in a] != [s.findings for s in c]


def test_write_report_draws_one_number_so_images_do_not_depend_on_the_grammar():
    from sdrlib.data.synthcxr import write_report

    for findings, devices in (([], []), ([Finding("effusion", side="left", severity="small")], ["ett", "cvc"]),
                              ([Finding("cardiomegaly", severity="severe"), Finding("edema", side="bilateral",
                                                                                    severity="moderate")], [])):
        r1, r2 = np.random.default_rng(3), np.random.default_rng(3)
        write_report(findings, devices, r1)
        r2.integers(1 << 62)
        assert r1.bit_generator.state == r2.bit_generator.state


def test_report_language_statistics_reach_the_targets():
    # the real targets (sdrlib.data.stats.LANGUAGE_TARGETS) on the cpu profile's training split:
    # its seed and size, texts only (generate_report, about 0.5 s for 2,000 reports)
    from sdrlib.data.stats import language_stats

    cfg = load_profile("cpu")
    st = language_stats(_reports(cfg.seed, cfg.data.n_train))
    assert cfg.data.n_train == 2000
    assert st["unique_sentence_ratio"] >= 0.30
    assert st["distinct_words"] >= 1000
    assert 6.0 <= st["words_per_sentence"] <= 8.0
    assert 4.0 <= st["findings_sentences"] <= 5.0 and 1.0 <= st["impression_sentences"] <= 2.0
    assert st["top_findings_set_pct"] <= 3.0


_STATUS_WORDS = {"new": r"\bnew\b|newly|interval development|developed",
                 "unchanged": r"unchanged|stable|again (?:noted|seen)|persistent|redemonstrat|remains|similar to|"
                              r"not significantly changed",
                 "increased": r"increas|worsen|enlarging|progressed|larger than",
                 "decreased": r"decreas|improv|smaller than"}


def _statuses(text):
    # a "no new X" / "no new or worsening X" sentence states no status of X (it speaks of other change): skipped
    import re

    from sdrlib.reports import split_sentences

    text = " ".join(s for s in split_sentences(text) if not re.match(r"no new\b", s, re.I))
    return {k for k, rx in _STATUS_WORDS.items() if re.search(rx, text, re.I)}


@pytest.mark.parametrize("finding", [
    Finding("cardiomegaly", severity="moderate"), Finding("mediastinum"),
    Finding("edema", side="bilateral", severity="mild"), Finding("effusion", side="left", severity="moderate"),
    Finding("effusion", side="bilateral", severity="small"), Finding("consolidation", location="lingula"),
    Finding("atelectasis", location="bibasilar", side="bilateral", detail="linear"),
    Finding("opacity", location="right upper lobe"), Finding("nodule", location="left upper lobe", size_cm=1.4,
                                                                 detail="nodule"),
    Finding("nodule", location="right lower lobe", size_cm=4.5, detail="mass"),
    Finding("pneumothorax", side="right", severity="moderate"),
    Finding("fracture", side="left", location="7th", detail="acute"),
    Finding("pleural_other", side="right", detail="apical"),
])
def test_one_comparison_status_per_finding_in_both_sections(finding):
    # Findings and Impression state a finding's change since the prior with the same status (or none):
    # never "new" in one section and "stable" in the other.
    from sdrlib.data.synthcxr import report as sc

    for status in sc._WHEN_ALLOWED[finding.kind] + (None,):
        for seed in range(25):
            rng = np.random.default_rng(seed)
            style = sc._reader_style(rng)
            style = sc.ReaderStyle(**{**style.__dict__, "prior": "the prior radiograph"})
            found = " ".join(t for t, _ in sc._positive_sentences(finding, rng, style, status))
            imp = " ".join(t for t, _ in sc._impression_sentences([finding], [], rng, style, {finding.kind: status}))
            want = set() if status is None else {status}
            assert _statuses(found) == want, (status, found)
            assert _statuses(imp) <= want, (status, imp)


@pytest.mark.parametrize("status", ["new", "unchanged", "increased", "decreased"])
def test_write_report_passes_the_drawn_status_to_both_sections(monkeypatch, status):
    from sdrlib.data.synthcxr import report as sc

    monkeypatch.setattr(sc, "_draw_when", lambda rng, style, f: None if f.hedged else status)
    findings = [Finding("effusion", side="right", severity="moderate")]
    n_said = 0
    for seed in range(40):
        _, imp, _, _ = sc.write_report(findings, [], np.random.default_rng(seed))
        assert _statuses(imp) <= {status}, imp
        n_said += bool(_statuses(imp))
    assert n_said >= 10  # the Impression does use the status


def test_incidental_and_technique_sentences_carry_no_labels():
    # every remark outside the CheXpert-14 observations reads as nothing to the labeler
    # (degenerative spine, abdominal clips, granulomas, limited technique, comparison lines)
    from sdrlib.data.synthcxr import report as sc

    rng = np.random.default_rng(0)
    texts = {sc._neutral(rng) for _ in range(4000)} | {sc._technique(rng) for _ in range(500)}
    style = sc._reader_style(rng)
    for prior in (None, "the prior radiograph"):
        st = sc.ReaderStyle(**{**style.__dict__, "prior": prior})
        texts |= {sc._comparison_sentence(rng, st) for _ in range(100)}
    texts |= {sc._recommendation(rng, [Finding(k)]) for k in KINDS for _ in range(30)}
    assert len(texts) > 400
    labelled = {t: label_report(t) for t in texts if label_report(t) != {"No Finding": 1}}
    assert not labelled, labelled
    assert {"Cholecystectomy clips in the right upper quadrant.", "No free air under the diaphragm."} <= texts


def test_device_sentences_state_support_devices_only():
    from sdrlib.data.synthcxr import report as sc

    rng = np.random.default_rng(1)
    style = sc._reader_style(rng)
    for prior in (None, "the prior study"):
        st = sc.ReaderStyle(**{**style.__dict__, "prior": prior})
        for d in DEVICES:
            for _ in range(150):
                t, lab = sc._device_sentence(d, "left", rng, st)
                assert lab == {"Support Devices": 1} and label_report(t) == {"Support Devices": 1, "No Finding": 1}, t


def test_labels_stay_exact_under_the_new_language():
    reps = _reports(2, 400)
    agree = np.mean([label_report(s.findings + " " + s.impression) == s.labels for s in reps])
    assert agree >= 0.99
    text = " ".join(s.findings + " " + s.impression for s in reps).lower()
    for phrase in ("again noted", "new since", "unchanged", "cannot", "possible", "may represent"):
        assert phrase in text, phrase


def test_hedged_findings_are_uncertain_and_every_uncertain_label_is_hedged_in_text():
    import re

    hedge = re.compile(r"possib|probab|questionable|cannot|not excluded|may |could |likely|suspicious|concerning|"
                       r"suggestive|suspected", re.I)
    reps = _reports(3, 500)
    n_unc = 0
    for s in reps:
        for f in s.truth:
            if f.hedged:
                obs = {"edema": "Edema", "effusion": "Pleural Effusion", "atelectasis": "Atelectasis",
                       "pneumothorax": "Pneumothorax", "pneumonia": "Pneumonia"}[f.kind]
                assert s.labels[obs] == -1, (s.findings, s.impression)
        if -1 in s.labels.values():
            n_unc += 1
            assert hedge.search(s.findings + " " + s.impression), (s.findings, s.impression)
    assert n_unc >= 20


def test_normal_studies_have_varied_multi_sentence_findings():
    from sdrlib.reports import split_sentences

    normal = [s for s in _reports(0, 400) if not s.truth and not s.devices]
    assert len(normal) > 100
    sets = Counter(frozenset(split_sentences(s.findings)) for s in normal)
    assert sets.most_common(1)[0][1] / len(normal) < 0.05
    assert np.mean([len(split_sentences(s.findings)) for s in normal]) >= 3.5
