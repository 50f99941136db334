"""The packed report bank: N reports' Findings and Impression embedding sets.

:class:`ReportBank` packs the sets as one sentence matrix plus offsets per section, saved as one
``.npz`` (loaded with ``allow_pickle=False``) that embeds its JSON record of encoder and corpus
identity (a ``.json`` copy is written next to it for people). A save is one file written by temp
file + ``os.replace``; loading checks the record, shapes and offsets and refuses (naming the
file) anything inconsistent, including banks saved by the older two-file format.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from sdrlib.embedding.embedder import SentenceEmbedder
from sdrlib.embedding.errors import BankNotFoundError, EmbeddingError
from sdrlib.io import atomic_save, atomic_write_json
from sdrlib.reports import normalize_text, split_sentences

__all__ = ["SECTIONS", "ReportBank"]

SECTIONS = ("findings", "impression")
_BANK_FORMAT = "sdr-report-bank/2"  # one npz holding the arrays and their record


def _corpus_hash(ids: Sequence[str], findings: Sequence[str], impressions: Sequence[str]) -> str:
    h = hashlib.sha256()
    for i, f, im in zip(ids, findings, impressions):
        for part in (i, normalize_text(f), normalize_text(im)):
            h.update(part.encode("utf-8"))
            h.update(b"\x00")
    return h.hexdigest()


@dataclass
class ReportBank:
    """N reports' Findings and Impression embedding sets, packed.

    For each section ``s``: ``matrix(s)`` has shape (S_s, d) (all sentences of
    all reports, float32, unit-norm) and ``offsets(s)`` shape (N + 1,) with report
    ``t``'s sentences in rows ``offsets(s)[t]:offsets(s)[t+1]`` (an empty section
    is an empty range). ``sentences[s]`` keeps the texts, ``ids`` the report ids.
    """

    ids: list[str]
    section_matrices: dict[str, np.ndarray]
    section_offsets: dict[str, np.ndarray]
    sentences: dict[str, list[str]]
    encoder_id: str
    corpus_hash: str
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    def matrix(self, section: str) -> np.ndarray:
        """All sentences of ``section``, shape (S, d), float32, unit-norm rows."""
        return self.section_matrices[self._sec(section)]

    def offsets(self, section: str) -> np.ndarray:
        """Offsets of ``section``, shape (N + 1,), int64: report t is ``matrix[o[t]:o[t+1]]``."""
        return self.section_offsets[self._sec(section)]

    def sets(self, section: str) -> list[np.ndarray]:
        """One ``(n_t, d)`` view per report."""
        m, o = self.matrix(section), self.offsets(section)
        return [m[o[t]:o[t + 1]] for t in range(len(self.ids))]

    @staticmethod
    def _sec(section: str) -> str:
        if section not in SECTIONS:
            raise EmbeddingError(f"unknown section {section!r}; use one of {SECTIONS}")
        return section

    @classmethod
    def build(cls, embedder: SentenceEmbedder, findings: Sequence[str], impressions: Sequence[str],
              ids: Sequence[str] | None = None) -> "ReportBank":
        """Split, encode (through the cache) and pack a corpus of reports."""
        if len(findings) != len(impressions):
            raise EmbeddingError(f"findings ({len(findings)}) and impressions ({len(impressions)}) differ in length")
        ids = [str(i) for i in (ids if ids is not None else range(len(findings)))]
        if len(ids) != len(findings):
            raise EmbeddingError(f"ids ({len(ids)}) and reports ({len(findings)}) differ in length")
        if len(set(ids)) != len(ids):
            raise EmbeddingError("report ids must be unique")
        matrices, offsets, sentences = {}, {}, {}
        for sec, texts in (("findings", findings), ("impression", impressions)):
            sents = [split_sentences(t) for t in texts]
            lens = np.array([len(s) for s in sents], dtype=np.int64)
            offsets[sec] = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
            flat = [s for group in sents for s in group]
            matrices[sec] = embedder.encode(flat) if flat else np.zeros((0, embedder.dim), np.float32)
            sentences[sec] = flat
        return cls(ids=list(ids), section_matrices=matrices, section_offsets=offsets, sentences=sentences,
                   encoder_id=embedder.encoder_id, corpus_hash=_corpus_hash(ids, findings, impressions))

    def save(self, path: str | os.PathLike) -> Path:
        """Write ``<path>.npz`` (arrays + record, no pickle) and a ``<path>.json`` copy of the record.

        The ``.npz`` is the whole bank: its record (format, encoder and corpus identity, sizes,
        ``meta``) is stored inside it, and it is written to a temporary file and moved into place
        with ``os.replace``, so an interrupted save leaves either the old bank or the new one.
        The ``.json`` is written afterwards for people and tools; :meth:`load` does not read it.
        Returns the npz path.
        """
        path = Path(path)
        npz, js = path.with_suffix(".npz"), path.with_suffix(".json")
        record = {"format": _BANK_FORMAT, "encoder_id": self.encoder_id, "corpus_hash": self.corpus_hash,
                  "n_reports": len(self.ids), "dim": int(self.section_matrices["findings"].shape[1]),
                  "n_sentences": {s: len(self.sentences[s]) for s in SECTIONS}, **self.meta}
        arrays = {"ids": np.array(self.ids, dtype=str),
                  "record": np.array(json.dumps(record, sort_keys=True, default=str))}
        for s in SECTIONS:
            arrays[f"{s}_matrix"] = self.section_matrices[s]
            arrays[f"{s}_offsets"] = self.section_offsets[s]
            arrays[f"{s}_sentences"] = np.array(self.sentences[s], dtype=str)
        atomic_save(npz, lambda p: np.savez(p, **arrays))
        atomic_write_json(js, record)
        return npz

    @classmethod
    def load(cls, path: str | os.PathLike, expected_encoder_id: str | None = None) -> "ReportBank":
        """Load a saved bank; refuses one built with a different encoder than ``expected_encoder_id``.

        Raises
        ------
        BankNotFoundError
            No ``<path>.npz``.
        EmbeddingError
            Another encoder; or the file is unreadable (truncated, bad checksum), lacks its
            embedded record (saved by the older two-file format, whose ``.json`` may belong to
            another save), or its arrays disagree with the record or with each other. Every
            message names the file; the remedy is to rebuild the bank.
        """
        path = Path(path)
        npz = path.with_suffix(".npz")
        if not npz.exists():
            raise BankNotFoundError(f"report bank {npz} does not exist; build it with ReportBank.build(...).save()")
        rebuild = "delete it and rebuild it with ReportBank.build(...).save()"
        try:
            with np.load(npz, allow_pickle=False) as z:
                data = {k: z[k] for k in z.files}
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
            raise EmbeddingError(f"report bank {npz} is unreadable ({type(e).__name__}: {e}); {rebuild}") from e
        if "record" not in data:
            raise EmbeddingError(f"report bank {npz} has no embedded record (saved by an older sdrlib, whose "
                                 f"separate {npz.with_suffix('.json').name} may come from another save); {rebuild}")
        try:
            info = json.loads(str(data["record"][()]))
            if info.get("format") != _BANK_FORMAT:
                raise ValueError(f"format {info.get('format')!r}, expected {_BANK_FORMAT!r}")
            encoder_id, corpus_hash = str(info["encoder_id"]), str(info["corpus_hash"])
            n, dim = int(info["n_reports"]), int(info["dim"])
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise EmbeddingError(f"report bank {npz} has an unusable record ({e}); {rebuild}") from e
        if expected_encoder_id is not None and encoder_id != expected_encoder_id:
            raise EmbeddingError(f"bank {npz} was built with encoder {encoder_id}, "
                                 f"not {expected_encoder_id}; rebuild it")
        missing = [k for k in ["ids"] + [f"{s}_{a}" for s in SECTIONS for a in ("matrix", "offsets", "sentences")]
                   if k not in data]
        if missing:
            raise EmbeddingError(f"report bank {npz} lacks arrays {missing}; {rebuild}")
        problems = []
        if data["ids"].shape != (n,):
            problems.append(f"ids shape {data['ids'].shape} != ({n},)")
        for s in SECTIONS:
            m, o, sent = data[f"{s}_matrix"], data[f"{s}_offsets"], data[f"{s}_sentences"]
            if m.ndim != 2 or m.shape[1] != dim or m.dtype != np.float32:
                problems.append(f"{s} matrix {m.shape} {m.dtype}, expected (S, {dim}) float32")
            if o.shape != (n + 1,) or not np.issubdtype(o.dtype, np.integer):
                problems.append(f"{s} offsets {o.shape} {o.dtype}, expected ({n + 1},) integers")
            elif o[0] != 0 or (np.diff(o) < 0).any() or o[-1] != m.shape[0]:
                problems.append(f"{s} offsets do not run from 0 up to the {m.shape[0]} matrix rows")
            if sent.shape != (m.shape[0],):
                problems.append(f"{s}: {sent.shape[0] if sent.ndim else 0} sentences for {m.shape[0]} rows")
        if problems:
            raise EmbeddingError(f"report bank {npz} is inconsistent: {'; '.join(problems)}; {rebuild}")
        extra = {k: v for k, v in info.items()
                 if k not in ("format", "encoder_id", "corpus_hash", "n_reports", "dim", "n_sentences")}
        return cls(ids=[str(x) for x in data["ids"]],
                   section_matrices={s: data[f"{s}_matrix"] for s in SECTIONS},
                   section_offsets={s: data[f"{s}_offsets"].astype(np.int64, copy=False) for s in SECTIONS},
                   sentences={s: [str(x) for x in data[f"{s}_sentences"]] for s in SECTIONS},
                   encoder_id=encoder_id, corpus_hash=corpus_hash, meta=extra)
