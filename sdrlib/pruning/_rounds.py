"""The round loop of Algorithm 1, shared by live decoding and replay so both make the same decisions on
the same text: lock-step warm-up, then per round one more sentence for every active candidate, scoring and
dropping the worst ``ceil(p |C|)`` until one survives.

Left out: how a candidate advances by one token (the drivers, :mod:`._live` and :mod:`._replay`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from sdrlib.pruning._params import PruneParams
from sdrlib.pruning._sentences import _Track


# --------------------------------------------------------------------------- the round loop (Algorithm 1)
def _run_rounds(tracks: list[_Track], advance: Callable[[list[int]], None], drop: Callable[[list[int]], None],
                params: PruneParams, scorer: Callable[..., np.ndarray] | None) -> tuple[int, list[dict]]:
    cap = params.sentence_token_cap
    active = list(range(len(tracks)))

    def decode_until(t: int) -> None:
        for j in active:
            tracks[j].round_start = tracks[j].tokens
        while True:
            need = [j for j in active if not tracks[j].ready(t, cap)]
            if not need:
                return
            advance(need)

    rounds: list[dict] = []
    t = 0
    if len(active) > 1:
        for t in range(1, params.warmup + 1):  # lock-step warm-up, no pruning
            decode_until(t)
        t = params.warmup
    while len(active) > 1:
        t += 1
        decode_until(t)
        if t < params.min_sentences:  # too little written to judge anyone: one more lock-step sentence
            rounds.append({"t": t, "active": list(active), "scores": [math.nan] * len(active), "dropped": [],
                           "sentences": [len(tracks[j].sents[:t]) for j in active]})
            continue
        scorable = np.ones(len(active), dtype=bool)
        scores = scorer([tracks[j].sents[:t] for j in active], scorable)
        n_drop = params.n_drop(len(active))
        # worst first: highest score, ties dropping the higher index (so the lowest index wins, as in selection)
        cand = [(scores[i], active[i]) for i in range(len(active)) if scorable[i]]
        cand.sort(key=lambda x: (x[0], x[1]), reverse=True)
        dropped = sorted(j for _, j in cand[:n_drop])
        rounds.append({"t": t, "active": list(active), "scores": [float(x) for x in scores], "dropped": dropped,
                       "sentences": [len(tracks[j].sents[:t]) for j in active]})
        if dropped:
            drop(dropped)
            active = [j for j in active if j not in dropped]
    survivor = active[0]
    while not tracks[survivor].done:
        advance([survivor])
    return survivor, rounds
