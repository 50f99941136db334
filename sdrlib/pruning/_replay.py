"""Algorithm 1 replayed over K finished candidates (:func:`replay_prune`): the same rounds on their token
prefixes (the generating model's token ids or tokenizer, else :func:`~sdrlib.pruning.proxy_pieces`).

Left out: decoding (:mod:`._live`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sdrlib.pruning._params import PruneParams, PruningError
from sdrlib.pruning._results import PruneResult
from sdrlib.pruning._rounds import _run_rounds
from sdrlib.pruning._sentences import _Track, proxy_pieces


# --------------------------------------------------------------------------- replay over finished candidates
def _pieces(text: str, tokenizer: Any) -> list[str]:
    """Prefix texts after each token: the tokenizer's ``encode`` (no special tokens) decoded prefix by prefix,
    or :func:`proxy_pieces` accumulated."""
    if tokenizer is None:
        out, acc = [], ""
        for p in proxy_pieces(text):
            acc += p
            out.append(acc)
        return out
    if not hasattr(tokenizer, "encode") or not hasattr(tokenizer, "decode"):
        raise PruningError(f"tokenizer must have encode/decode (a transformers tokenizer), got {type(tokenizer).__name__}")
    ids = tokenizer.encode(text, add_special_tokens=False)
    return [tokenizer.decode(ids[:n], skip_special_tokens=True) for n in range(1, len(ids) + 1)]


def replay_prune(texts: Sequence[str], scorer: Callable[..., np.ndarray] | None, params: PruneParams, *,
                 tokenizer: Any = None, token_ids: Sequence[Sequence[int]] | None = None,
                 candidate_format: str = "template", eos: bool | Sequence[bool] = True) -> PruneResult:
    """Algorithm 1 replayed over K finished candidates (``texts``, one study): the same rounds on their
    token prefixes.

    Tokens: with ``token_ids`` (the ids the local model sampled, end-of-sequence included, as
    :attr:`StandardResult.ids`) and ``tokenizer``, the prefixes are those ids decoded, so the counts are the
    live decoder's exactly; with ``tokenizer`` alone, the text is re-encoded with it (a model's own samples
    need not be its tokenizer's canonical split, so counts may differ by a few); with neither,
    :func:`proxy_pieces`. ``eos`` (per candidate or one for all; ignored with ``token_ids``) adds the
    end-of-sequence token a finished generation also sampled. ``params.n_candidates`` must equal ``len(texts)``."""
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
        raise PruningError("texts must be a list of the K candidate texts of one study")
    if len(texts) != params.n_candidates:
        raise PruningError(f"{len(texts)} texts but params.n_candidates = {params.n_candidates}")
    if any(not isinstance(x, str) for x in texts):
        raise PruningError("every candidate text must be a str (use '' for a failed sample)")
    if params.n_candidates > 1 and scorer is None:
        raise PruningError("K > 1 needs a scorer (e.g. BankScorer)")
    eos_l = [bool(eos)] * len(texts) if isinstance(eos, (bool, np.bool_)) else [bool(e) for e in eos]
    if len(eos_l) != len(texts):
        raise PruningError(f"eos: {len(eos_l)} flags for {len(texts)} texts")
    t0 = time.perf_counter()
    # prefix text after each token; a sampled end-of-sequence token is one more step that adds no text
    if token_ids is not None:
        if tokenizer is None or not hasattr(tokenizer, "decode"):
            raise PruningError("token_ids need the tokenizer that produced them (tokenizer=...)")
        if len(token_ids) != len(texts):
            raise PruningError(f"token_ids: {len(token_ids)} lists for {len(texts)} texts")
        prefixes = [[tokenizer.decode(list(ids[:n]), skip_special_tokens=True) for n in range(1, len(ids) + 1)]
                    for ids in token_ids]
    else:
        prefixes = [_pieces(x, tokenizer) + ([x] if e else []) for x, e in zip(texts, eos_l)]
    tracks = [_Track(candidate_format) for _ in texts]
    pos = [0] * len(texts)
    for j, tr in enumerate(tracks):
        if not prefixes[j]:  # an empty text that did not end with an end-of-sequence token: nothing generated
            tr.update("", 0, True)

    def advance(cands: list[int]) -> None:
        for j in cands:
            pos[j] += 1
            tracks[j].update(prefixes[j][pos[j] - 1], pos[j], pos[j] >= len(prefixes[j]))

    survivor, rounds = _run_rounds(tracks, advance, lambda c: None, params, scorer)
    return PruneResult(survivor, [tr.text for tr in tracks], [tr.tokens for tr in tracks],
                       [tr.done for tr in tracks], rounds, time.perf_counter() - t0,
                       {"tokenizer": "proxy" if tokenizer is None else type(tokenizer).__name__, "params": params,
                        "scorer": getattr(scorer, "label", None)})
