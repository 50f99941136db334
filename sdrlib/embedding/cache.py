"""The on-disk sentence cache: ``normalised sentence -> float32 vector`` per encoder, in SQLite.

SQLite gives atomic commits (an interrupted run loses at most the batch in flight) and safe
concurrent readers; vectors are raw float32 bytes, never pickle. Every vector read back is
checked (length d, finite, norm within 1e-3 of 1); a corrupt file is moved aside and rebuilt
empty; a file that is not writable is opened read-only (see :mod:`sdrlib.embedding`).
"""

from __future__ import annotations

import os
import sqlite3
import time
import warnings
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from sdrlib.embedding.errors import EmbeddingCacheWarning, EmbeddingError

__all__ = ["SentenceCache"]


def _sqlite_code(e: BaseException) -> str:
    return str(getattr(e, "sqlite_errorname", "") or "")


def _is_corrupt(e: BaseException) -> bool:
    """Whether an SQLite error says the file's content is broken (not a database / malformed)."""
    code = _sqlite_code(e)
    if code:
        return code.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))
    text = str(e)
    return "malformed" in text or "not a database" in text


def _is_readonly(e: BaseException) -> bool:
    code = _sqlite_code(e)
    return code.startswith("SQLITE_READONLY") if code else "readonly" in str(e)


def _writable(path: Path) -> bool:
    """Whether the process may write ``path`` (an SQLite file) and create its -wal / -shm siblings."""
    if path.exists():
        return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # the nearest folder that exists must let us create the rest
    return os.access(folder, os.W_OK)


