"""Small file helpers: atomic writes and JSON, never pickle.

An atomic write goes to a temporary file in the destination folder and is moved
into place with :func:`os.replace`, so a reader sees either the old or the new
file, never a half-written one, and an interrupted run leaves no corrupt file.

Example: ``atomic_write_text(Path("results/a.md"), "# A\\n")``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

__all__ = ["atomic_write_bytes", "atomic_write_text", "atomic_write_json", "atomic_save", "read_json"]


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


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Write ``obj`` as indented, key-sorted JSON, atomically."""
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def read_json(path: str | os.PathLike) -> Any:
    """Read a JSON file; a missing file raises ``FileNotFoundError`` naming it."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    return json.loads(path.read_text(encoding="utf-8"))
