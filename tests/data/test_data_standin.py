"""Stand-in downloads (sdrlib.data.standin): each layout written and read back by the real loader
(counts, sections, labels, images), determinism, and the defects (missing report / image / section)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sdrlib.config import load_profile
from sdrlib.data import DataError, load_split
from sdrlib.data.iuxray import load_iuxray
from sdrlib.data.mimic import load_mimic
from sdrlib.data.rexgradient import load_rexgradient, unpack_rexgradient
from sdrlib.data.standin import DEFECTS, StandInError, write_standin
from sdrlib.data.standin.__main__ import LAYOUTS, main
from sdrlib.data.synthcxr import generate_study
from sdrlib.reports import normalize_text
from sdrlib.vocabulary import apply_no_finding, ordered_labels

SIZE = 32  # image side: small, so a stand-in of ten studies takes well under a second
SPLITS = ("train", "val", "test")


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _check_records(st, records, rep, split):
    """Loader output equals what the stand-in says it wrote."""
    from PIL import Image

    ids, skipped = st.expected(split)
    assert [r.study_id for r in records] == ids
    assert dict(rep.skipped) == dict(skipped), rep.summary()
    for r in records:
        s = st.study(r.study_id)
        assert r.findings == normalize_text(s.findings) and r.findings
        assert r.impression == normalize_text(s.impression) and r.impression
        assert r.labels == s.labels
        assert [Path(p).relative_to(os.path.abspath(st.root)).as_posix() for p in r.image_paths] == s.images
        for p in r.image_paths:
            with Image.open(p) as im:
                assert im.size == (SIZE, SIZE) and im.mode == "L"


def _load(layout, root, split, seed=0):
    if layout == "mimic":
        return load_mimic(root, split)
    if layout == "rexgradient":
        return load_rexgradient(root, split)
    return load_iuxray(root, split, seed=seed)


# --------------------------------------------------------------------------- layouts read back
def test_mimic_standin_is_read_back_by_the_loader(tmp_path):
    st = write_standin("mimic", tmp_path / "mimic", n=12, seed=3, image_size=SIZE, p_missing_section=0.25)
    root = st.root
    for name in ("mimic-cxr-2.0.0-split.csv.gz", "mimic-cxr-2.0.0-chexpert.csv.gz", "mimic-cxr-2.0.0-metadata.csv.gz"):
        assert (root / name).is_file()
    n_loaded = 0
    for split in SPLITS:
        records, rep = load_mimic(root, split)
        _check_records(st, records, rep, split)
        n_loaded += len(records)
        for r in records:  # frontal views first, from the metadata's ViewPosition
            assert r.meta["views"] == st.study(r.study_id).views and r.meta["views"][0] in ("PA", "AP")
    skipped = [s for s in st.studies if s.expect]
    assert n_loaded + len(skipped) == 12 and skipped, "p_missing_section=0.25 leaves some studies without a section"
    assert {s.expect for s in skipped} <= {"missing_findings", "missing_impression"}
    assert any(len(s.images) > 1 for s in st.studies) and any("LATERAL" in s.views for s in st.studies)
    text = next(root.glob("files/p1*/p1*/s*.txt")).read_text()
    for header in ("FINAL REPORT", "EXAMINATION:", "INDICATION:", "TECHNIQUE:", "COMPARISON:"):
        assert header in text
    s = next(s for s in st.studies if s.expect is None)
    report = (root / Path(s.images[0]).parent).with_suffix(".txt").read_text()
    assert "FINDINGS:" in report and "IMPRESSION:" in report
    for s in st.studies:  # texts and labels are SynthCXR's (MIMIC: Impression labels, the CheXpert-file rule)
        syn = generate_study(3, *s.meta["synthcxr"], image_size=SIZE)
        if s.impression:
            assert s.impression == syn.impression and s.labels == syn.labels_impression
        else:
            assert s.labels == syn.labels_findings
        if s.findings:
            assert normalize_text(s.findings) in syn.findings  # less a "Comparison: X." sentence (COMPARISON:)
    lacking = next(s for s in skipped)
    report = (root / Path(lacking.images[0]).parent).with_suffix(".txt").read_text()
    assert ("FINDINGS:" in report) != ("IMPRESSION:" in report)



def test_mimic_without_its_report_archive_stops_naming_it(tmp_path):
    """A MIMIC-CXR-JPG download without the MIMIC-CXR reports: one line saying what to unzip where."""
    st = write_standin("mimic", tmp_path / "mimic", n=5, seed=0, image_size=SIZE, p_missing_section=0.0)
    moved = tmp_path / "mimic" / "mimic-cxr-reports"
    for txt in sorted(st.root.glob("files/p*/p*/s*.txt")):  # the archive unpacked in a folder of its own
        dest = moved / txt.relative_to(st.root)
        dest.parent.mkdir(parents=True, exist_ok=True)
        txt.rename(dest)
    records, rep = load_mimic(st.root, "train")  # found in <root>/mimic-cxr-reports/files/...
    assert [r.study_id for r in records] == st.expected("train")[0] and not rep.skipped
    shutil.rmtree(moved)
    with pytest.raises(DataError) as e:
        load_mimic(st.root, "train")
    msg = str(e.value)
    assert "\n" not in msg and "none of the 3 train studies has its report" in msg
    assert "mimic-cxr-reports.zip" in msg and str(st.root) in msg

def test_rexgradient_standin_ships_packed_images_and_reads_back_once_unpacked(tmp_path):
    st = write_standin("rexgradient", tmp_path / "rex", n=10, seed=1, image_size=SIZE, p_missing_section=0.2)
    root = st.root
    assert sorted(p.name for p in root.glob("deid_png.part*")) == [f"deid_png.part{i:02d}" for i in range(10)]
    assert not (root / "deid_png").exists()
    for split in ("train", "valid", "test"):
        for suffix in ("_metadata.csv", "_metadata.json", "_metadata_view_position.json"):
            assert (root / "metadata" / f"{split}{suffix}").is_file()
    # as downloaded: the loader stops before any work, naming the parts and the command
    with pytest.raises(DataError, match=r"still packed.*cat deid_png\.part\* > deid_png\.tar && tar -xf"):
        load_rexgradient(root, "train")
    unpack_rexgradient(root)
    for split in SPLITS:
        records, rep = load_rexgradient(root, split)
        _check_records(st, records, rep, split)
        for r in records:
            syn = generate_study(1, *st.study(r.study_id).meta["synthcxr"], image_size=SIZE)
            assert (r.findings, r.impression, r.labels) == (syn.findings, syn.impression, None)
        for r in records:
            assert r.meta["ImageViewPosition"] == st.study(r.study_id).views


@pytest.mark.skipif(shutil.which("tar") is None or shutil.which("zstd") is None, reason="needs GNU tar and zstd")
def test_rexgradient_parts_unpack_with_the_dataset_cards_command(tmp_path):
    st = write_standin("rexgradient", tmp_path / "rex", n=4, seed=0, image_size=SIZE)
    subprocess.run("cat deid_png.part* > deid_png.tar && tar -xf deid_png.tar", shell=True, check=True, cwd=st.root)
    ids, _ = st.expected("train")
    records, _ = load_rexgradient(st.root, "train")
    assert [r.study_id for r in records] == ids


def test_iuxray_standin_is_read_back_by_the_loader(tmp_path):
    st = write_standin("iuxray", tmp_path / "iu", n=12, seed=2, image_size=SIZE, p_missing_section=0.2)
    seen = []
    for split in SPLITS:
        records, rep = load_iuxray(st.root, split, seed=0)
        _check_records(st, records, rep, split)
        seen += [r.study_id for r in records]
    assert sorted(seen, key=int) == [s.study_id for s in st.studies if s.expect is None]
    assert any(s.labels != {"No Finding": 1} for s in st.studies)  # some abnormal studies carry MeSH headings
    for s in st.studies:
        syn = generate_study(2, *s.meta["synthcxr"], image_size=SIZE)
        assert s.findings in ("", syn.findings) and s.impression in ("", syn.impression)
        positives = {k: 1 for k, v in syn.labels.items() if v == 1 and k != "No Finding"}
        assert s.labels == ordered_labels(apply_no_finding(positives))  # IU: positive headings only


def test_load_split_reads_the_standins_with_the_paper_profiles_data_settings(tmp_path, sdr_root):
    paper = load_profile("paper")
    assert paper.data.source == "mimic"
    mimic = write_standin(paper.data.source, tmp_path / "mimic-cxr", n=8, seed=0, image_size=SIZE,
                          p_missing_section=0.0)
    cfg = load_profile("paper", {"data.root": str(mimic.root)})
    assert len(load_split(cfg, "train")) == len(mimic.expected("train")[0]) > 0
    rex = write_standin("rexgradient", tmp_path / "rex", n=8, seed=0, image_size=SIZE, p_missing_section=0.0,
                        unpack=True)
    cfg = load_profile("paper", {"data.source": "rexgradient", "data.root": str(rex.root)})
    assert [r.study_id for r in load_split(cfg, "val")] == rex.expected("val")[0]
    iu = write_standin("iuxray", tmp_path / "iu", n=8, seed=0, image_size=SIZE, p_missing_section=0.0)
    cfg = load_profile("paper", {"data.source": "iuxray", "data.root": str(iu.root)})
    got = sorted((r.study_id for sp in SPLITS for r in load_split(cfg, sp)), key=int)
    assert got == [s.study_id for s in iu.studies]


# --------------------------------------------------------------------------- determinism
@pytest.mark.parametrize("layout", LAYOUTS)
def test_standin_is_byte_identical_for_a_seed(tmp_path, layout):
    a = write_standin(layout, tmp_path / "a", n=4, seed=5, image_size=SIZE)
    b = write_standin(layout, tmp_path / "b", n=4, seed=5, image_size=SIZE)
    c = write_standin(layout, tmp_path / "c", n=4, seed=6, image_size=SIZE)
    assert _tree(a.root) == _tree(b.root)
    assert _tree(a.root) != _tree(c.root)


# --------------------------------------------------------------------------- defects
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("defect", DEFECTS)
def test_defects_are_skipped_and_counted_as_for_a_real_download(tmp_path, layout, defect):
    st = write_standin(layout, tmp_path / "d", n=6, seed=0, image_size=SIZE, defect=defect, p_missing_section=0.0,
                       unpack=True)
    target = st.study(st.defect_study)
    split = st.split_of(target)
    records, rep = _load(layout, st.root, split)
    _check_records(st, records, rep, split)
    assert st.defect_study not in [r.study_id for r in records]
    want = {("mimic", "missing-report"): "missing_report", ("rexgradient", "missing-report"): "missing_findings",
            ("iuxray", "missing-report"): None}.get((layout, defect),
                                                     {"missing-image": "no_image",
                                                      "missing-section": "missing_impression"}.get(defect))
    if want is None:  # IU-Xray: a study without its reports row is not a study; its images are noted
        assert rep.n_skipped == 0 and rep.notes["orphan_projection"] == 1
    else:
        assert dict(rep.skipped) == {want: 1}, rep.summary()
    if layout == "mimic" and defect == "missing-report":
        assert not (st.root / Path(target.images[0]).parent).with_suffix(".txt").exists()
    if defect == "missing-image":
        assert not any((st.root / p).exists() for p in target.images)


# --------------------------------------------------------------------------- arguments and CLI
def test_bad_arguments_are_refused(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("a real download, maybe")
    with pytest.raises(StandInError, match="not an empty folder"):
        write_standin("mimic", tmp_path / "full", n=3)
    with pytest.raises(StandInError, match="layout"):
        write_standin("chexpert", tmp_path / "a")
    with pytest.raises(StandInError, match="defect"):
        write_standin("mimic", tmp_path / "a", defect="missing-everything")
    with pytest.raises(StandInError, match="n must"):
        write_standin("mimic", tmp_path / "a", n=0)
    with pytest.raises(StandInError, match="image_size"):
        write_standin("mimic", tmp_path / "a", image_size=8)
    assert not (tmp_path / "a").exists()


def test_cli_writes_a_standin_and_says_what_it_wrote(tmp_path, capsys):
    assert main(["mimic", str(tmp_path / "m"), "--n", "3", "--seed", "0", "--image-size", str(SIZE),
                 "--p-missing-section", "0"]) == 0
    out = capsys.readouterr().out
    assert "mimic stand-in: 3 studies" in out and "train 1" in out
    assert sum(len(load_mimic(tmp_path / "m", sp)[0]) for sp in SPLITS) == 3
    assert main(["rexgradient", str(tmp_path / "r"), "--n", "3", "--image-size", str(SIZE), "--defect",
                 "missing-image"]) == 0
    out = capsys.readouterr().out
    assert "defect missing-image" in out and "deid_png.part*" in out
    assert main(["iuxray", str(tmp_path / "m"), "--n", "3"]) == 2
    assert "not an empty folder" in capsys.readouterr().err


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_profile_with_standin_n_writes_the_standin_once_where_data_root_is_missing(layout, tmp_path, monkeypatch):
    """``data.standin_n`` (the rehearsal profile): a missing ``data.root`` gets the stand-in of the profile's seed,
    the same bytes as ``python -m sdrlib.data.standin`` (ReXGradient unpacked), then is read like a download; an
    existing folder is never written to, and without ``standin_n`` a missing root stays an error."""
    monkeypatch.setenv("SDR_ROOT", str(tmp_path))
    cfg = load_profile("smoke", {"data.source": layout, "data.root": "data/dl", "data.standin_n": 20})
    with pytest.warns(UserWarning, match=f"wrote a {layout} stand-in"):
        train = load_split(cfg, "train")
    root = tmp_path / "data" / "dl"
    ref = write_standin(layout, tmp_path / "ref", n=20, seed=cfg.seed, unpack=True)
    assert _tree(root) == _tree(ref.root) and len(train) == len(ref.expected("train")[0]) > 0
    assert [p.name for p in root.parent.iterdir()] == ["dl"]  # no temporary folder left beside it
    before = _tree(root)
    load_split(cfg, "test")
    assert _tree(root) == before
    with pytest.raises(DataError, match="does not exist|no such|not found"):
        load_split(load_profile("smoke", {"data.source": layout, "data.root": "data/none"}), "train")
