"""Bad input to the data loaders: every table goes through ``read_table`` (damaged files -> DataError naming the
file), paths taken from data files stay inside the data root, damaged rows and reports are skipped and counted.
Fixture files are written here, in tmp_path."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sdrlib.data import DataError
from sdrlib.data._common import read_table, resolve_data_path
from sdrlib.data.iuxray import iuxray_split_of, load_iuxray
from sdrlib.data.mimic import load_mimic
from sdrlib.data.rexgradient import load_rexgradient
from sdrlib.errors import SDRError
from sdrlib.metrics import EvaluationInputError, evaluate_reports, score_reports
from sdrlib.metrics.clinical import clinical_results, label_matrix, normalize_labels, strata_from_labels
from sdrlib.reports import build_template

CHEAP = ["bleu", "rouge", "chrf"]  # offline, fast, no model weights
REF = {"findings": "The heart is enlarged. Small left pleural effusion.", "impression": "Cardiomegaly."}
PRED = build_template("The heart is enlarged. Small left pleural effusion.", "Cardiomegaly.")
CHEXPERT_14 = ['No Finding', 'Enlarged Cardiomediastinum', 'Cardiomegaly', 'Lung Opacity', 'Lung Lesion',
               'Edema', 'Consolidation', 'Pneumonia', 'Atelectasis', 'Pneumothorax', 'Pleural Effusion',
               'Pleural Other', 'Fracture', 'Support Devices']


pytestmark = pytest.mark.usefixtures("no_network")  # tests/conftest.py


# --------------------------------------------------------------------------- loaders: read_table
def _csv_gz(path: Path, text: str) -> Path:
    path.write_bytes(gzip.compress(text.encode()))
    return path


def _truncate(path: Path) -> Path:
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    return path


def _parquet(path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": ["a", "b"], "Findings": ["x", "y"]}), path)
    return path


def _damaged(kind: str, tmp: Path) -> Path:
    big = "a,b\n" + "".join(f"{i},{'word ' * 20}{i}\n" for i in range(400))
    if kind == "truncated_gzip":
        return _truncate(_csv_gz(tmp / "t.csv.gz", big))
    if kind == "not_gzip":
        (tmp / "n.csv.gz").write_text(big)
        return tmp / "n.csv.gz"
    if kind == "corrupt_gzip":
        raw = bytearray(gzip.compress(big.encode()))
        raw[len(raw) // 2: len(raw) // 2 + 40] = b"\x00" * 40
        (tmp / "c.csv.gz").write_bytes(bytes(raw))
        return tmp / "c.csv.gz"
    if kind == "quoted_header":  # a stray quote in the header: no column names to read
        (tmp / "q.csv").write_text('a,"b\n1,2\n')
        return tmp / "q.csv"
    if kind == "nul_padded":  # cut off while written: the last row is incomplete
        (tmp / "z.csv").write_bytes(b"a,b\n1,two words\n2,thr" + b"\x00" * 64)
        return tmp / "z.csv"
    if kind == "empty_csv":
        (tmp / "e.csv").write_text("")
        return tmp / "e.csv"
    if kind == "bad_json":
        (tmp / "j.json").write_text('[{"id": "a", ')
        return tmp / "j.json"
    if kind == "scalar_json":
        (tmp / "s.json").write_text("42")
        return tmp / "s.json"
    if kind == "truncated_parquet":
        return _truncate(_parquet(tmp / "p.parquet"))
    if kind == "folder":
        (tmp / "d.csv").mkdir()
        return tmp / "d.csv"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["truncated_gzip", "not_gzip", "corrupt_gzip", "quoted_header", "nul_padded",
                                  "empty_csv", "bad_json", "scalar_json", "truncated_parquet", "folder"])
def test_read_table_turns_every_read_failure_into_a_named_data_error(tmp_path, kind):
    from sdrlib.data import LoadReport

    path = _damaged(kind, tmp_path)
    with pytest.raises(DataError) as err:
        read_table(path, LoadReport("t", "train"))
    assert str(path) in str(err.value)


def test_read_table_reads_every_format(tmp_path):
    from sdrlib.data import LoadReport

    rep = LoadReport("t", "train")
    rows = [{"id": "a", "Findings": "x"}, {"id": "b", "Findings": "y"}]
    (tmp_path / "a.csv").write_text("id,Findings\na,x\nb,y\n")
    _csv_gz(tmp_path / "b.csv.gz", "id,Findings\na,x\nb,y\n")
    (tmp_path / "c.json").write_text(json.dumps(rows))
    (tmp_path / "d.json").write_text(json.dumps({"a": {"Findings": "x"}, "b": {"Findings": "y"}}))
    (tmp_path / "e.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n\n[1]\n{bad\n")
    _parquet(tmp_path / "f.parquet")
    for name in ("a.csv", "b.csv.gz", "c.json", "e.jsonl", "f.parquet"):
        df = read_table(tmp_path / name, rep, ["id", "Findings"])
        assert df[["id", "Findings"]].to_dict("records") == rows, name
    keyed = read_table(tmp_path / "d.json", rep)
    assert keyed["__key__"].tolist() == ["a", "b"]
    assert rep.skipped == {"empty_row": 1, "bad_row": 2}
    with pytest.raises(DataError, match=r"missing column\(s\) \['Impression'\]"):
        read_table(tmp_path / "c.json", rep, ["Impression"])
    with pytest.raises(DataError, match="unknown table format"):
        read_table(tmp_path / "x.xlsx", rep)


# --------------------------------------------------------------------------- loaders: damaged tables
def _touch(p: Path) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(b"\xff\xd8\xff\xe0fakejpg")
    return p


def _mimic(root: Path, rows: list[str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    _csv_gz(root / "mimic-cxr-2.0.0-split.csv.gz", "\n".join(["dicom_id,study_id,subject_id,split", *rows]) + "\n")
    return root


def _mimic_study(root: Path, sub: str, st_id: str, dicoms=("d1",)) -> Path:
    d = root / "files" / f"p{sub[:2]}" / f"p{sub}" / f"s{st_id}"
    d.parent.mkdir(parents=True, exist_ok=True)
    d.with_suffix(".txt").write_text("FINDINGS: Lungs are clear.\nIMPRESSION: Normal.\n")
    for dc in dicoms:
        _touch(d / f"{dc}.jpg")
    return d


def test_mimic_truncated_gzip_names_the_file(tmp_path):
    rows = [f"d{i},{50000000 + i},{10000000 + i},train" for i in range(300)]
    root = _mimic(tmp_path / "m", rows)
    _truncate(root / "mimic-cxr-2.0.0-split.csv.gz")
    with pytest.raises(DataError, match=r"mimic-cxr-2\.0\.0-split\.csv\.gz: cannot read this csv file \(EOFError"):
        load_mimic(root, "train")
    root2 = _mimic(tmp_path / "m2", rows[:2])
    _truncate(_csv_gz(root2 / "mimic-cxr-2.0.0-chexpert.csv.gz", "subject_id,study_id,Edema\n" +
                      "".join(f"{10000000 + i},{50000000 + i},1.0\n" for i in range(300))))
    with pytest.raises(DataError, match=r"chexpert\.csv\.gz"):
        load_mimic(root2, "train")
    root3 = _mimic(tmp_path / "m3", rows[:2])
    (root3 / "mimic-cxr-2.0.0-metadata.csv").write_text('dicom_id,"ViewPosition\nd0,PA\n')  # a stray quote
    with pytest.raises(DataError, match=r"metadata\.csv: cannot read .*line 1 \(the header\): a stray quote"):
        load_mimic(root3, "train")


@pytest.mark.parametrize("name, content", [
    ("train_metadata.csv", b'id,"Findings\nS1,x\nS2,x\n'),                   # a quote in the header
    ("train_metadata.csv", b""),                                             # empty file
    ("train_metadata.json", b'{"S1": {"Findings": "x"'),                     # truncated JSON
    ("train_metadata.csv.gz", None),                                         # truncated gzip
    ("train_metadata.parquet", None),                                        # truncated parquet
])
def test_rexgradient_damaged_metadata_names_the_file(tmp_path, name, content):
    meta = tmp_path / "metadata"
    meta.mkdir()
    path = meta / name
    if name.endswith(".gz"):
        _truncate(_csv_gz(path, "id,Findings\n" + "".join(f"S{i},text {i}\n" for i in range(500))))
    elif name.endswith(".parquet"):
        _truncate(_parquet(path))
    else:
        path.write_bytes(content)
    with pytest.raises(DataError, match=name.replace(".", r"\.")):
        load_rexgradient(tmp_path, "train")


def test_iuxray_unparsable_csv_names_the_file(tmp_path):
    (tmp_path / "indiana_reports.csv").write_text('uid,findings,"impression\n1,open quote,x\n')
    (tmp_path / "indiana_projections.csv").write_text("uid,filename,projection\n1,a.png,Frontal\n")
    with pytest.raises(DataError, match=r"indiana_reports\.csv: cannot read"):
        load_iuxray(tmp_path, "train")


# --------------------------------------------------------------------------- loaders: paths stay in the root
def test_resolve_data_path_policy(tmp_path):
    root = tmp_path / "root"
    (root / "metadata").mkdir(parents=True)
    _touch(root / "img" / "a.png")
    _touch(tmp_path / "secret.png")
    (root / "img" / "link.png").symlink_to(tmp_path / "secret.png")
    (root / "img" / "inner.png").symlink_to(root / "img" / "a.png")
    meta = root / "metadata"
    assert resolve_data_path("../img/a.png", [meta], root) == (root / "img" / "a.png", "")
    assert resolve_data_path("img/inner.png", [root], root)[1] == ""           # a link that stays inside
    assert resolve_data_path("../secret.png", [root], root) == (None, "unsafe_path")
    assert resolve_data_path("../../secret.png", [meta], root) == (None, "unsafe_path")
    assert resolve_data_path(str(root / "img" / "a.png"), [root], root) == (None, "unsafe_path")  # absolute
    assert resolve_data_path("C:\\data\\a.png", [root], root) == (None, "unsafe_path")
    # a link the user placed in the layout is followed (e.g. files/ on another disk)
    assert resolve_data_path("img/link.png", [root], root) == (root / "img" / "link.png", "")
    assert resolve_data_path("img/../../secret.png", [root], root) == (None, "unsafe_path")
    assert resolve_data_path("img/nothere.png", [root], root) == (None, "missing")


def _iu(root: Path, filenames: list[str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "indiana_reports.csv").write_text(
        "uid,findings,impression\n" + "".join(f"{i},Lungs clear {i}.,Normal.\n" for i in range(len(filenames))))
    (root / "indiana_projections.csv").write_text(
        "uid,filename,projection\n" + "".join(f"{i},{fn},Frontal\n" for i, fn in enumerate(filenames)))
    return root


def test_iuxray_paths_outside_the_root_are_skipped_and_counted(tmp_path):
    root = tmp_path / "iu"
    img = root / "images" / "images_normalized"
    _touch(img / "ok.png")
    _touch(tmp_path / "secret.png")
    img.mkdir(parents=True, exist_ok=True)
    (img / "link.png").symlink_to(tmp_path / "secret.png")
    names = ["ok.png", "../../../secret.png", str(tmp_path / "secret.png"), "link.png", "../images_normalized/ok.png"]
    _iu(root, names)
    got, unsafe, no_image = {}, 0, 0
    for split in ("train", "val", "test"):
        recs, rep = load_iuxray(root, split, fractions=(0.34, 0.33, 0.33))
        got.update({r.study_id: r for r in recs})
        unsafe += rep.skipped["unsafe_path"]
        no_image += rep.skipped["no_image"]
    assert sorted(got) == ["0", "3", "4"] and unsafe == 2 and no_image == 2  # link.png: the user's own link
    for r in got.values():
        assert all(Path(p).is_relative_to(root) and ".." not in Path(p).parts for p in r.image_paths)


def test_rexgradient_paths_outside_the_root_are_skipped_and_counted(tmp_path):
    root = tmp_path / "rex"
    png = root / "deid_png"
    _touch(png / "a.png")
    _touch(tmp_path / "secret.png")
    (png / "link.png").symlink_to(tmp_path / "secret.png")
    train = {
        "S-A": {"Findings": "Clear.", "Impression": "Normal.", "ImagePath": ["../deid_png/a.png", "../../secret.png"]},
        "S-B": {"Findings": "Clear.", "Impression": "Normal.", "ImagePath": [str(tmp_path / "secret.png")]},
        "S-C": {"Findings": "Clear.", "Impression": "Normal.", "ImagePath": ["../deid_png/link.png"]},
        "S-D": {"Findings": "Clear.", "Impression": "Normal.", "ImagePath": ["../deid_png/missing.png"]},
    }
    (root / "metadata").mkdir(parents=True)
    (root / "metadata" / "train_metadata.json").write_text(json.dumps(train))
    recs, rep = load_rexgradient(root, "train")
    assert [r.study_id for r in recs] == ["S-A", "S-C"]  # S-C: a symlink in the user's layout is followed
    assert [Path(p).name for p in recs[0].image_paths] == ["a.png"]
    assert rep.skipped["unsafe_path"] == 2 and rep.skipped["no_image"] == 2 and rep.notes["missing_image"] == 1


def test_mimic_ids_cannot_leave_the_root_links_are_followed(tmp_path):
    root = _mimic(tmp_path / "m", ["d1,50000001,10000001,train", "../../../../x,50000002,10000002,train",
                                   "d3,../50000003,10000003,train", "d4,50000004,10000004,train"])
    _mimic_study(root, "10000001", "50000001")
    _mimic_study(root, "10000002", "50000002")
    st4 = _mimic_study(root, "10000004", "50000004", dicoms=())
    st4.mkdir()
    _touch(tmp_path / "secret.jpg")
    (st4 / "d4.jpg").symlink_to(tmp_path / "secret.jpg")
    recs, rep = load_mimic(root, "train")
    assert [r.study_id for r in recs] == ["50000001", "50000004"]  # d4.jpg: the user's own link, followed
    assert rep.skipped["unsafe_path"] == 2


# --------------------------------------------------------------------------- loaders: damaged rows and reports
def test_read_table_counts_rows_whose_field_count_differs_from_the_header(tmp_path):
    """pandas made a longer first row's first field the index (the loaders' ``KeyError: 0``) and
    refused the whole file for a longer later row; a short row was read as empty trailing fields."""
    from sdrlib.data import LoadReport

    (tmp_path / "r.csv").write_text("a,b\n1,2,EXTRA\n3,4\n\n5\n,\n6,\"x,y\"\n7,8,9,10\n")
    rep = LoadReport("t", "train")
    df = read_table(tmp_path / "r.csv", rep, ["a", "b"])
    assert list(df.index) == [0, 1, 2, 3]  # a RangeIndex: no first field taken as the index
    assert df.values.tolist() == [["3", "4"], ["", ""], ["", ""], ["6", "x,y"]]  # blank rows kept for empty_row
    assert rep.skipped == {"malformed_row": 3}
    assert rep.examples["malformed_row"] == ["r.csv line 2: 3 fields, the header has 2",
                                             "r.csv line 5: 1 fields, the header has 2",
                                             "r.csv line 8: 4 fields, the header has 2"]
    assert df.attrs["lines"] == [3, 4, 6, 7]


@pytest.mark.parametrize("where", ["split_first", "split_later", "split_short", "metadata_first", "chexpert_first"])
def test_mimic_rows_with_the_wrong_field_count_are_malformed_rows(tmp_path, where):
    rows = ["d1,50000001,10000001,train", "d2,50000002,10000002,train", "d3,50000003,10000003,train"]
    bad = {"split_first": 0, "split_later": 1, "split_short": 2}.get(where)
    if bad is not None:
        rows[bad] = rows[bad] + ",EXTRA" if where != "split_short" else rows[bad].rsplit(",", 1)[0]
    root = _mimic(tmp_path / "m", rows)
    for k in (1, 2, 3):
        _mimic_study(root, f"1000000{k}", f"5000000{k}", dicoms=(f"d{k}",))
    (root / "mimic-cxr-2.0.0-metadata.csv").write_text(
        "dicom_id,ViewPosition\n" + ("d1,PA,EXTRA\n" if where == "metadata_first" else "d1,PA\n") + "d2,AP\nd3,LL\n")
    (root / "mimic-cxr-2.0.0-chexpert.csv").write_text(
        "subject_id,study_id,Edema\n" + ("10000001,50000001,1.0,0.0\n" if where == "chexpert_first" else
                                        "10000001,50000001,1.0\n") + "10000002,50000002,0.0\n")
    recs, rep = load_mimic(root, "train")
    assert rep.skipped == {"malformed_row": 1}, rep.summary()
    got = {r.study_id: r for r in recs}
    if bad is not None:
        assert sorted(got) == sorted({"50000001", "50000002", "50000003"} - {f"5000000{bad + 1}"})
    else:
        assert sorted(got) == ["50000001", "50000002", "50000003"]
    if where == "metadata_first":  # d1's row is dropped, the others keep their own views (no shifted columns)
        assert got["50000001"].meta["views"] == [""] and got["50000002"].meta["views"] == ["AP"]
    if where == "chexpert_first":
        assert got["50000001"].labels is None and got["50000002"].labels == {"Edema": 0}
    elif where != "split_first":
        assert got["50000001"].labels == {"Edema": 1}


def test_mimic_float_ids_are_the_integers_they_are_and_fractions_are_malformed(tmp_path):
    """``50000001.0`` (a spreadsheet round-trip) made an existing report a ``missing_report``."""
    root = _mimic(tmp_path / "m", ["d1,50000001.0,10000001.0,train", "d2,5.0000002E7,10000002,train",
                                   "d3,5.5,10000003,train", "d4,50000004,inf,train", "d5,50000005,nan,train"])
    for k in (1, 2, 3, 4, 5):
        _mimic_study(root, f"1000000{k}", f"5000000{k}", dicoms=(f"d{k}",))
    (root / "mimic-cxr-2.0.0-chexpert.csv").write_text(
        "subject_id,study_id,Edema,Cardiomegaly\n10000001.0,50000001.0,1.0,\n10000002,5.0000002e7,,-1.0\n"
        "10000003,5.5,1.0,\n")
    recs, rep = load_mimic(root, "train")
    assert [(r.study_id, r.meta["subject_id"], r.labels) for r in recs] == [
        ("50000001", "10000001", {"Edema": 1}), ("50000002", "10000002", {"Cardiomegaly": -1})]
    assert rep.skipped == {"malformed_row": 4}, rep.summary()  # 5.5 in both files, inf, nan
    assert "missing_report" not in rep.skipped


def test_mimic_half_written_report_is_skipped_as_truncated(tmp_path):
    """A report cut mid-word and padded with NULs was kept with Impression "No acute cardiopul"."""
    root = _mimic(tmp_path / "m", ["d1,50000001,10000001,train", "d2,50000002,10000002,train"])
    st1 = _mimic_study(root, "10000001", "50000001")
    st1.with_suffix(".txt").write_bytes(b"FINDINGS: Lungs are clear.\nIMPRESSION: No acute cardiopul" + b"\x00" * 512)
    st2 = _mimic_study(root, "10000002", "50000002", dicoms=("d2",))
    st2.with_suffix(".txt").write_bytes(b"FINDINGS: Lungs\x00are clear.\nIMPRESSION: Normal.\n")  # a stray NUL
    recs, rep = load_mimic(root, "train")
    assert [(r.study_id, r.impression) for r in recs] == [("50000002", "Normal.")]
    assert rep.skipped == {"truncated_report": 1} and rep.notes["control_chars_removed"] == 1
    assert "512 NUL" in rep.examples["truncated_report"][0]
    # the split file itself cut off while written: refused naming it (its last row is incomplete)
    (root / "mimic-cxr-2.0.0-split.csv.gz").unlink()
    (root / "mimic-cxr-2.0.0-split.csv").write_bytes(b"dicom_id,study_id,subject_id,split\nd1,50000001,10000001,tr"
                                                     + b"\x00" * 100)
    with pytest.raises(DataError, match=r"mimic-cxr-2\.0\.0-split\.csv: ends in 100 NUL byte\(s\)"):
        load_mimic(root, "train")


def test_iuxray_float_uids_and_malformed_rows(tmp_path):
    root = tmp_path / "iu"
    _touch(root / "images" / "images_normalized" / "a.png")
    _touch(root / "images" / "images_normalized" / "b.png")
    (root / "indiana_reports.csv").write_text(
        "uid,findings,impression\n1.0,Lungs clear.,Normal.\n2,Heart normal.,Normal.,EXTRA\n2.5,Clear.,Normal.\n"
        "3,Clear.\n")
    (root / "indiana_projections.csv").write_text(
        "uid,filename,projection\n1,a.png,Frontal\n2.0,b.png,Frontal\n4.5,c.png,Frontal\n")
    got, skipped = {}, {}
    for split in ("train", "val", "test"):
        recs, rep = load_iuxray(root, split, fractions=(0.34, 0.33, 0.33))
        got.update({r.study_id: (r.split, r.image_paths) for r in recs})
        for k, v in rep.skipped.items():
            skipped[k] = skipped.get(k, 0) + v
    # uid "1.0" is study 1: its image is found and its split is the split of "1"
    assert list(got) == ["1"] and got["1"][0] == iuxray_split_of("1", 0, (0.34, 0.33, 0.33))
    assert Path(got["1"][1][0]).name == "a.png"
    # per call: row 2 (extra field), row 3 (uid 2.5), row 4 (short), projection uid 4.5 -> 4 malformed rows
    assert skipped == {"malformed_row": 12}


def test_rexgradient_float_ids_and_malformed_rows(tmp_path):
    root = tmp_path / "rex"
    _touch(root / "deid_png" / "a.png")
    (root / "metadata").mkdir(parents=True)
    rows = [{"id": 5.0, "Findings": "Clear.", "Impression": "Normal.", "ImagePath": ["../deid_png/a.png"]},
            {"id": "5", "Findings": "Clear.", "Impression": "Normal.", "ImagePath": ["../deid_png/a.png"]},
            {"id": 5.5, "Findings": "Clear.", "Impression": "Normal.", "ImagePath": ["../deid_png/a.png"]}]
    (root / "metadata" / "train_metadata.json").write_text(json.dumps(rows))
    recs, rep = load_rexgradient(root, "train")
    assert [r.study_id for r in recs] == ["5"] and rep.notes["merged_rows"] == 1  # 5.0 and "5": one study
    assert rep.skipped == {"malformed_row": 1}
    (root / "metadata" / "valid_metadata.csv").write_text(
        "id,Findings,Impression,ImagePath\nS1,Clear.,Normal.,../deid_png/a.png,EXTRA\n"
        "S2,Clear.,Normal.,../deid_png/a.png\n")
    recs, rep = load_rexgradient(root, "val")
    assert [r.study_id for r in recs] == ["S2"] and rep.skipped == {"malformed_row": 1}
