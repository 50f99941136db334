"""Distance-guided pruning of best-of-K candidates while they are decoded (paper sec. 5.1, app. G, Algorithm 1).

The K candidates of one study are decoded sentence by sentence. The first ``warmup`` sentences are decoded
in lock-step without pruning; then, round by round, every active candidate decodes exactly one more
sentence, the partial reports are scored against a bank of training reports with the selection distance
(:mod:`sdrlib.selection`: eq. 7 per section, eq. 8 aggregation over the bank, eq. 9 sum over sections), and
the worst ``ceil(p |C|)`` candidates are dropped, until one survives; it is decoded to its end and returned.

Two drivers share one round loop (:func:`_run_rounds`), so they make the same decisions on the same text:

- :func:`prune_live`: a local causal / vision-language model (the tiny Qwen3-VL on CPU, any transformers
  model with a KV cache on GPU). The image and prompt are encoded once (batch 1), the cache is repeated K
  times, and the active candidates decode as one batch, one token per forward, with the cache kept across
  rounds (nothing is re-encoded). A candidate that has finished its sentence for the round waits: it is fed a
  pad token whose attention-mask column is 0 and its position does not advance, so its next token sees
  exactly its own history. Dropped and finished candidates leave the cache
  (``DynamicCache.batch_select_indices``). Sampling uses one ``torch.Generator`` per candidate, seeded
  ``seed + j``, on the CPU, so candidate j's tokens do not depend on which other candidates are in the batch;
  :func:`generate_standard` (the same decoder, no pruning, the same seeds) therefore writes the same K
  candidates as the full best-of-K pipeline, and a pruned candidate's tokens are a prefix of its full
  generation (up to float round-off of batched kernels, which would have to move a sample across a
  probability boundary).
- :func:`replay_prune`: the same rounds over candidates already generated in full (the paper's proof of concept
  for API models): each text is cut into tokens with the generating model's tokenizer when given (its
  ``encode``), else with :func:`proxy_pieces` (one piece per word, punctuation mark or template tag), and fed
  token by token through the same sentence tracker. On the same seeds, live and replay choose the same
  survivor (tests/pruning/test_pruning.py).

What a sentence is: :func:`complete_sentences`. The (partial) text is parsed leniently along the
``<think> F </think> <answer> I </answer>`` template (``candidate_format="template"``) or by
:func:`sdrlib.reports.split_report` (``"report"``, API answers), each section is segmented with
:func:`sdrlib.reports.split_sentences` (the segmentation the distance uses), and the last sentence of the
section still open at the end of the text counts only once it ends in ``.``, ``!`` or ``?`` (not a
``<digit>.``, which may be a decimal) or once its section is closed. The sentence boundary is thus seen on
the token that writes the full stop (the tiny policy's BPE emits ``.`` as a token of its own).

Scoring a partial report (:func:`partial_totals`). A round compares candidates that have written the same
number t of sentences, so some may still be in Findings while others have begun the Impression. Each
candidate is scored on its first t complete sentences, per section, against the bank (selection's eq. 7-8),
and the total sums **only the sections that every scored candidate has begun** (Findings, until all have
reached the Impression). Why: selection's rule for an empty section (the setting's maximum, 1.0) would
charge a full point to every candidate that has not reached its Impression yet, i.e. drop the candidates
with the longest Findings first, a bias towards short reports that says nothing about quality; scoring
Findings alone compares like with like. When no section is common to all scored candidates (one has only
Impression text), selection's rule applies (empty section = the setting's maximum). A candidate with no
complete sentence at all scores +inf (so a candidate that never ends a sentence goes first); no round prunes
before sentence ``min_sentences``; a finished candidate is judged on its finished text.

Token accounting (exact for live decoding): ``tokens[j]`` = tokens sampled for candidate j (the end-of-
sequence token included when it was sampled); the survivor's count is its full generation; the standard
pipeline's count is the sum over its K full generations. Pruning never decodes a token that the standard
pipeline would not also decode.

Bad input (defined behaviour):

================================================  =================================================================
case                                              behaviour
================================================  =================================================================
p outside (0, 1), K < 1, warmup < 0,              :class:`PruningError` naming the parameter (when the parameters are
min_sentences < 1, cap < 1                        made)
a candidate finishes before the others            stays in the pool with its finished text, judged on it in every
                                                  later round (``finished[j]``), decodes nothing more
a candidate never ends a sentence                 after ``sentence_token_cap`` tokens in a round it is ready for the
                                                  round anyway and judged on the sentences it has completed (none:
                                                  +inf, dropped first)
K = 1                                             no round, no scoring: the single candidate is decoded to its end
warmup longer than every candidate                every candidate finishes during warm-up; the rounds then prune the
                                                  finished texts (no token saved) and the survivor is the best by the
                                                  partial-report rule
texts / tokenizer of the wrong kind (replay)      :class:`PruningError`
================================================  =================================================================

Left out: batching several studies into one decode (each study's K candidates form one batch), speculative
or beam decoding, top-k / top-p truncation (pure temperature sampling, as :mod:`sdrlib.generation`).

Parts (private modules, their public names re-exported here): ``_params`` (:class:`PruneParams`,
:class:`PruningError`), ``_sentences`` (:func:`complete_sentences`, :func:`proxy_pieces`, a candidate's
progress), ``_scoring`` (:func:`partial_totals`, :class:`BankScorer`), ``_rounds`` (the round loop),
``_live`` (:func:`prune_live`, :func:`generate_standard`), ``_replay`` (:func:`replay_prune`), ``_results``
(:class:`PruneResult`, :class:`StandardResult`, :func:`tokens_saved_pct`). K is ``n_candidates`` in the code
(:attr:`PruneParams.n_candidates`; the profile key stays ``pruning.k``).

Example: one study's three finished candidates replayed with a toy scorer (one point per sentence that
mentions an effusion; :class:`BankScorer` is the real one); the first round drops ``ceil(0.5 * 3) = 2``:

>>> import numpy as np
>>> from sdrlib.pruning import PruneParams, proxy_pieces, replay_prune, tokens_saved_pct
>>> texts = ["<think> Heart normal. Lungs clear. </think> <answer> Normal. </answer>",
...          "<think> Small effusion. Lungs clear. </think> <answer> Effusion. </answer>",
...          "<think> Heart normal. No effusion. </think> <answer> Normal. </answer>"]
>>> def toy(sentence_lists, scorable):
...     return np.array([float(sum("effusion" in s for _, s in sl)) for sl in sentence_lists])
>>> res = replay_prune(texts, toy, PruneParams(n_candidates=3, p=0.5, warmup=0))
>>> res.survivor, res.rounds[0]["dropped"]
(0, [1, 2])
>>> res.tokens  # proxy tokens decoded per candidate: the dropped ones stopped after one sentence
[13, 4, 4]
>>> round(tokens_saved_pct(res.tokens, [len(proxy_pieces(t)) + 1 for t in texts]), 1)  # + 1: end of sequence
46.2
"""

from sdrlib.pruning._live import _cache_kwarg, generate_standard, prune_live  # noqa: F401  (_cache_kwarg: tests)
from sdrlib.pruning._params import PruneParams, PruningError, with_params
from sdrlib.pruning._replay import replay_prune
from sdrlib.pruning._results import PruneResult, StandardResult, tokens_saved_pct
from sdrlib.pruning._scoring import BankScorer, partial_totals
from sdrlib.pruning._sentences import complete_sentences, proxy_pieces

__all__ = [
    "PruningError", "PruneParams", "PruneResult", "StandardResult", "BankScorer", "complete_sentences",
    "proxy_pieces", "partial_totals", "prune_live", "generate_standard", "replay_prune", "tokens_saved_pct",
    "with_params",
]
