"""Helpers shared by the real-data loaders: table reading, safe data paths, section checks.

- :func:`read_table` is the one reader of index / metadata tables (CSV, ``.csv.gz``,
  JSON, JSON lines, Parquet): every parse, decompression or I/O failure becomes a
  :class:`~sdrlib.data.DataError` naming the file and the cause.
- :func:`resolve_data_path` / :func:`inside_root` resolve a path taken from a data file
  and keep it inside the data root (policy below); :func:`existing_images` keeps a study's
  images that resolve, counting the others.
- :func:`normalize_id` reads a numeric id the way spreadsheets write it back
  (``50414267.0`` is study ``50414267``; ``5.5`` is no id: a ``malformed_row``).
- :func:`half_written` recognises a file cut off while it was written (it ends in NUL
  padding): a report is skipped as ``truncated_report``, a table raises DataError.

Path policy (all loaders): a path read from a data file (an image path, or ids that
build one) is joined to its base folder and normalised *lexically* (``..`` removed
without following links), and must stay inside the data root. Absolute paths and paths
whose ``..`` climbs out of the root are never opened; the entry is skipped and counted in
the :class:`~sdrlib.data.LoadReport` as ``unsafe_path`` (a study left with no image is
also counted ``no_image``). ``..`` that stays inside the root is fine (ReXGradient writes
``../deid_png/...`` relative to its metadata folder). Symlinks are the user's own layout
and are followed: a root whose ``files/`` folder links to another disk works. The rule
guards against the text of a data file, not against the file system's owner.

Left out: anything dataset-specific (see the loader modules).
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import json
import os
import re
import zlib
from decimal import Decimal, InvalidOperation
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from sdrlib.data.records import DataError, LoadReport
from sdrlib.io import TextDecodeError, bom_encoding, decode_text
from sdrlib.reports import normalize_text

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
SECTIONS = ("findings", "impression")


def decode_bytes(raw: bytes, rep: LoadReport, what: str) -> str:
    """File bytes as text by :func:`sdrlib.io.decode_text`, what it did counted in ``rep``.

    A byte-order mark decides (UTF-8, UTF-16 LE / BE, UTF-32 LE / BE: a file saved by a spreadsheet
    tool); else UTF-8; else Windows-1252, else Latin-1. A file that was not UTF-8 is noted
    ``decoded_utf16`` / ``decoded_utf32`` / ``decoded_cp1252`` / ``decoded_latin1`` with its name and
    encoding. Bytes that break the encoding their mark names raise :class:`DataError` naming ``what``.
    Control characters (NUL, ...) are removed and noted ``control_chars_removed``. Example:
    ``decode_bytes(b"caf\\xe9", rep, "x.txt")`` -> ``"café"`` and ``rep.notes["decoded_cp1252"] == 1``.
    """
    try:
        dec = decode_text(raw, what)
    except TextDecodeError as e:
        raise DataError(str(e)) from None
    if dec.other:
        rep.note(dec.note, f"{what} ({dec.encoding}{', byte-order mark' if dec.bom else ''})")
    text = dec.text
    if _CONTROL.search(text):
        text = _CONTROL.sub(" ", text)
        rep.note("control_chars_removed", what)
    return text


def read_bytes(path: Path) -> bytes:
    """File bytes, gunzipped when the name ends in ``.gz`` (errors propagate; see :func:`read_table`)."""
    raw = path.read_bytes()
    return gzip.decompress(raw) if path.suffix == ".gz" else raw


def half_written(raw: bytes) -> int:
    """Number of NUL bytes padding the end of ``raw`` (0 for a complete file).

    A file that ends in NUL bytes was cut off while it was written (the writer had
    extended or preallocated it and stopped): its text stops mid-way, often mid-word,
    and nothing says how much is missing. A NUL inside the text is only a stray control
    character (removed by :func:`decode_bytes`). UTF-16 / UTF-32 text (a byte-order mark) is judged
    by whole characters, since its ASCII characters have NUL bytes of their own: NUL characters at the
    end, plus NUL bytes short of a whole character.
    Example: ``half_written(b"IMPRESSION: No acu\x00\x00") -> 2``; ``half_written(b"Normal.\n") -> 0``.
    """
    enc = bom_encoding(raw)
    if enc in (None, "utf-8-sig"):
        return len(raw) - len(raw.rstrip(b"\x00"))
    unit = 4 if enc.startswith("utf-32") else 2
    tail = len(raw) % unit  # a partial character: padding only when it is all NUL
    if tail and raw[-tail:].strip(b"\x00"):
        return 0
    body, n = raw[:len(raw) - tail], 0
    while len(body) - n >= unit * 2 and body[len(body) - n - unit:len(body) - n] == b"\x00" * unit:
        n += unit
    return n + tail


def normalize_id(value: object) -> str | None:
    """A numeric id as written in an index table, spreadsheet round-trips undone.

    Returns the id as text (stripped). A number written as a float (``50414267.0``,
    ``5.0414267E7``, as Excel / pandas write an integer column back) becomes its integer
    digits, so it names the same study as ``50414267``; a number that is not integral
    (``5.5``), NaN or infinite is no id: ``None`` (the caller counts a ``malformed_row``).
    Anything that is not a decimal number (``S-A``, ``1.2.840.113619`` DICOM UIDs,
    ``""``) is returned unchanged. Exact (``decimal``): ids beyond 2**53 keep every digit.
    Example: ``normalize_id("50414267.0") -> "50414267"``; ``normalize_id("5.5") -> None``.
    """
    if value is None or (isinstance(value, float) and value != value):
        return None
    text = str(value).strip()
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(nan|inf|infinity)", text, re.IGNORECASE):
        return text
    if re.fullmatch(r"\d+", text):
        return text  # the common case, leading zeros kept
    try:
        num = Decimal(text)
    except InvalidOperation:  # pragma: no cover - the pattern admits only Decimal syntax
        return None
    if not num.is_finite() or num != num.to_integral_value():
        return None
    return str(int(num))


def find_file(root: Path, names: Sequence[str], *, subdirs: Sequence[str] = ("",)) -> Path | None:
    """First existing ``root/<subdir>/<name>`` over subdirs x names, else None."""
    for sub in subdirs:
        for name in names:
            p = root / sub / name if sub else root / name
            if p.is_file():
                return p
    return None


def _table_kind(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    for kind in ("parquet", "jsonl", "json", "csv"):
        if name.endswith("." + kind):
            return kind
    raise DataError(f"{path}: unknown table format; expected .csv, .csv.gz, .json, .jsonl or .parquet")


def _table_errors() -> tuple[type[BaseException], ...]:
    """Everything a damaged table can raise while being read (the DataError cause)."""
    errs: list[type[BaseException]] = [OSError, EOFError, zlib.error, UnicodeDecodeError, ValueError,
                                       TypeError, RecursionError, csv.Error]  # pandas / json errors: ValueErrors
    try:
        import pyarrow as pa

        errs.append(pa.ArrowException)
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        pass
    return tuple(errs)


def _json_rows(obj: Any, rep: LoadReport, path: Path) -> list[dict[str, Any]]:
    """Rows of a JSON document: a list of objects, ``{"data": [...]}`` or an object keyed by id.

    For the keyed form the key is kept as ``__key__``; non-object items are counted ``bad_row``.
    """
    if isinstance(obj, dict) and isinstance(obj.get("data"), list):
        obj = obj["data"]
    rows: list[dict[str, Any]] = []
    if isinstance(obj, dict):
        for key, val in obj.items():
            if isinstance(val, dict):
                rows.append({"__key__": key, **val})
            else:
                rep.skip("bad_row", f"key {key}")
    elif isinstance(obj, list):
        for i, val in enumerate(obj):
            if isinstance(val, dict):
                rows.append(val)
            else:
                rep.skip("bad_row", f"item {i}")
    else:
        raise DataError(f"{path}: expected a JSON list or object of rows, got {type(obj).__name__}")
    return rows


#: one CSV record as RFC 4180 writes it: fields unquoted (no quote inside) or quoted (inner quotes doubled)
_CSV_RECORD = re.compile(r'(?:"(?:[^"]|"")*"|[^,"\r\n]*)(?:,(?:"(?:[^"]|"")*"|[^,"\r\n]*))*(?:\r\n|\n|\r)?')


def _csv_columns(lines: list[str]) -> tuple[list[str], int]:
    """The header's column names (a repeated name gets pandas' ``.1``, ``.2`` suffix) and the number of physical
    lines the header takes; a header that cannot be read raises ``ValueError`` (an empty file, a stray quote)."""
    reader = csv.reader(iter(lines), strict=True)
    try:
        header = next(reader, None)
    except csv.Error as e:
        raise ValueError(f"line 1 (the header): a stray quote ({e})") from None
    if header is None:
        raise ValueError("empty file: no header row")
    if '"' in lines[0] and not _CSV_RECORD.fullmatch("".join(lines[:reader.line_num])):
        raise ValueError("line 1 (the header): a stray quote")
    cols: list[str] = []
    for c in header:
        name, k = c, 0
        while name in cols:
            k += 1
            name = f"{c}.{k}"
        cols.append(name)
    return cols, reader.line_num


class _MalformedRows:
    """Skips and counts one CSV's malformed rows (``malformed_row``, with the file and line) and remembers the first
    (for the message when no row can be read)."""

    def __init__(self, rep: LoadReport, path: Path) -> None:
        self.rep, self.path, self.count, self.first = rep, path, 0, ""

    def __call__(self, line: int, why: str) -> None:
        self.count += 1
        self.first = self.first or f"line {line}: {why}"
        self.rep.skip("malformed_row", f"{self.path.name} line {line}: {why}")


def _csv_records(lines: list[str], pos: int, n: int, malformed: _MalformedRows) -> tuple[list[list[str]], list[int]]:
    """``(rows, line numbers)`` of the records after the header (``pos`` lines), each checked (rules:
    :func:`_read_csv_rows`); a record that breaks :mod:`csv` is counted and reading resumes on its next line."""
    rows: list[list[str]] = []
    kept: list[int] = []
    while pos < len(lines):
        base, done = pos, 0
        reader = csv.reader(itertools.islice(lines, base, None), strict=True)
        try:
            for fields in reader:
                first, done = base + done, reader.line_num  # 0-based index of the record's first line
                line, pos = first + 1, base + done
                raw = lines[first] if pos == first + 1 else "".join(lines[first:pos])
                if '"' in raw and not _CSV_RECORD.fullmatch(raw):
                    malformed(line, "a stray quote (a quote inside an unquoted field, or text after a closing "
                                    "quote)")
                    continue
                if len(fields) == n:
                    rows.append(fields)
                elif all(not f.strip() for f in fields):  # a blank line ([]) or blank fields of another count
                    rows.append([""] * n)
                else:
                    malformed(line, f"{len(fields)} fields, the header has {n}")
                    continue
                kept.append(line)
            pos = len(lines)
        except csv.Error as e:
            line = base + done + 1
            why = ("a stray quote: the quoted field it opens is never closed" if "unexpected end of data" in str(e)
                   else f"a stray quote: the quoted field it opens does not end at a comma ({e})")
            malformed(line, why)
            pos = line  # resume on the next line
    return rows, kept


def _read_csv_rows(text: str, rep: LoadReport, path: Path) -> "pd.DataFrame":
    """A CSV's rows as a DataFrame of ``str`` cells, each row checked against the header.

    Parsed by :mod:`csv` (``strict``). Rows skipped and counted ``malformed_row`` with the file
    and line, the rest loaded:

    - a row with more or fewer fields than the header (a field with an unquoted comma, a line cut
      short): pandas took a longer first row's first field as the row index (``KeyError: 0`` in
      the loaders) and refused a longer later row for the whole file;
    - a row with a stray quote (RFC 4180: a quote inside an unquoted field, ``5514"2506``, or
      text after a closing quote): :mod:`csv` kept ``5514"2506`` as an id, which then named no
      report (``missing_report``, or "download mimic-cxr-reports.zip" when every row had one);
    - a quote that opens a field and is never closed (``"55142506,...``): it swallowed every
      later line (``unexpected end of data`` for the whole file); reading resumes on the next line.

    A row whose fields are all blank (a blank line, ``,,,``) is kept as a row of ``""`` for the
    loaders to count as ``empty_row``. Repeated header names get pandas' ``.1`` suffixes.
    ``df.attrs["lines"]`` holds each kept row's line number. A header that cannot be read, and a
    file none of whose rows can (every id with a stray quote: the MIMIC loader said "download
    mimic-cxr-reports.zip"), raise ``csv.Error`` / ``ValueError`` (:func:`read_table` names the file).
    """
    import pandas as pd

    lines = io.StringIO(text, newline="").readlines()  # physical lines, as csv counts them
    cols, pos = _csv_columns(lines)
    malformed = _MalformedRows(rep, path)
    rows, kept = _csv_records(lines, pos, len(cols), malformed)
    if not rows and malformed.count:
        raise ValueError(f"none of its {malformed.count} row(s) can be read ({malformed.first}); fix or re-download "
                         "the file")
    df = pd.DataFrame(rows, columns=cols, dtype=object)  # str cells; object: 3x faster to build than str
    df.attrs["lines"] = kept
    return df


def row_line(df: "pd.DataFrame", i: int) -> int:
    """The file line of row ``i`` of a table read by :func:`read_table` (CSV), else ``i + 2``."""
    lines = df.attrs.get("lines")
    return lines[i] if lines is not None and i < len(lines) else i + 2


def read_table(path: Path, rep: LoadReport, required: Iterable[str] = ()) -> "pd.DataFrame":
    """Read one index / metadata table as a :class:`pandas.DataFrame` (format from the name).

    Formats: ``.csv`` (and ``.csv.gz``): every cell a ``str``, blank lines kept as rows
    (see :func:`is_blank_row`), a row whose field count differs from the header's skipped
    and counted ``malformed_row`` (:func:`_read_csv_rows`), text decoded leniently by
    :func:`decode_bytes`; ``.json``
    (``.json.gz``): see :func:`_json_rows`; ``.jsonl``: one object per line, blank lines
    counted ``empty_row`` and undecodable lines ``bad_row``; ``.parquet``. JSON / Parquet
    values keep their Python types (lists stay lists; missing keys are NaN).

    Raises
    ------
    DataError
        Naming the file and the cause for any read failure: truncated or corrupt gzip
        (EOFError, BadGzipFile, zlib.error), a text file ending in NUL padding (cut off while
        it was written: :func:`half_written`), CSV quoting errors and an empty CSV, invalid
        JSON, Parquet / Arrow errors, I/O errors (permissions, a folder); and for a missing
        ``required`` column (listing the columns found).
    """
    import pandas as pd

    path = Path(path)
    kind = _table_kind(path)
    try:
        if kind == "parquet":
            import pyarrow.parquet as pq

            df = pd.DataFrame(pq.read_table(path).to_pylist(), dtype=object)
        else:
            raw = read_bytes(path)
            pad = half_written(raw)
            if pad:
                raise DataError(f"{path}: ends in {pad} NUL byte(s): the file was cut off while it was written; "
                                "re-download or re-extract it")
            text = decode_bytes(raw, rep, path.name)
            if kind == "csv":
                df = _read_csv_rows(text, rep, path)
            elif kind == "jsonl":
                rows = []
                for i, line in enumerate(text.splitlines()):
                    if not line.strip():
                        rep.skip("empty_row", f"{path.name} line {i + 1}")
                        continue
                    try:
                        obj = json.loads(line)
                    except ValueError:
                        rep.skip("bad_row", f"{path.name} line {i + 1}: not JSON")
                        continue
                    if isinstance(obj, dict):
                        rows.append(obj)
                    else:
                        rep.skip("bad_row", f"{path.name} line {i + 1}: not a JSON object")
                df = pd.DataFrame(rows, dtype=object)
            else:
                df = pd.DataFrame(_json_rows(json.loads(text), rep, path), dtype=object)
    except DataError:
        raise
    except _table_errors() as e:
        raise DataError(f"{path}: cannot read this {kind} file ({type(e).__name__}: {e}); "
                        "re-download or re-extract it") from e
    df.columns = [str(c).strip() for c in df.columns]
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}; found {list(df.columns)}")
    return df


def read_csv(path: Path, rep: LoadReport, required: Iterable[str]) -> "pd.DataFrame":
    """A CSV (optionally ``.gz``) through :func:`read_table` (kept for callers of the old name)."""
    return read_table(path, rep, required)


def inside_root(path: Path, root: Path) -> Path | None:
    """``path`` made absolute and lexically normalised when it lies inside ``root``, else None.

    ``..`` components are collapsed without following symlinks (``os.path.normpath``), so
    a data file's text cannot climb out of the root, while links inside it keep working.
    Example: ``inside_root(root / "a/../b.png", root)`` -> ``root/b.png``;
    ``inside_root(root / "../x", root)`` -> None.
    """
    p = Path(os.path.normpath(os.path.abspath(path)))
    base = Path(os.path.normpath(os.path.abspath(root)))
    return p if p == base or p.is_relative_to(base) else None


def resolve_data_path(entry: str | Sequence[str], bases: Sequence[Path], root: Path) -> tuple[Path | None, str]:
    """Resolve a path read from a data file against ``bases``, confined to ``root``.

    ``entry`` may be one string or several spellings of it tried in order (e.g. with a
    leading ``../`` removed). Returns ``(file, "")`` for the first candidate
    ``base / spelling`` that is an existing file inside ``root``; else ``(None, "unsafe_path")``
    when the entry is absolute (POSIX or Windows form) or contains NUL, when a candidate
    exists but its ``..`` leads outside ``root``, or when every candidate lies outside
    ``root``; else ``(None, "missing")``. Nothing outside ``root`` is opened.
    Example: ``resolve_data_path("../x.png", [root / "metadata"], root)`` finds
    ``root/x.png``; ``resolve_data_path("../../etc/passwd", [root], root)`` is unsafe.
    """
    spellings = [entry] if isinstance(entry, str) else list(entry)
    if any("\x00" in e or PurePosixPath(e).is_absolute() or PureWindowsPath(e).is_absolute() for e in spellings):
        return None, "unsafe_path"
    any_inside = escaped_to_file = False
    for rel in spellings:
        for base in bases:
            cand = Path(base) / rel
            q = inside_root(cand, root)
            if q is None:
                escaped_to_file = escaped_to_file or cand.exists()  # a stat, never an open
                continue
            any_inside = True
            if q.is_file():
                return q, ""
    return (None, "missing") if any_inside and not escaped_to_file else (None, "unsafe_path")


def existing_images(sid: str, entries: Iterable[str], resolve: Callable[[str], tuple[Path | None, str]],
                    rep: LoadReport) -> list[str]:
    """The image files of study ``sid`` that exist, in the order of ``entries`` (paths read from a data file).

    ``resolve(entry)`` gives ``(file, "")``, ``(None, "missing")`` or ``(None, "unsafe_path")``
    (:func:`resolve_data_path`); an unsafe entry is skipped and counted ``unsafe_path`` (``"<sid>: <entry>"``), a
    missing one noted ``missing_image``. The caller counts a study left with none as ``no_image``.
    """
    paths = []
    for entry in entries:
        p, why = resolve(entry)
        if why == "unsafe_path":
            rep.skip("unsafe_path", f"{sid}: {entry}")
        elif p is None:
            rep.note("missing_image", entry)
        else:
            paths.append(str(p))
    return paths


def plain_name(value: str) -> bool:
    """True when ``value`` can be one path component (no separator, not ``.`` / ``..``, no NUL)."""
    return bool(value) and value not in (".", "..") and not any(c in value for c in "/\\\x00")


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
