"""Small file helpers: atomic writes and JSON, never pickle; text of any common encoding; output paths.

An atomic write goes to a temporary file in the destination folder and is moved
into place with :func:`os.replace`, so a reader sees either the old or the new
file, never a half-written one, and an interrupted run leaves no corrupt file.

Example: ``atomic_write_text(Path("results/a.md"), "# A\\n")``.

Text read from files a person or a spreadsheet tool may have saved goes through :func:`decode_text`
(:func:`read_text`): a byte-order mark decides the encoding (UTF-8, UTF-16 LE / BE, UTF-32 LE / BE),
else UTF-8, else (``lenient=True``) Windows-1252, else Latin-1; the result says which was used, so a
caller can count files that were not plain UTF-8. An output path given on a command line goes
through :func:`output_path` (a leading ``~`` expanded, or one line saying why it cannot be); a
script's ``main`` wrapped in :func:`one_line_errors` ends a file it cannot use in one line, exit 2; its parser, a
:class:`OneLineParser`, does the same for a bad argument (argparse's default prints its usage block first), and
:func:`positive_int` reads a count argument.
"""

from __future__ import annotations

import argparse
import codecs
import functools
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, NoReturn

from sdrlib.errors import SDRError

__all__ = ["atomic_write_bytes", "atomic_write_text", "atomic_write_json", "atomic_save", "read_json",
           "Decoded", "TextDecodeError", "bom_encoding", "decode_text", "read_text", "OutputPathError", "output_path",
           "one_line_errors", "OneLineParser", "positive_int"]

#: byte-order marks, longest first (the UTF-32 LE mark begins with the UTF-16 LE one)
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


def atomic_save(path: str | os.PathLike, writer: Callable[[Path], Any]) -> Path:
    """Call ``writer(tmp_path)`` then move ``tmp_path`` onto ``path`` atomically.

    ``writer`` receives a path in the same folder (same file system) with the
    same suffix as ``path``, so libraries that infer the format from the suffix
    (``np.save``, ``df.to_parquet``) work. On any error the temporary file is
    removed and ``path`` is left untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".tmp{path.suffix}", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        writer(tmp_path)
        os.replace(tmp_path, path)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
    return path


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (see module docstring)."""
    return atomic_save(path, lambda p: p.write_bytes(data))


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any, *, sort_keys: bool = True) -> Path:
    """Write ``obj`` as indented JSON, atomically: keys sorted, or with ``sort_keys=False`` in the order the
    writer built them (a run record, whose readers turn its dicts into table columns in that order)."""
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=sort_keys, default=str) + "\n")


def read_json(path: str | os.PathLike) -> Any:
    """Read a JSON file; a missing file raises ``FileNotFoundError`` naming it."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    return json.loads(path.read_text(encoding="utf-8"))


class TextDecodeError(SDRError, ValueError):
    """A file's bytes are not text in the encoding its byte-order mark (or the caller) requires."""


@dataclass(frozen=True)
class Decoded:
    """Text decoded by :func:`decode_text` and how.

    ``encoding`` is the codec used (``utf-8``, ``utf-8-sig``, ``utf-16-le``, ``utf-16-be``, ``utf-32-le``,
    ``utf-32-be``, ``cp1252`` or ``latin-1``); ``bom`` whether a byte-order mark chose it; ``other`` is
    True when the bytes were not plain UTF-8 (with or without its BOM): what a loader counts.
    """

    text: str
    encoding: str
    bom: bool

    @property
    def other(self) -> bool:
        return self.encoding not in ("utf-8", "utf-8-sig")

    @property
    def note(self) -> str:
        """A counter name for a non-UTF-8 file: ``decoded_utf16`` / ``decoded_utf32`` / ``decoded_cp1252`` /
        ``decoded_latin1``; ``""`` for UTF-8."""
        if not self.other:
            return ""
        return "decoded_" + self.encoding.replace("-le", "").replace("-be", "").replace("-", "")


def bom_encoding(raw: bytes) -> str | None:
    """The codec a byte-order mark at the start of ``raw`` names, else None.

    Example: ``bom_encoding(b"\\xff\\xfeh\\x00")`` -> ``"utf-16-le"``; ``bom_encoding(b"abc")`` -> None.
    """
    for mark, enc in _BOMS:
        if raw.startswith(mark):
            return enc
    return None


