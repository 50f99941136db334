"""GRPO rewards: format, set-distance semantic and exact-match, with TRL adapters.

Paper sec. 3.1 (format reward) and 3.2 (semantic reward). For a generated report ``y_hat`` and its
reference ``y``:

- ``R_fmt(y_hat)`` in {0, 1}. The paper's format reward (sec. 3.1, "Format
  reward") requires the template ``<think> F </think> <answer> I </answer>``
  "with each tag occurring exactly once, in the specified order, and enclosing
  non-empty content". This ``R_fmt`` is **stricter than the paper**: 1 only when
  (i) each tag occurs exactly once, in that order; (ii) each pair encloses a
  *visible* character (white space or invisible characters alone count as empty);
  (iii) **no visible text lies outside the two tag pairs** (before ``<think>``,
  between ``</think>`` and ``<answer>``, after ``</answer>``), a rule the paper
  does not state; (iv) ``y_hat`` is at most ``max_chars`` characters long; and
  (v) it holds no non-text tokens (chat / vision special tokens such as
  ``<|image_pad|>``, the Unicode replacement character, control characters).
  (i)-(iii) are :func:`sdrlib.reports.parse_template`, (iv)-(v)
  :func:`check_completion` (:mod:`sdrlib.rewards.completion`). A completion such as ``"Report: <think> F </think>
  <answer> I </answer>"`` satisfies the paper's rule but scores ``R_fmt = 0`` here.
- ``R_sem(y_hat, y) = (1 - D(E^F(y_hat), E^F(y))) + (1 - D(E^I(y_hat), E^I(y)))``
  in [0, 2] for any distance ``D`` registered in :mod:`sdrlib.distances`
  (``"chamfer"``, ``"hausdorff"``, ...); ``E^S`` is the set of sentence
  embeddings of section ``S``. ``R_sem := 0`` when ``R_fmt = 0``.
- ``R_exact(y_hat, y)`` in {0, 1, 2}: the paper's "discrete exact-match
  accuracy reward", defined here as the number of sections (Findings,
  Impression) whose *set of normalised sentences* equals the reference's.
  A sentence is normalised by lower-casing, collapsing white space and
  dropping trailing punctuation; sentence order and duplicates are ignored,
  matching the paper's view of a section as an unordered set of findings.
  ``R_exact := 0`` when ``R_fmt = 0``.
- The combined reward is ``lambda_fmt * R_fmt + lambda_sem * R_content`` with
  ``R_content`` = ``R_sem`` or ``R_exact`` (paper: both lambdas = 1), in
  ``[0, lambda_fmt + 2 * lambda_sem]``.

Ranges are guaranteed for every input: no function here returns NaN, inf or a
value outside the range above. Bad input is handled in one of three ways:

- a bad *completion* (``None``, not text, image parts, non-text tokens, too long,
  no template, blank section) is a failure: ``R_fmt = 0`` and every content
  reward 0, with the reason counted (:data:`BAD_REASONS`); it never raises.
- a bad *reference* (``None``, NaN, ``pd.NA``, not text, blank) raises
  :class:`ReferenceTextError` naming the column and row: a missing reference is
  never scored as text (``str(nan) == "nan"`` would otherwise be matchable).
- a valid completion whose sentence embeddings or distance cannot be computed
  (the encoder or :mod:`sdrlib.distances` refuses it with a named error, or a
  distance comes back non-finite) scores that section's ``R_sem`` as 0 (distance
  1, as for a section without sentences) and is counted in ``counts["sem_failed"]``.
  A reference the encoder refuses raises.

Bad parameters (unknown reward, a distance setting :mod:`sdrlib.distances`
refuses, NaN / inf / negative / bool / non-numeric weights or ``max_chars``)
raise :class:`RewardError` when the scorer is built, not at the first score.

A reward configuration is named by a string, read once into a :class:`RewardSpec` by
:func:`parse_reward` (:mod:`sdrlib.rewards.spec`; one module per method under :mod:`sdrlib.rewards.methods`,
each registering itself): ``"sft"`` (no GRPO), ``"fmt"``, ``"exact"``, any registered distance name, or one
of the two related methods: ``"gcarl"`` (:mod:`sdrlib.rewards.methods.gcarl`: ``lambda_fmt R_fmt + lambda_sem
(w_fact R_fact + w_check R_check)``, TRL functions ``r_fmt, r_fact, r_check``) and the EditGRPO
configurations ``"editgrpo"``, ``"editgrpo_para"``, ``"editgrpo_tau<t>"``, ``"editgrpo_ops<k>"`` /
``"editgrpo_opsall"``, ``"editgrpo_noedit"``
(:mod:`sdrlib.rewards.methods.editgrpo`: its composite clinical reward ``lambda_fmt R_fmt + lambda_sem (F1_14 +
F1_ent + S_neg)``, TRL functions ``r_fmt, r_f1_14, r_f1_entity, r_sem_neg``; the edits themselves are
made by :class:`sdrlib.training.editgrpo_trainer.EditGRPOTrainer`, every EditGRPO name scores alike).
For these, ``content`` is the weighted sum of the components and ``total`` stays
``lambda_fmt * fmt + lambda_sem * content``, in ``[0, lambda_fmt + lambda_sem * max content]``
(max content: 3 for EditGRPO, ``w_fact + w_check`` for G-CARL).

TRL use (text or vision policy; the dataset carries ``findings`` and
``impression`` reference columns next to ``prompt``)::

    from sdrlib.rewards import trl_reward_functions
    funcs, weights = trl_reward_functions("chamfer")
    args = GRPOConfig(output_dir="out", reward_weights=weights)
    trainer = GRPOTrainer(model=model, reward_funcs=funcs, args=args, train_dataset=ds)
    trainer.train()

TRL logs each function separately (``rewards/r_fmt/mean``,
``rewards/r_sem_chamfer/mean``); the first function also reports the
per-section components, the counts of bad completions by reason and the
seconds spent computing rewards through TRL's ``log_metric`` hook.

Speed: sentences are embedded through :class:`sdrlib.embedding.SentenceEmbedder`,
whose cache means only sentences never seen before reach the encoder (one
batched encoder call per GRPO step); :func:`prewarm` embeds the reference
sentences once before training; the distances of a batch go through the
batched engine ``sdrlib.distances.paired_distances``.

A name read into its spec, and a tiny completion scored with a reward that needs no encoder (``"exact"``: R_fmt
plus one point per section whose sentence set equals the reference's):

>>> from sdrlib.rewards import RewardScorer, parse_reward
>>> spec = parse_reward("editgrpo_tau0.3")
>>> spec.method, spec.opts["tau"], spec.label
('editgrpo', 0.3, 'EditGRPO-t0.3')
>>> parse_reward("chamfer").distance, parse_reward("chamfer").needs_embedder
('chamfer', True)
>>> b = RewardScorer("exact").score(["<think> Lungs clear. </think> <answer> Normal. </answer>"],
...                                 ["Lungs clear."], ["Normal."])
>>> b.fmt.tolist(), b.exact.tolist(), b.total.tolist()
([1.0], [2.0], [3.0])

Left out: reward models, length penalties, per-sentence credit assignment.
"""

