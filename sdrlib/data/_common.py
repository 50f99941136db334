"""Helpers shared by the real-data loaders: lenient text / CSV reading and section checks.

Left out: anything dataset-specific (see the loader modules).
"""

from __future__ import annotations

import gzip
import io
import re
from pathlib import Path
from typing import Iterable, Sequence

from . import DataError, LoadReport

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
SECTIONS = ("findings", "impression")


def decode_bytes(raw: bytes, rep: LoadReport, what: str) -> str:
    """UTF-8 (with or without BOM); else Windows-1252, else Latin-1, each noted in ``rep``.

    Control characters (NUL, ...) are removed and noted. Example:
    ``decode_bytes(b"caf\\xe9", rep, "x.txt")`` -> ``"café"`` and ``rep.notes["decoded_cp1252"] == 1``.
    """
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        try:
            text = raw.decode("cp1252")
            rep.note("decoded_cp1252", what)
        except UnicodeDecodeError:
            text = raw.decode("latin-1")
            rep.note("decoded_latin1", what)
    if _CONTROL.search(text):
        text = _CONTROL.sub(" ", text)
        rep.note("control_chars_removed", what)
    return text


def read_bytes(path: Path) -> bytes:
    """File bytes, gunzipped when the name ends in ``.gz``."""
    raw = path.read_bytes()
    return gzip.decompress(raw) if path.suffix == ".gz" else raw


def find_file(root: Path, names: Sequence[str], *, subdirs: Sequence[str] = ("",)) -> Path | None:
    """First existing ``root/<subdir>/<name>`` over subdirs x names, else None."""
    for sub in subdirs:
        for name in names:
            p = root / sub / name if sub else root / name
            if p.is_file():
                return p
    return None


def read_csv(path: Path, rep: LoadReport, required: Iterable[str]):
    """Read a CSV (optionally ``.gz``) as strings, leniently decoded; check required columns.

    Blank lines are kept as rows so that callers can count them (``is_blank_row``).
    Raises DataError naming the file when it cannot be parsed or lacks a column.
    """
    import pandas as pd

    text = decode_bytes(read_bytes(path), rep, path.name)
    try:
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, skip_blank_lines=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as e:
        raise DataError(f"{path}: cannot parse CSV ({e})") from e
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}; found {list(df.columns)}")
    return df


def is_blank_row(values: Iterable[object]) -> bool:
    """True when every field is empty / whitespace / NaN."""
    for v in values:
        if v is None:
            continue
        if isinstance(v, float) and v != v:  # NaN
            continue
        if str(v).strip():
            return False
    return True


def clean_section(value: object) -> str:
    """A section value as normalised text; None / NaN / non-strings become ``""``."""
    from ..reports import normalize_text

    if value is None or (isinstance(value, float) and value != value):
        return ""
    if not isinstance(value, str):
        value = str(value)
    text = normalize_text(_CONTROL.sub(" ", value))
    return "" if text.lower() in ("nan", "none", "null") else text


def sections_ok(findings: str, impression: str, require: Sequence[str], rep: LoadReport, sid: str) -> bool:
    """Count and reject a study lacking a required section (``missing_findings`` / ``missing_impression``)."""
    for name, text in (("findings", findings), ("impression", impression)):
        if name in require and not re.search(r"[A-Za-z]", text):
            rep.skip(f"missing_{name}", sid)
            return False
    return True


def check_require(require: Sequence[str]) -> tuple[str, ...]:
    bad = [r for r in require if r not in SECTIONS]
    if bad:
        raise ValueError(f"require: unknown section(s) {bad}; expected a subset of {SECTIONS}")
    return tuple(require)


def check_root(root: str | Path, dataset: str, hint: str) -> Path:
    root = Path(root)
    if not root.is_dir():
        raise DataError(f"{dataset}: folder {root} does not exist; {hint}")
    return root
