"""What the sentence embeddings look like: the measurements of notebook 01's sections 7 and 8.

Every function reads unit-norm sentence embeddings (rows of a :class:`~sdrlib.embedding.ReportBank` or an
encoder's output) and returns plain numbers, indices or frames; none calls an encoder. The labeler is passed in
(``label``) so that this module does not depend on :mod:`sdrlib.clinical`.

- :func:`pick_figure_study`: which test study notebook 01 draws as the paper's Fig. 1;
- :func:`distinct_context`: rows of distinct bank sentences, the grey context of that figure;
- :func:`spread_anchor_pairs`: anchors spread over a sentence set, each followed by its nearest other sentence;
- :func:`nearest_other_similarity`: per sampled sentence, the cosine to the nearest *different* sentence;
- :func:`geometry_summary`: the numbers behind the geometry figure, as a table;
- :func:`impression_restatement`: how close each Impression sentence is to its own report's Findings, against
  other reports' Findings;
- :func:`opposite_neighbours`: sentences whose nearest neighbour the labeler reads with the opposite polarity;
- :func:`embedding_conclusion`: notebook 01's closing sentences, from its result tables.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from sdrlib import table_names
from sdrlib.reports import split_sentences

__all__ = ["pick_figure_study", "distinct_context", "spread_anchor_pairs", "nearest_other_similarity", "geometry_summary",
           "impression_restatement", "opposite_neighbours", "embedding_conclusion"]

#: cosine above which two rows count as the same sentence (identical text, float rounding)
SAME = 0.9999


def pick_figure_study(records: Sequence[Any], max_sentences: int = 9) -> int:
    """Index in ``records`` of the study drawn as Fig. 1: the most sentences (Findings + Impression, by
    :func:`~sdrlib.reports.split_sentences`) up to ``max_sentences``, ties broken by more Impression sentences,
    then by the first such study. A study over the limit is chosen only when every study is over it."""
    if not len(records):
        raise ValueError("pick_figure_study: no records")
    n = [(len(split_sentences(r.findings)), len(split_sentences(r.impression))) for r in records]
    return max(range(len(records)),
               key=lambda i: (sum(n[i]) if sum(n[i]) <= max_sentences else -1, n[i][1]))


def distinct_context(sentences: Sequence[str], rows: Any, n: int, seed: int) -> np.ndarray:
    """``(min(n, k), d)``: rows of up to ``n`` distinct sentences drawn without replacement with ``seed``, in their
    order in ``sentences`` (``rows`` ``(len(sentences), d)``, one row per sentence; ``k`` distinct texts; the row
    of a repeated text is that of its first occurrence)."""
    rows = np.asarray(rows)
    if rows.shape[0] != len(sentences):
        raise ValueError(f"distinct_context: {len(sentences)} sentences but {rows.shape[0]} rows")
    first = list({t: i for i, t in reversed(list(enumerate(sentences)))}.values())
    pick = np.random.default_rng(seed).choice(first, size=min(n, len(first)), replace=False)
    return rows[np.sort(pick)]


def spread_anchor_pairs(U: Any, n_pairs: int) -> list[int]:
    """``[a1, n1, a2, n2, ...]``: ``n_pairs`` anchors spread over the rows of ``U`` ``(k, d)`` (unit norm), each
    followed by its nearest *other* row. Anchors are greedy farthest-point picks: the first row, then each time the
    row whose highest cosine to the anchors so far is lowest (deterministic). Needs ``k >= 2``."""
    U = np.asarray(U, dtype=np.float64)
    if U.ndim != 2 or U.shape[0] < 2:
        raise ValueError(f"spread_anchor_pairs: needs at least two rows, got shape {U.shape}")
    anchors = [0]
    for _ in range(max(1, n_pairs) - 1):
        anchors.append(int(np.argmin((U @ U[anchors].T).max(axis=1))))
    S = U @ U.T
    np.fill_diagonal(S, -1)
    return [k for a in anchors for k in (a, int(np.argmax(S[a])))]


def nearest_other_similarity(M: Any, take: Any) -> np.ndarray:
    """``(len(take),)``: for each row ``take[i]`` of ``M`` ``(k, d)`` (unit norm), the highest cosine to a row of
    ``M`` that is not the same sentence (cosine above :data:`SAME` is ignored; -1 when there is none)."""
    M = np.asarray(M, dtype=np.float64)
    sims = M[np.asarray(take)] @ M.T
    sims[sims > SAME] = -1  # ignore identical sentences
    return sims.max(axis=1)


def geometry_summary(S: Any, nn_sim: Any) -> "pd.DataFrame":
    """The numbers behind notebook 01's geometry figure, as rows ``statistic``, ``value``.

    ``S`` ``(k, k)``: cosines between ``k`` (even) sentences shown in consecutive pairs, the first pair the
    hand-written paraphrase, then anchor ``A_p`` and nearest neighbour ``N_p``; ``nn_sim`` ``(n,)``: sampled
    sentences' cosine to their nearest different sentence. Rows: ``paraphrase_cosine``, ``A<p>-N<p>_cosine`` per
    anchor pair, ``unpaired_mean`` / ``unpaired_max`` (every other pair of sentences shown), ``nearest_median``,
    ``nearest_share_ge_0.9`` and ``n_sampled``."""
    import pandas as pd

    S = np.asarray(S, dtype=np.float64)
    k = S.shape[0]
    if S.shape != (k, k) or k < 2 or k % 2:
        raise ValueError(f"geometry_summary: S must be square with an even side >= 2, got {S.shape}")
    nn_sim = np.asarray(nn_sim, dtype=np.float64).ravel()
    pair = [S[2 * p, 2 * p + 1] for p in range(k // 2)]
    cross = [S[i, j] for i in range(k) for j in range(i + 1, k) if not (i % 2 == 0 and j == i + 1)]
    rows = [("paraphrase_cosine", pair[0])] + [(f"A{p}-N{p}_cosine", v) for p, v in enumerate(pair[1:], 1)]
    rows += [("unpaired_mean", float(np.mean(cross)) if cross else np.nan),
             ("unpaired_max", float(np.max(cross)) if cross else np.nan),
             ("nearest_median", float(np.median(nn_sim))), ("nearest_share_ge_0.9", float((nn_sim >= 0.9).mean())),
             ("n_sampled", float(len(nn_sim)))]
    return pd.DataFrame(rows, columns=["statistic", "value"])


def impression_restatement(findings_sets: Sequence[Any], impression_sets: Sequence[Any]) -> "pd.DataFrame":
    """Does an Impression sentence restate its own report's Findings? One row per Impression sentence.

    ``findings_sets[t]`` ``(n_t, d)`` and ``impression_sets[t]`` ``(m_t, d)``: report ``t``'s unit-norm sentence
    rows (e.g. ``bank.sets("findings")``, ``bank.sets("impression")``). Columns: ``report`` (``t``), ``own``
    (highest cosine to a sentence of its own Findings), ``others_median`` (median, over the other reports with
    Findings, of the highest cosine to theirs), ``beats_share`` (share of those other reports whose highest cosine
    is below ``own``: 1 = closer to its own Findings than to any other report's). Reports without Findings or
    without Impression give no rows."""
    import pandas as pd

    if len(findings_sets) != len(impression_sets):
        raise ValueError(f"impression_restatement: {len(findings_sets)} Findings sets, {len(impression_sets)} "
                         "Impression sets")
    cols = ["report", "own", "others_median", "beats_share"]
    F = [np.asarray(f, dtype=np.float64) for f in findings_sets]
    with_f = [t for t, f in enumerate(F) if len(f)]  # reports that have Findings, in order
    rows_t = [t for t in with_f if len(impression_sets[t])]
    if not rows_t:
        return pd.DataFrame(columns=cols)
    Fall = np.concatenate([F[t] for t in with_f])
    starts = np.cumsum([0] + [len(F[t]) for t in with_f])[:-1]
    col_of = {t: c for c, t in enumerate(with_f)}
    out = []
    for t in rows_t:  # one matrix product per report with an Impression: (m, all Findings) -> (m, reports)
        EI = np.asarray(impression_sets[t], dtype=np.float64)
        best = np.maximum.reduceat(EI @ Fall.T, starts, axis=1)
        own = best[:, col_of[t]]
        others = np.delete(best, col_of[t], axis=1)
        for j in range(len(EI)):
            out.append({"report": t, "own": float(own[j]),
                        "others_median": float(np.median(others[j])) if others.shape[1] else np.nan,
                        "beats_share": float((others[j] < own[j]).mean()) if others.shape[1] else np.nan})
    return pd.DataFrame(out, columns=cols)


def _opposite(a: Mapping[str, int], b: Mapping[str, int]) -> list[str]:
    """Observations (not No Finding) one label dict reads present (1) and the other absent (0)."""
    return sorted(k for k in set(a) & set(b) if k != "No Finding" and {a[k], b[k]} == {0, 1})


def opposite_neighbours(sentences: Sequence[str], U: Any, label: Callable[[str], Mapping[str, int]]
                        ) -> "pd.DataFrame":
    """Sentences whose nearest other sentence says the opposite, as the labeler reads them.

    ``sentences`` (``k`` distinct texts) and ``U`` ``(k, d)`` their unit-norm rows; ``label(text)`` a CheXpert label
    dict (1 positive, 0 negative, -1 uncertain; e.g. :func:`sdrlib.clinical.label_report`). For each sentence its
    nearest other sentence by cosine; a row when some observation but No Finding is 1 in one and 0 in the other.
    Columns ``sentence``, ``nearest``, ``cosine``, ``observations`` (joined by ", "), highest cosine first; the
    frame's ``attrs["n_sentences"]`` holds ``k``, the denominator."""
    import pandas as pd

    U = np.asarray(U, dtype=np.float64)
    if U.shape[0] != len(sentences) or len(sentences) < 2:
        raise ValueError(f"opposite_neighbours: {len(sentences)} sentences, {U.shape[0]} rows (need >= 2, equal)")
    nn, best = np.empty(len(U), dtype=np.int64), np.empty(len(U))
    for i0 in range(0, len(U), 1024):  # row blocks: k x k at once would not fit for large banks
        S = U[i0:i0 + 1024] @ U.T
        S[np.arange(len(S)), np.arange(i0, i0 + len(S))] = -np.inf
        nn[i0:i0 + len(S)], best[i0:i0 + len(S)] = S.argmax(axis=1), S.max(axis=1)
    labels = [label(s) for s in sentences]
    rows = [{"sentence": sentences[i], "nearest": sentences[j], "cosine": float(best[i]),
             "observations": ", ".join(o)}
            for i, j in enumerate(nn) if (o := _opposite(labels[i], labels[j]))]
    out = pd.DataFrame(rows, columns=["sentence", "nearest", "cosine", "observations"])
    out = out.sort_values("cosine", ascending=False, kind="stable").reset_index(drop=True)
    out.attrs["n_sentences"] = len(sentences)
    return out


def embedding_conclusion(results_dir: str | Path) -> list[str]:
    """Notebook 01's closing sentences, every number read from its result tables in ``results_dir``:
    ``01_embedding_cache`` (warm re-run), ``01_sentence_geometry`` (paraphrase, nearest-neighbour cosines),
    ``01_impression_restatement`` and ``01_opposite_neighbours`` (summary rows). A missing table gives a line
    saying so. Descriptive only: no sentence here compares two systems, so none states a direction."""
    from sdrlib.results import table_or_note

    out = []
    cache = table_or_note(results_dir, table_names.EMBEDDING_CACHE, out)
    if cache is not None:
        c = cache.iloc[0]
        out.append(f"Cache: the bank's {int(c['reports'])} reports hold {int(c['sentences'])} sentences, "
                   f"{int(c['unique sentences'])} distinct ({c['sentences per unique']:.2f} per distinct text); the "
                   f"warm re-build made {int(c['encoder calls (warm)'])} encoder calls.")
    geo = table_or_note(results_dir, table_names.SENTENCE_GEOMETRY, out)
    if geo is not None:
        g = geo.set_index("statistic")["value"]
        out.append(f"Geometry: the hand-written paraphrase pair has cosine {g['paraphrase_cosine']:.2f}; a sampled "
                   f"Findings sentence's nearest different sentence has median cosine {g['nearest_median']:.2f}, "
                   f"and {g['nearest_share_ge_0.9']:.0%} of them have one at 0.9 or more.")
    rest = table_or_note(results_dir, table_names.IMPRESSION_RESTATEMENT, out)
    if rest is not None:
        r = rest.iloc[0]
        out.append(f"Impression vs Findings: over {int(r['impression_sentences'])} Impression sentences, the closest "
                   f"sentence of the report's own Findings has median cosine {r['own_median']:.2f}, the closest of "
                   f"another report's Findings {r['others_median']:.2f}; the own Findings are closer than "
                   f"{r['beats_share_mean']:.0%} of the other reports' on average (50% would mean no closer than a random "
                   f"other report's).")
    opp = table_or_note(results_dir, table_names.OPPOSITE_NEIGHBOURS, out)
    if opp is not None:
        o = opp.iloc[0]
        line = (f"Opposite neighbours: for {int(o['opposite'])} of {int(o['sentences'])} distinct bank Findings sentences the "
                f"nearest other sentence is read by the labeler with the opposite polarity")
        out.append(line + (f" (closest such pair at cosine {o['max_cosine']:.2f})." if o["opposite"] else "."))
    answer = _embedding_answer(geo, opp)
    return ([answer] if answer else []) + out


def _embedding_answer(geo, opp) -> str | None:
    """Notebook 01's first sentence: what a set-distance reward compares, from the geometry and opposite-neighbour
    tables (None when both are missing)."""
    parts = []
    if geo is not None:
        g = geo.set_index("statistic")["value"]
        para, near = float(g["paraphrase_cosine"]), float(g["nearest_median"])
        parts.append(f"two unordered sets of sentence vectors, in which a paraphrase sits at cosine {para:.2f} and a "
                     f"typical sentence's nearest different sentence at {near:.2f}"
                     + (": a paraphrase is no closer than another sentence of the corpus" if near >= para else ""))
    if opp is not None:
        o = opp.iloc[0]
        parts.append(f"a finding and its denial can be neighbours ({int(o['opposite'])} of {int(o['sentences'])} "
                     "distinct Findings sentences have a nearest neighbour of the opposite polarity), which is why "
                     "the negation-aware settings read presence")
    return ("Answer: " + "; ".join(parts) + ".") if parts else None
