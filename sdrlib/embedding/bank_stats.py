"""What a bank build costs and holds: notebook 01's cache check and bank table.

- :func:`build_cold_then_warm`: build a :class:`~sdrlib.embedding.ReportBank` twice through one embedder, the
  second time from the on-disk cache alone, and tabulate what each build encoded and how long it took;
- :func:`bank_table`: reports, sentences, dimension, mean sentences per report and empty sets per section.
"""
from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from sdrlib.embedding.bank import SECTIONS, ReportBank
from sdrlib.embedding.errors import EmbeddingError

__all__ = ["build_cold_then_warm", "bank_table"]


def build_cold_then_warm(emb: Any, findings: Sequence[str], impressions: Sequence[str], ids: Sequence[str]
                         ) -> tuple[ReportBank, "pd.DataFrame"]:
    """``(bank, stats)``: the bank of ``len(ids)`` reports built twice with the embedder ``emb``.

    The first build encodes what the on-disk cache lacks (on a fresh cache: every distinct sentence, the cold cost);
    the second must be served from the cache alone, and :class:`~sdrlib.embedding.errors.EmbeddingError` is raised
    if it calls the encoder. ``stats`` is one row: ``reports``, ``sentences``, ``unique sentences``, ``sentences per
    unique``, the first build's ``encoded`` / cache ``hits`` / encoder calls, the warm build's encoder calls, both
    wall times in seconds (``first s``, ``warm s``, their ratio) and ``truncated sentences`` (cut at the encoder's
    length limit). The embedder's counters are reset before each build."""
    import pandas as pd

    times, stats = [], []
    for _ in range(2):
        emb.reset_stats()
        t0 = time.perf_counter()
        bank = ReportBank.build(emb, findings, impressions, ids=list(ids))
        times.append(time.perf_counter() - t0)
        stats.append(emb.stats.copy())
    first, warm = stats
    if warm["forward_calls"]:
        raise EmbeddingError(f"a warm re-build called the encoder {warm['forward_calls']} times; the cache failed")
    n_sent = sum(len(bank.sentences[s]) for s in SECTIONS)
    n_unique = len(set(bank.sentences["findings"]) | set(bank.sentences["impression"]))
    row = {"reports": len(bank), "sentences": n_sent, "unique sentences": n_unique,
           "sentences per unique": n_sent / max(n_unique, 1),
           "encoded at first build": first["encoded"], "cache hits at first build": first["hits"],
           "encoder calls (first)": first["forward_calls"], "encoder calls (warm)": warm["forward_calls"],
           "first s": times[0], "warm s": times[1], "first/warm": times[0] / max(times[1], 1e-9),
           "truncated sentences": first["truncated"]}
    return bank, pd.DataFrame([row])


def bank_table(bank: ReportBank) -> "pd.DataFrame":
    """Rows ``reports``, ``sentences``, ``dim``, ``mean per report``, ``empty sets``; one column per section."""
    import pandas as pd

    return pd.DataFrame({s: {"reports": len(bank), "sentences": bank.matrix(s).shape[0],
                             "dim": bank.matrix(s).shape[1],
                             "mean per report": float(np.diff(bank.offsets(s)).mean()),
                             "empty sets": int((np.diff(bank.offsets(s)) == 0).sum())}
                         for s in SECTIONS})