class SentenceCache:
    """``normalised sentence -> float32 vector`` for one encoder identity, in SQLite (WAL).

    ``readonly=None`` opens read-write when the file (and its folder) are writable and
    read-only (``mode=ro``) otherwise; ``True`` forces read-only, ``False`` read-write.
    Read-only: :meth:`get_many` serves hits, :meth:`put_many` stores nothing. A corrupt
    file is moved aside and replaced by an empty cache when writable (warning naming both
    files), refused with :class:`EmbeddingError` when read-only.
    """

    def __init__(self, path: Path, dim: int, readonly: bool | None = None):
        self.path, self.dim = Path(path), int(dim)
        self.readonly = (not _writable(self.path)) if readonly is None else bool(readonly)
        self._auto = readonly is None  # may fall back to read-only when a write is refused
        self._con: sqlite3.Connection | None = None
        self._has_vec = False
        if not self.readonly:
            try:
                self._run("opening", self._open_rw, lambda: None)
            except EmbeddingError as e:
                if not self._auto or e.__cause__ is None or not _is_readonly(e.__cause__):
                    raise
                self.close()  # not writable after all (a read-only mount os.access missed)
                self.readonly = True
        if self.readonly:
            self._open_ro()

    # ---- opening
    def _open_rw(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise EmbeddingError(f"cannot create the folder of embedding cache {self.path}: {e}") from e
        con = sqlite3.connect(str(self.path), timeout=60, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute("CREATE TABLE IF NOT EXISTS vec (text TEXT PRIMARY KEY, v BLOB NOT NULL)")
            con.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT)")
            row = con.execute("SELECT v FROM meta WHERE k='dim'").fetchone()
            if row is None:
                con.execute("INSERT OR IGNORE INTO meta VALUES ('dim', ?)", (str(self.dim),))
        except BaseException:
            con.close()
            raise
        self._con, self._has_vec = con, True
        self._check_dim(row)

    def _open_ro(self) -> None:
        if not self.path.exists():
            warnings.warn(f"embedding cache {self.path} does not exist and cannot be created here (folder not "
                          "writable): sentences are encoded in memory and not stored", EmbeddingCacheWarning,
                          stacklevel=4)
            return
        uri = self.path.resolve().as_uri() + "?mode=ro"
        try:
            try:
                con = sqlite3.connect(uri, uri=True, timeout=60, isolation_level=None)
                tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            except sqlite3.OperationalError as e:
                # a WAL database in a folder we cannot write: SQLite cannot create its -shm file.
                # Read it as immutable (no locking; every row read is validated anyway).
                if not (_sqlite_code(e).startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN")) or "readonly" in str(e)):
                    raise
                con = sqlite3.connect(uri + "&immutable=1", uri=True, timeout=60, isolation_level=None)
                tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            self._con, self._has_vec = con, "vec" in tables
            row = con.execute("SELECT v FROM meta WHERE k='dim'").fetchone() if "meta" in tables else None
        except sqlite3.Error as e:
            raise EmbeddingError(self._message("opening (read-only)", e)) from e
        self._check_dim(row)
        warnings.warn(f"embedding cache {self.path} is not writable: opened read-only; cached sentences are "
                      "served from it, new ones are encoded in memory and not stored", EmbeddingCacheWarning,
                      stacklevel=4)

    def _check_dim(self, row) -> None:
        if row is not None and str(row[0]) != str(self.dim):
            raise EmbeddingError(f"cache {self.path} holds {row[0]}-d vectors, encoder gives {self.dim}-d; "
                                 "it belongs to another encoder: delete it (it will be rebuilt)")

    # ---- error handling
    def _message(self, what: str, e: BaseException) -> str:
        if self.readonly and _is_corrupt(e):
            todo = ("it is read-only here, so it cannot be moved aside: ask its owner to delete it, "
                    "or use another cache_dir (or cache_dir=None)")
        elif "locked" in str(e):
            todo = "another process held it locked for over 60 s; retry, or use another cache_dir"
        else:
            todo = (f"the cache only saves recomputation: delete {self.path} (and any {self.path.name}-wal / "
                    "-shm next to it) and it will be rebuilt, or use cache_dir=None")
        return f"embedding cache {self.path}: {what} failed ({type(e).__name__}: {e}); {todo}"

    def _quarantine(self, e: BaseException) -> None:
        """Move a corrupt cache (and its WAL) aside so an empty one can take its place."""
        self.close()
        aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
        try:
            if self.path.exists():
                os.replace(self.path, aside)
            wal = self.path.with_name(self.path.name + "-wal")
            if wal.exists():  # a stale WAL must not be replayed into the new, empty file
                os.replace(wal, aside.with_name(aside.name + "-wal"))
            self.path.with_name(self.path.name + "-shm").unlink(missing_ok=True)
        except OSError as err:
            raise EmbeddingError(f"embedding cache {self.path} is corrupt ({e}) and could not be moved aside "
                                 f"({err}); delete it and it will be rebuilt") from err
        warnings.warn(f"embedding cache {self.path} is corrupt ({e}); moved it to {aside} and started an empty "
                      f"cache at {self.path} (its sentences are re-encoded as needed; delete {aside} when you "
                      "no longer need it)", EmbeddingCacheWarning, stacklevel=5)

    def _run(self, what: str, op, after_rebuild):
        """Run ``op()``; on corruption (writable cache) rebuild and return ``after_rebuild()``."""
        try:
            return op()
        except sqlite3.Error as e:
            if not self.readonly and _is_corrupt(e):
                self._quarantine(e)
                try:
                    self._open_rw()
                except sqlite3.Error as e2:
                    raise EmbeddingError(self._message("re-creating", e2)) from e2
                return after_rebuild()
            raise EmbeddingError(self._message(what, e)) from e

    # ---- access
    def get_many(self, keys: Sequence[str]) -> tuple[dict[str, np.ndarray], list[str]]:
        """Valid cached vectors for ``keys``, and the keys whose stored row is invalid.

        A row is valid when its blob holds exactly ``dim`` float32 values, all finite, with
        norm within 1e-3 of 1. Invalid rows are never returned.
        """
        if self._con is None or not self._has_vec:
            return {}, []

        def op():
            found: dict[str, np.ndarray] = {}
            bad: list[str] = []
            nbytes = 4 * self.dim
            for i in range(0, len(keys), 500):
                chunk = list(keys[i:i + 500])
                q = f"SELECT text, v FROM vec WHERE text IN ({','.join('?' * len(chunk))})"
                rows = self._con.execute(q, chunk).fetchall()
                ok = [(t, b) for t, b in rows if isinstance(b, bytes) and len(b) == nbytes]
                bad.extend(t for t, b in rows if not (isinstance(b, bytes) and len(b) == nbytes))
                if not ok:
                    continue
                mat = np.frombuffer(b"".join(b for _, b in ok), dtype=np.float32).reshape(len(ok), self.dim)
                with np.errstate(all="ignore"):
                    good = np.isfinite(mat).all(axis=1)
                    good &= np.abs(np.linalg.norm(mat.astype(np.float64), axis=1) - 1.0) <= 1e-3
                for (t, _), row, g in zip(ok, mat, good):
                    if g:
                        found[t] = row
                    else:
                        bad.append(t)
            return found, bad

        return self._run("reading", op, lambda: ({}, []))

    def put_many(self, items: Iterable[tuple[str, np.ndarray]], replace: Iterable[str] = ()) -> None:
        """Store vectors (first writer wins), overwriting the rows of the keys in ``replace``; no-op read-only."""
        if self.readonly or self._con is None:
            return
        replace = set(replace)
        rows = [(k, np.ascontiguousarray(v, dtype=np.float32).tobytes()) for k, v in items]
        keep = [r for r in rows if r[0] not in replace]
        over = [r for r in rows if r[0] in replace]

        def op():
            self._con.execute("BEGIN IMMEDIATE")
            try:
                self._con.executemany("INSERT OR IGNORE INTO vec VALUES (?, ?)", keep)
                self._con.executemany("INSERT OR REPLACE INTO vec VALUES (?, ?)", over)
                self._con.execute("COMMIT")
            except BaseException:
                try:
                    self._con.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                raise

        try:
            self._run("writing", op, op)  # after a rebuild, write into the fresh file
        except EmbeddingError as e:
            if not self._auto or not _is_readonly(e.__cause__ or e):
                raise
            # the file turned out not to be writable (e.g. a read-only mount os.access missed)
            self.readonly = True
            warnings.warn(f"embedding cache {self.path} is not writable ({e.__cause__}): new sentences are kept "
                          "in memory and not stored", EmbeddingCacheWarning, stacklevel=3)

    def __len__(self) -> int:
        if self._con is None or not self._has_vec:
            return 0
        return int(self._run("counting", lambda: self._con.execute("SELECT COUNT(*) FROM vec").fetchone()[0],
                             lambda: 0))

    def close(self) -> None:
        if self._con is not None:
            try:
                self._con.close()
            except sqlite3.Error:
                pass
            self._con = None