from __future__ import annotations

from sdrlib.rewards.completion import (BAD_REASONS, DEFAULT_MAX_CHARS, FORMAT_MODES, check_completion,
                                       check_max_chars, check_weight, completion_text, format_reward)
from sdrlib.rewards.methods.exact import exact_match_section, normalize_sentence
from sdrlib.rewards.scorer import RewardBreakdown, RewardScorer, prewarm
from sdrlib.rewards.spec import (MethodScores, ReferenceTextError, RewardError, RewardMethod, RewardSpec,
                                 TrainOptions, get_method, method_of, parse_reward, register_method,
                                 registered_methods, reward_name_problem, reward_names_help, settings_sections,
                                 reward_label, unregister_method, validate_reward_name)
from sdrlib.rewards.trl import trl_reward_functions

__all__ = ["BAD_REASONS", "DEFAULT_MAX_CHARS", "FORMAT_MODES", "format_reward", "RewardError", "ReferenceTextError", "RewardBreakdown", "RewardScorer",
           "RewardSpec", "RewardMethod", "MethodScores", "TrainOptions", "check_completion", "check_max_chars",
           "check_weight", "completion_text", "exact_match_section", "normalize_sentence", "prewarm",
           "trl_reward_functions", "parse_reward", "validate_reward_name", "method_of", "register_method",
           "unregister_method", "get_method", "registered_methods", "reward_names_help", "reward_name_problem",
           "settings_sections", "reward_label"]