def decode_text(raw: bytes, what: str = "text", *, lenient: bool = True) -> Decoded:
    """Decode file bytes: by their byte-order mark, else as UTF-8, else (``lenient``) Windows-1252 / Latin-1.

    The mark is removed from the text. Bytes that break the encoding their mark names (an odd
    number of bytes after a UTF-16 mark) raise :class:`TextDecodeError` naming ``what``, the
    encoding and the byte offset; so do non-UTF-8 bytes without a mark when ``lenient`` is False
    (a file this project wrote itself is UTF-8; guessing would hide a damaged one).
    Example: ``decode_text("Impression".encode("utf-16"))`` -> ``Decoded("Impression", "utf-16-le", True)``.
    """
    enc = bom_encoding(raw)
    if enc is not None:
        try:
            text = raw.decode(enc)
        except UnicodeDecodeError as e:
            raise TextDecodeError(f"{what}: starts with a {enc.upper()} byte-order mark but is not {enc.upper()} "
                                  f"text ({e.reason} at byte {e.start}); re-save it as UTF-8") from None
        return Decoded(text[1:] if enc != "utf-8-sig" else text, enc, True)  # utf-8-sig drops its own mark
    try:
        return Decoded(raw.decode("utf-8"), "utf-8", False)
    except UnicodeDecodeError as e:
        if not lenient:
            raise TextDecodeError(f"{what}: not UTF-8 text ({e.reason} at byte {e.start}); re-save it as "
                                  "UTF-8") from None
    try:
        return Decoded(raw.decode("cp1252"), "cp1252", False)
    except UnicodeDecodeError:
        return Decoded(raw.decode("latin-1"), "latin-1", False)


def read_text(path: str | os.PathLike, *, lenient: bool = True) -> Decoded:
    """The text of the file ``path`` through :func:`decode_text` (``what`` is the path); OSError propagates."""
    return decode_text(Path(path).read_bytes(), str(path), lenient=lenient)


class OutputPathError(SDRError, ValueError):
    """An output path given by a user cannot be used (the message names it and says why)."""


def output_path(value: str | os.PathLike, what: str = "output path") -> Path:
    """A user's output path with a leading ``~`` / ``~user`` expanded; :class:`OutputPathError` when it cannot be.

    ``pathlib.Path.expanduser`` raises a bare ``RuntimeError`` for an unknown ``~user`` and
    ``os.path.expanduser`` silently keeps the ``~`` (a folder literally named ``~nosuchuser`` would be
    created). Also refused: an empty path and one containing a NUL. Nothing is created here.
    Example: ``output_path("~/out")`` -> ``Path("/home/me/out")``;
    ``output_path("~nosuchuser/x", "--out")`` raises ``--out ~nosuchuser/x: cannot expand '~nosuchuser' ...``.
    """
    text = os.fspath(value)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text or "\x00" in text:
        raise OutputPathError(f"{what} {text!r}: not a usable path; give a folder name")
    out = os.path.expanduser(text)
    if out.startswith("~"):
        raise OutputPathError(f"{what} {text}: cannot expand {text.split(os.sep)[0]!r} (no such user, or HOME "
                              "unset); give an absolute path or one relative to this folder")
    return Path(out)


def one_line_errors(prog: str) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """Decorator for a command's ``main(argv) -> int``: a deliberate error (:class:`~sdrlib.errors.SDRError`,
    whose message names the input) or an ``OSError`` (``<file>: <reason>``) is printed as one line
    ``<prog>: ...`` on stderr and ``main`` returns 2, instead of a traceback.

    Example: ``@one_line_errors("hash_outputs")`` above ``def main(argv=None)``.
    """
    def wrap(main: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(main)
        def run(*args: Any, **kwargs: Any) -> int:
            try:
                return main(*args, **kwargs)
            except (SDRError, OSError) as e:
                what = f"{e.filename}: {e.strerror or e}" if isinstance(e, OSError) and e.filename else str(e)
                print(f"{prog}: {what}", file=sys.stderr)
                return 2
        return run
    return wrap


class OneLineParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose usage error is one line on stderr, ``<prog>: <problem> (see --help)``, and
    exit 2 (the default prints the usage block first). Subcommands made by ``add_subparsers`` share the class."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def positive_int(text: str, what: str = "a whole number") -> int:
    """A count on a command line (``argparse`` ``type=``): ``text`` as an integer >= 1, else
    ``argparse.ArgumentTypeError`` ``expected <what>, got 'x'`` or ``must be >= 1, got 0`` (argparse names the
    argument before it). Example: ``positive_int("3")`` -> 3; ``type=lambda t: positive_int(t, "a whole number of
    seconds")`` says what is counted."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v
