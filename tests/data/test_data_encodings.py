"""Encodings and damaged tables (issue 36 item 4): every loader reads reports and tables saved with a UTF-8 /
UTF-16 / UTF-32 byte-order mark (as spreadsheet tools write them) and counts the files it decoded; a stray quote
in any CSV a loader reads is one malformed row naming the file and the line. Fixtures: stand-in downloads
(``sdrlib.data.standin``) re-encoded or damaged in tmp_path."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from sdrlib.data import DataError, LoadReport
from sdrlib.data._common import half_written, read_table
from sdrlib.data.iuxray import load_iuxray
from sdrlib.data.mimic import load_mimic
from sdrlib.data.rexgradient import load_rexgradient
from sdrlib.data.standin import write_standin

pytestmark = pytest.mark.usefixtures("no_network")  # tests/conftest.py

#: encoding -> (the bytes a spreadsheet tool writes, the note the loader counts)
ENCODINGS = {
    "utf-8-sig": (lambda t: t.encode("utf-8-sig"), None),
    "utf-16-le": (lambda t: t.encode("utf-16"), "decoded_utf16"),          # Python writes LE with its mark
    "utf-16-be": (lambda t: b"\xfe\xff" + t.encode("utf-16-be"), "decoded_utf16"),
    "utf-32-le": (lambda t: t.encode("utf-32"), "decoded_utf32"),
    "utf-32-be": (lambda t: b"\x00\x00\xfe\xff" + t.encode("utf-32-be"), "decoded_utf32"),
}
LOADERS = {"mimic": lambda r: load_mimic(r, "train"), "iuxray": lambda r: load_iuxray(r, "train"),
           "rexgradient": lambda r: load_rexgradient(r, "train")}
#: every text file a loader reads, per layout (rexgradient: the CSV once the JSON files are gone)
FILES = {
    "mimic": ["report", "mimic-cxr-2.0.0-split.csv.gz", "mimic-cxr-2.0.0-chexpert.csv.gz",
              "mimic-cxr-2.0.0-metadata.csv.gz"],
    "iuxray": ["indiana_reports.csv", "indiana_projections.csv"],
    "rexgradient": ["metadata/train_metadata.json", "metadata/train_metadata.csv"],
}
CSVS = [(lay, f) for lay, fs in FILES.items() for f in fs if ".csv" in f]


@pytest.fixture(scope="module")
def standins(tmp_path_factory):
    base = tmp_path_factory.mktemp("standins")
    return {lay: write_standin(lay, base / lay, n=12, seed=0, unpack=lay == "rexgradient").root for lay in LOADERS}


def _copy(standins, layout: str, tmp: Path, file: str) -> tuple[Path, Path]:
    root = Path(shutil.copytree(standins[layout], tmp / layout))
    if layout == "rexgradient" and file.endswith(".csv"):
        for p in (root / "metadata").glob("*.json"):  # the loader prefers the JSON; leave it only the CSV
            p.unlink()
    if file == "report":  # the report of the first study the loader keeps
        recs, _ = load_mimic(root, "train")
        sid, subj = recs[0].study_id, recs[0].meta["subject_id"]
        return root, root / "files" / f"p{subj[:2]}" / f"p{subj}" / f"s{sid}.txt"
    return root, root / file


def _text(path: Path) -> str:
    raw = path.read_bytes()
    return (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8")


def _put(path: Path, data: bytes) -> None:
    path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)


def _same(a, b) -> None:
    assert [(r.study_id, r.findings, r.impression, r.labels, r.image_paths) for r in a] == \
           [(r.study_id, r.findings, r.impression, r.labels, r.image_paths) for r in b]


@pytest.mark.parametrize("encoding", list(ENCODINGS))
def test_decode_text_reads_every_byte_order_mark_and_says_which(encoding):
    from sdrlib.io import decode_text

    text = "IMPRESSION: No acute process. Café ✓\n"
    dec = decode_text(ENCODINGS[encoding][0](text))
    assert dec.text == text and dec.encoding == encoding and dec.bom
    assert dec.note == (ENCODINGS[encoding][1] or "")
    assert decode_text(text.encode()).encoding == "utf-8" and not decode_text(text.encode()).other
    assert decode_text(b"caf\xe9").note == "decoded_cp1252"


def test_a_byte_order_mark_the_bytes_then_break_is_named():
    from sdrlib.io import TextDecodeError, decode_text

    with pytest.raises(TextDecodeError, match=r"x\.csv: starts with a UTF-16-LE byte-order mark"):
        decode_text("a,b\n".encode("utf-16") + b"\x00\xd8", "x.csv")  # a lone surrogate
    with pytest.raises(TextDecodeError, match="not UTF-8"):
        decode_text(b"caf\xe9", "x.csv", lenient=False)


@pytest.mark.parametrize("encoding", [e for e in ENCODINGS if e != "utf-8-sig"])
def test_half_written_judges_wide_text_by_whole_characters(encoding):
    raw = ENCODINGS[encoding][0]("IMPRESSION: No acute process.\n")
    assert half_written(raw) == 0  # its ASCII characters end in NUL bytes of their own
    assert half_written(raw + b"\x00" * 8) == 8 and half_written(raw + b"\x00" * 5) == 5


@pytest.mark.parametrize("encoding", list(ENCODINGS))
@pytest.mark.parametrize("layout, file", [(lay, f) for lay, fs in FILES.items() for f in fs])
def test_every_loader_reads_every_file_saved_in_another_encoding(standins, tmp_path, layout, file, encoding):
    root, path = _copy(standins, layout, tmp_path, file)
    want, want_rep = LOADERS[layout](root)
    _put(path, ENCODINGS[encoding][0](_text(path)))
    got, rep = LOADERS[layout](root)
    _same(got, want)  # was: MIMIC report missing_impression, tables refused with mojibake columns, ReX 0 studies
    assert dict(rep.skipped) == dict(want_rep.skipped)
    note = ENCODINGS[encoding][1]
    assert {k: v for k, v in rep.notes.items() if k.startswith("decoded_")} == ({note: 1} if note else {})
    if note:
        assert note in rep.summary() and path.name in " ".join(rep.examples[note])


def _damage(line: str, how: str) -> str:
    if how == "open":  # a quote that opens the first field and is never closed
        return '"' + line
    first, _, rest = line.partition(",")
    return f'{first[:1]}"{first[1:]},{rest}'  # a quote inside the first (id) field: 5514"2506


@pytest.mark.parametrize("how", ["inside", "open"])
@pytest.mark.parametrize("layout, file", CSVS)
def test_a_stray_quote_in_any_csv_is_one_malformed_row_naming_file_and_line(standins, tmp_path, layout, file, how):
    root, path = _copy(standins, layout, tmp_path, file)
    want, _ = LOADERS[layout](root)
    lines = _text(path).splitlines(keepends=True)
    lines[2] = _damage(lines[2], how)  # line 3 of the file
    _put(path, "".join(lines).encode())
    got, rep = LOADERS[layout](root)
    assert rep.skipped["malformed_row"] == 1, rep.summary()
    assert rep.examples["malformed_row"][0].startswith(f"{path.name} line 3: ")
    assert "quote" in rep.examples["malformed_row"][0]
    assert rep.skipped["missing_report"] == 0  # was: MIMIC's split row named no report
    assert {r.study_id for r in got} <= {r.study_id for r in want}
    assert len(got) >= len(want) - 1  # only the damaged row's study may be lost


@pytest.mark.parametrize("how", ["inside", "open"])
def test_a_mimic_split_whose_every_id_has_a_stray_quote_names_the_file_not_the_report_archive(standins, tmp_path,
                                                                                                how):
    root, path = _copy(standins, "mimic", tmp_path, "mimic-cxr-2.0.0-split.csv.gz")
    lines = _text(path).splitlines(keepends=True)
    damaged = [lines[0]] + [_damage(x, "inside") for x in lines[1:]]
    if how == "open":
        damaged[1] = _damage(lines[1], "open")
    _put(path, "".join(damaged).encode())
    with pytest.raises(DataError) as err:
        load_mimic(root, "train")
    msg = str(err.value)
    assert "mimic-cxr-2.0.0-split.csv.gz" in msg and "line 2" in msg and "quote" in msg
    assert "mimic-cxr-reports.zip" not in msg


def test_read_table_resumes_after_an_unclosed_quote(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('id,text\n1,"never closed\n2,two\n3,"a, quoted ""field""\nover two lines"\n4,four\n')
    rep = LoadReport("t", "train")
    df = read_table(path, rep)
    assert df["id"].tolist() == ["2", "3", "4"] and df.attrs["lines"] == [3, 4, 6]
    assert df.at[1, "text"] == 'a, quoted "field"\nover two lines'
    assert rep.skipped["malformed_row"] == 1
    assert rep.examples["malformed_row"][0].startswith("t.csv line 2: a stray quote: the quoted field it opens")
    path.write_text('id,text\n1,one\n2,"never closed\n3,three\n')
    df = read_table(path, rep := LoadReport("t", "train"))
    assert df["id"].tolist() == ["1", "3"] and rep.examples["malformed_row"] == [
        "t.csv line 3: a stray quote: the quoted field it opens is never closed"]
