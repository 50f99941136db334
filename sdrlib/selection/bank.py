"""The selection bank: N training reports drawn at random (paper C.4).

The bank (paper C.4: N = 5000 training reports drawn at random) is a seeded uniform draw without
replacement (:func:`draw_bank_records` for notebook 01's bank, :func:`sample_bank` for the
``selection.bank_size`` subset notebooks 05 and 06 score against), recorded in the bank's ``meta``;
the first N reports of a split file would be a narrow group of patients and studies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sdrlib.embedding import ReportBank
from sdrlib.selection.errors import SelectionError

__all__ = ["head_bank", "draw_indices", "draw_bank_records", "sample_bank"]


def head_bank(bank: Any, n: int) -> Any:
    """The first ``n`` reports of a :class:`~sdrlib.embedding.ReportBank` (``n <= 0`` or ``n >= N``: the bank itself).

    Not the paper's draw (C.4 draws the bank at random): notebooks 05 and 06 use :func:`sample_bank`.
    """
    return _bank_rows(bank, np.arange(n), f"[:{n}]") if 0 < n < len(bank) else bank


def _bank_rows(bank: Any, rows: np.ndarray, tag: str, meta: dict | None = None) -> Any:
    """The reports ``rows`` (increasing) of a ReportBank, as a new bank."""
    mats, offs, sents = {}, {}, {}
    for s in bank.section_offsets:
        o, m, txt = bank.offsets(s), bank.matrix(s), bank.sentences[s]
        lens = o[rows + 1] - o[rows]
        take = (np.concatenate([np.arange(o[r], o[r + 1]) for r in rows]) if len(rows)
                else np.zeros(0, np.int64)).astype(np.int64)
        mats[s], offs[s] = m[take], np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        sents[s] = [txt[i] for i in take]
    return ReportBank(ids=[bank.ids[r] for r in rows], section_matrices=mats, section_offsets=offs, sentences=sents,
                      encoder_id=bank.encoder_id, corpus_hash=f"{bank.corpus_hash}{tag}",
                      meta={**bank.meta, **(meta or {})})


def draw_indices(n_total: int, n: int, seed: int) -> np.ndarray:
    """``n`` of ``range(n_total)`` drawn uniformly without replacement with ``seed``, increasing; shape (n,).

    ``n <= 0`` or ``n >= n_total``: all of them (``arange(n_total)``). The same seed gives the same draw
    (numpy's ``default_rng(seed).choice``). Example: ``draw_indices(10, 3, 0)`` -> three increasing indices.
    """
    if isinstance(n_total, bool) or not isinstance(n_total, (int, np.integer)) or n_total < 0:
        raise SelectionError(f"n_total must be an integer >= 0, got {n_total!r}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise SelectionError(f"n (reports to draw) must be an integer, got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise SelectionError(f"seed must be an integer >= 0, got {seed!r}")
    if n <= 0 or n >= n_total:
        return np.arange(n_total, dtype=np.int64)
    return np.sort(np.random.default_rng(int(seed)).choice(int(n_total), size=int(n), replace=False)).astype(np.int64)


def _draw_meta(n_total: int, n: int, seed: int) -> dict:
    whole = n <= 0 or n >= n_total
    return {"draw": "all" if whole else "random", "seed": int(seed), "n": int(n_total if whole else n),
            "of": int(n_total)}


def draw_bank_records(records: Sequence[Any], n: int, seed: int) -> tuple[list, dict]:
    """The training reports of the selection bank: ``n`` of ``records`` drawn at random (paper C.4).

    Returns ``(records, meta)``: the drawn records in their split order (:func:`draw_indices`; ``n <= 0`` or
    ``n >= len(records)``: all of them) and ``{"bank_draw": {"draw": "random" | "all", "seed", "n", "of"}}``
    for :attr:`ReportBank.meta <sdrlib.embedding.ReportBank>` (notebook 01 records it in the saved bank).
    """
    rows = draw_indices(len(records), n, seed)
    return [records[i] for i in rows], {"bank_draw": _draw_meta(len(records), n, seed)}


def sample_bank(bank: Any, n: int, seed: int) -> Any:
    """``n`` reports of a :class:`~sdrlib.embedding.ReportBank` drawn at random with ``seed`` (``selection.bank_size``).

    Notebooks 05 (selection) and 06 (pruning) both call it with the profile's seed, so they score against
    the same reports. ``n <= 0`` or ``n >= N``: the bank itself, unchanged. The result's ``meta`` adds
    ``{"bank_sample": {"draw", "seed", "n", "of"}}`` to the bank's own (notebook 01's ``bank_draw``).
    """
    rows = draw_indices(len(bank), n, seed)
    if len(rows) == len(bank):
        return bank
    return _bank_rows(bank, rows, f"[random {n} seed {seed}]", {"bank_sample": _draw_meta(len(bank), n, seed)})
