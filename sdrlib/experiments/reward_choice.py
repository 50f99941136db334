"""Choosing the trained ``chamfer_recall_<alpha>_bal<w>`` setting on validation studies (ours).

The recall reward has two knobs, the recall weight ``alpha`` (:mod:`sdrlib.distances.recall`) and the prompt weight
``w`` of references that state a finding (:mod:`sdrlib.rewards.methods.recall`). Picking them on the test studies
that later score the trained policies would select on the evaluation set, so they are picked on **validation**
studies from a small grid (the profile's ``grpo.recall_grid``), before any GRPO run, by a rule fixed in advance:

1. **Sound on validation.** The reward audit (:func:`sdrlib.experiments.audit.reward_audit`) on the validation
   references must keep every ordering of :data:`REQUIRED`, strictly (a tie is not kept), on each abnormal stratum
   (single and multi finding) where it is defined: a hallucinated finding below a paraphrase, a contradicted finding below an omitted one, an
   omitted finding below a paraphrase, and the modal normal report below a report with one of several findings
   missed. A setting that breaks one is out.
2. **Silence does not pay, with the least weight.** For the survivors, the expected-reward view
   (:func:`sdrlib.experiments.audit.expected_reward_view`) on the SFT policy's own validation samples gives
   ``mixed_margin``: what stating a finding earns over staying silent, over the validation prompts as they come
   (``w`` scales the abnormal prompts' rewards, so it scales their share of the margin). The chosen ``w`` is the
   smallest of the grid with ``mixed_margin > 0`` (the least re-weighting under which an uncertain policy gains by
   stating findings); if none has one, the smallest ``w`` of the grid (a weight that does not make stating pay
   on validation is not applied). Among the settings at that ``w``, the largest ``mixed_margin`` decides
   ``alpha`` (ties: the smaller alpha, nearer symmetric). (The first version took the largest margin over the
   whole grid when no ``w`` made stating pay; on the cpu profile's validation studies that compared
   -0.2826 with -0.2846, a difference no run-to-run change should decide, so the rule prefers no weight.)

Best-of-K on the same samples cannot choose ``w``: a prompt weight multiplies every sample of a prompt alike, so the
best sample of a prompt is the same at every ``w``; it is the across-prompt contrast above that ``w`` changes.
The rule needs no GRPO run (seconds); what it cannot see is how the policy moves once trained, which notebook 04's
3-seed comparison then shows.

Example::

    table, chosen = choose_recall_setting(grid_names([0.5, 1.0], [1, 2]), val, train, samples, emb, cfg.grpo)
    table[["reward", "broken_required", "mixed_margin", "chosen"]]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sdrlib.errors import SDRError
from sdrlib.experiments import audit
from sdrlib.rewards import parse_reward

__all__ = ["REQUIRED", "MIN_REFERENCES", "NO_PICK", "RewardChoiceError", "grid_names", "required_orderings", "choose_recall_setting"]

#: the orderings a trained recall setting must keep on validation, (higher case, lower case): the required orderings
REQUIRED: tuple[tuple[str, str], ...] = (("paraphrase", "hallucinated"), ("omitted", "contradicted"),
                                         ("paraphrase", "omitted"), ("omitted", "modal_normal"))


#: a required ordering is kept when the lower case's paired mean reward is below the higher one's by more than this
TOL = 1e-9


class RewardChoiceError(SDRError, ValueError):
    """The grid is unusable (empty, a name that is not a recall setting) or no setting of it is sound."""


def grid_names(alphas: Sequence[float], weights: Sequence[float]) -> list[str]:
    """Reward names of the grid, alpha-major: ``grid_names([0.5, 1], [1, 2])`` -> ``["chamfer_recall_0.5",
    "chamfer_recall_0.5_bal2", "chamfer_recall_1", "chamfer_recall_1_bal2"]`` (each parsed, so a bad value raises
    the parser's :class:`~sdrlib.rewards.RewardError` naming the allowed range)."""
    for what, values in (("alphas", alphas), ("weights", weights)):
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            raise RewardChoiceError(f"grpo.recall_grid: {what} must be a list of numbers, not {values!r}")
        odd = [v for v in values if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating))]
        if odd:
            raise RewardChoiceError(f"grpo.recall_grid: {what} must be numbers, not {odd} (write 0.5, not '0.5')")
    if not alphas or not weights:
        raise RewardChoiceError(f"grpo.recall_grid: alphas {list(alphas)} and weights {list(weights)} must both be "
                                "non-empty")
    names = [f"chamfer_recall_{a:g}" + (f"_bal{w:g}" if w != 1 else "") for a in alphas for w in weights]
    for n in names:
        parse_reward(n)
    return names


def required_orderings(orderings: pd.DataFrame) -> pd.DataFrame:
    """The :data:`REQUIRED` rows of :func:`sdrlib.experiments.audit.broken_orderings`' table (every stratum where
    the audit defines them)."""
    want = {f"{hi} > {lo}" for hi, lo in REQUIRED}
    return orderings[orderings["expected"].isin(want)].reset_index(drop=True)


#: what a run says when the rule has nothing to compare settings by (``choose_recall_setting`` returns None)
NO_PICK = ("no pick: no sound setting has a finite mixed_margin (the SFT samples hold no silent and stating "
           "completions on both normal and abnormal validation references); more validation studies "
           "(grpo.recall_n_val) or seeds would give one")
#: validation studies the rule needs at the least (one study cannot hold both strata of the orderings)
MIN_REFERENCES = 2


def _check_validation_inputs(references: Sequence[Any], samples: Mapping[str, Sequence[str]]) -> None:
    """Refuse validation inputs the rule cannot choose from: fewer than :data:`MIN_REFERENCES` references, no
    samples, or samples of studies that are not among the references (a mismatch of ids, not a choice)."""
    if len(references) < MIN_REFERENCES:
        raise RewardChoiceError(f"the recall pick needs at least {MIN_REFERENCES} validation studies, got "
                                f"{len(references)} (grpo.recall_n_val)")
    if not isinstance(samples, Mapping) or not any(len(v) for v in samples.values()):
        raise RewardChoiceError("the recall pick needs the SFT policy's validation samples (study id -> "
                                "completions); none were given")
    ids = {r.study_id for r in references}
    unknown = [k for k in samples if k not in ids]
    if unknown:
        raise RewardChoiceError(f"samples name {len(unknown)} studies that are not validation references (first: "
                                f"{unknown[:3]}); key the samples by the references' study_id")


def choose_recall_setting(names: Sequence[str], references: Sequence[Any], train_records: Sequence[Any],
                          samples: Mapping[str, Sequence[str]], embedder: Any, grpo_cfg: Any, *, seed: int = 0
                          ) -> tuple[pd.DataFrame, str | None]:
    """Apply the module's rule to the grid ``names`` on the validation ``references``.

    ``samples``: validation study id -> the SFT policy's completions (one per seed). Returns ``(table, chosen)``:
    one row per setting with ``reward``, ``label``, ``alpha``, ``weight``, ``broken_required`` (how many
    :data:`REQUIRED` (ordering, stratum) pairs it does not keep strictly; ``broken_which`` names them), ``worst_required_diff`` (the smallest paired
    mean difference of those orderings: > 0 keeps them all), ``silence_margin``, ``normal_margin``,
    ``mixed_margin`` (:func:`~sdrlib.experiments.audit.expected_reward_view`), ``n_references``, ``n_samples``,
    ``sound`` and ``chosen``; and the chosen reward name, or ``None`` when no sound setting has a finite
    ``mixed_margin`` (the samples hold no silent / stating contrast to compare settings by: :data:`NO_PICK` says
    so; every ``chosen`` is False). Raises :class:`RewardChoiceError` when no setting is sound (the message names
    each setting's broken orderings), for names given as one string, fewer than :data:`MIN_REFERENCES`
    references, no samples, or samples keyed by studies that are not references.
    """
    if isinstance(names, (str, bytes)):
        raise RewardChoiceError(f"names must be a list of reward names, not one string ({names!r}): "
                                f"write [{names!r}]")
    names = list(dict.fromkeys(names))
    if not names:
        raise RewardChoiceError("grpo.recall_grid gives no setting to choose from")
    _check_validation_inputs(references, samples)
    specs = {n: parse_reward(n) for n in names}
    bad = [n for n, s in specs.items() if s.method != "chamfer_recall"]
    if bad:
        raise RewardChoiceError(f"not chamfer_recall_<alpha>[_bal<w>] settings: {bad}")
    scorers: dict[str, Any] = {}

    def scorer_for(name: str):
        if name not in scorers:
            scorers[name] = audit.audit_scorer(name, embedder, grpo_cfg, train_records)
        return scorers[name]

    aud = audit.reward_audit(names, references, train_records, embedder, grpo_cfg, seed=seed, scorer_for=scorer_for)
    req = required_orderings(audit.broken_orderings(aud))
    view = audit.expected_reward_view(names, references, samples, audit.modal_normal_report(train_records),
                                      scorer_for=scorer_for).set_index("reward")
    rows = []
    for n in names:
        r = req[req["reward"] == n]
        kept = r["diff"] > TOL  # strictly below: a tie is not kept
        rows.append({"reward": n, "label": specs[n].label, "alpha": specs[n].opts["alpha"],
                     "weight": specs[n].opts.get("weight", 1.0), "broken_required": int((~kept).sum()),
                     "broken_which": "; ".join(f"{e} ({s}: {d:+.4f})" for e, s, d in
                                               zip(r.loc[~kept, "expected"], r.loc[~kept, "stratum"],
                                                   r.loc[~kept, "diff"])),
                     "worst_required_diff": float(r["diff"].min()) if len(r) else np.nan,
                     "silence_margin": float(view.loc[n, "silence_margin"]),
                     "normal_margin": float(view.loc[n, "normal_margin"]),
                     "mixed_margin": float(view.loc[n, "mixed_margin"]),
                     "n_references": len(references), "n_samples": int(sum(len(v) for v in samples.values()))})
    table = pd.DataFrame(rows)
    table["sound"] = (table["broken_required"] == 0) & table["worst_required_diff"].notna()
    ok = table[table["sound"]]
    if ok.empty:
        raise RewardChoiceError("no setting of grpo.recall_grid keeps the required orderings on the validation "
                                "references: " + "; ".join(f"{r.reward}: {r.broken_which or 'none defined'}"
                                                           for r in table.itertuples()))
    ok = ok[np.isfinite(ok["mixed_margin"].to_numpy(float))]
    if ok.empty:  # nothing to compare: say so, never pick by the alpha tie-break
        table["chosen"] = False
        return table, None
    paying = ok[ok["mixed_margin"] > 0]
    if len(paying):
        at_w = paying[paying["weight"] == paying["weight"].min()]
    else:
        at_w = ok[ok["weight"] == ok["weight"].min()]
    best = at_w.sort_values(["mixed_margin", "alpha"], ascending=[False, True]).iloc[0]
    table["chosen"] = table["reward"] == best["reward"]
    return table, str(best["reward"])
