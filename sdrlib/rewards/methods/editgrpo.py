"""EditGRPO: post-rollout sentence-level edits against the reference and its composite clinical reward.

This module is the method's name grammar, settings (``grpo.editgrpo.*``), edits and reward; the trainer that
puts the edits into TRL's rollouts is :class:`sdrlib.training.editgrpo_trainer.EditGRPOTrainer`.

After EditGRPO (its sec. 3 and appendix F) and its released code (``vllm_rollout_spmd.py``,
``extractor_num_para=-1``, ``extractor_num_ops_per_para=1``). All ``G`` completions of a prompt are
sampled from the policy; the first ``G / 2`` stay as sampled and each of the other ``G / 2`` slots gets an
edited copy of one of them: the sampled report corrected against the reference by *one* operation of
the rules (a)-(d) of the paper per section (:func:`edit_section`; "minimal yet reward-improving"
edits), re-tokenised. An edit that changes nothing leaves the slot with its own sample (the released
code's ``text_changed`` test), never a duplicate of its source. TRL then computes the reference-model
(and, when needed, old-policy) log-probabilities from the completion token ids, scores every completion
with the reward functions and forms group-relative advantages, so the edited half enters the loss with
its log-probabilities under the current policy. With vLLM (``use_vllm``) an edited completion has no
sampling log-probabilities: the edited rows are **excluded from TRL's importance-sampling correction**
(their sampling log-probabilities are set to the policy's own, ``old_per_token_logps``, so their ratio is
exactly 1; :func:`sdrlib.training.editgrpo_trainer.exclude_edited_from_correction`), as the released code, which recomputes every
rollout's old log-probabilities with the actor, has no such correction.
Dr. GRPO as in the paper: ``loss_type="dr_grpo"`` and ``scale_rewards="none"`` (no std quotient),
whatever the profile's ``grpo.loss_type`` (:data:`LOSS`).

**Editing rules** (one section at a time, Findings against the reference Findings, Impression
against the reference Impression; ``ops`` rounds per section, each applying the first rule that applies;
``ops = 1`` by default, the released configuration; ``ops = None`` repeats until none applies (e), the
ablation ``editgrpo_opsall``, whose edited half approaches a copy of the reference). A sentence's
*entities* are the findings the offline labeler reads in it with their side and presence (``+1`` / ``-1`` per
side slot, :func:`sdrlib.clinical.sentence_presence`: a pertinent negative on the other side is no conflict;
uncertain mentions count as positive, the project's one hedge convention, where the paper drops RadGraph's
uncertain label); sentences are compared by
cosine similarity of our sentence embeddings (the RewardScorer's encoder).

(a) a sentence with an entity whose presence conflicts with a reference sentence's is replaced by that
    reference sentence (one conflict drawn at random);
(b) otherwise a *false-positive* sentence (an entity no reference sentence carries with that presence)
    is replaced by the most similar reference sentence when the cosine reaches ``tau``;
(c) otherwise (below ``tau``) it is deleted;
(d) otherwise a reference entity that no sentence carries (a false negative) is added by appending the
    first reference sentence that carries it;
(e) when nothing applies (or the ``ops`` budget is spent) the section is returned; one left empty gets
    the first reference sentence (the released code's ``add_fn_empty_fallback``).
A sentence put in by (a), (b) or (d) is not edited again (a self-contradicting reference cannot loop;
the released code's ``processed_sentences``).
Sentences without entities ("The lungs are clear.") are never edited: the labeler reads no finding
in them.

**Substitutions** (the README repeats them). The paper extracts entities with RaTE-NER, with an
entity embedding per mention and an entity-level similarity; here entities are the offline
CheXpert-style labeler's observations per sentence (:mod:`sdrlib.clinical.labeler`) and similarity is
sentence-level (the set-distance encoder), so ``tau`` only decides (b) versus (c), while entity matching
is by label. Paper composite reward ``RadGraph-F1 + CheXbert micro-F1-14 + RaTEScore`` (unweighted,
no format reward, "no-thinking") becomes, on our template, ``lambda_fmt R_fmt + lambda_sem (F1_14 +
F1_ent + S_neg)`` (:func:`clinical_components`, each F1 the mean of the two sections'): ``F1_14`` the micro F1 of the labeler's
positive CheXpert-14 labels (stands in for CheXbert micro-F1-14), ``F1_ent`` the F1 of the labeler's
(observation, presence) pairs including negatives (for RadGraph-F1, an entity-with-presence overlap
without relations or anatomy), ``S_neg = 1 - mean_sections chamfer_neg`` the negation-aware Chamfer
similarity of the sentence embeddings (for RaTEScore, an embedding similarity of findings that
charges a negated finding). R_fmt keeps the policy's ``<think>/<answer>`` template.

**Paragraph level** (the paper's ablation "para": edits of the whole report, one edited element per
group): ``G - 1`` samples stay, the last slot gets an edited copy of the first, in which every section
that any rule would touch is replaced by the whole reference section (one operation per section).

Configuration names (:func:`parse_name`): ``editgrpo`` (profile's ``grpo.editgrpo.level``,
``grpo.editgrpo.tau`` and ``grpo.editgrpo.ops``), ``editgrpo_para`` (paragraph level), ``editgrpo_tau<t>``
(``tau`` = t, e.g. ``editgrpo_tau0.3``), ``editgrpo_ops<k>`` (k operations per section, e.g.
``editgrpo_ops3``) and ``editgrpo_opsall`` (rules repeated until none applies: our ablation, the
behaviour of this module before it followed the released configuration), ``editgrpo_noedit`` (the same
composite reward and Dr. GRPO without edits: the paper's "SFT + Dr. GRPO" row). The learning rate of
every EditGRPO configuration is ``grpo.editgrpo.learning_rate`` when the profile sets it (the paper
profile: EditGRPO's own 1e-6, its appendix's hyperparameters), else ``grpo.learning_rate``.

Where the released code draws the ``G / 2`` sources and targets of a group at random, the first half of
each group is the source and the second half the target here: the samples are exchangeable, so the draw
changes nothing in distribution.

EditGRPO's AdamW weight decay (1e-2 in its appendix) is ``grpo.editgrpo.weight_decay`` (the paper profile sets it;
0 elsewhere, TRL's default and every other GRPO run's).

Left out: multi-view / longitudinal inputs, the normalised-advantage variant ("norm"), the GREEN metric.

Example: the name grammar, and one section edited against its reference (the sentence embeddings written out):
the generated side conflicts with the reference, so rule (a) replaces one sentence per operation.

>>> import numpy as np
>>> from sdrlib.rewards.methods.editgrpo import edit_section, parse_name, positive_f1
>>> parse_name("editgrpo_ops2_tau0.9"), parse_name("chamfer")
(EditName(level=None, tau=0.9, ops=2), None)
>>> gen, ref = ["No pneumothorax.", "Small left pleural effusion."], ["Small right pneumothorax.", "No pleural effusion."]
>>> gen_vecs, ref_vecs = np.eye(2), np.array([[0.9, 0.1], [0.1, 0.9]])
>>> edit_section(gen, ref, gen_vecs, ref_vecs, rng=np.random.default_rng(0), ops=2)
(['Small right pneumothorax.', 'No pleural effusion.'], Counter({'replace_conflict': 2}))
>>> edit_section(["Heart normal."], ["Heart normal.", "Small left pleural effusion."], np.eye(2)[:1], np.eye(2),
...              rng=np.random.default_rng(0))  # rule (d): the missed finding is added
(['Heart normal.', 'Small left pleural effusion.'], Counter({'add': 1}))
>>> round(positive_f1({"Cardiomegaly": 1, "Edema": -1}, {"Cardiomegaly": 1}), 3)  # uncertain counts positive
0.667
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from sdrlib.clinical import label_report
from sdrlib.clinical.presence import sentence_presence
from sdrlib.errors import SDRError
from sdrlib.reports import build_template, split_sentences
from sdrlib.rewards.completion import DEFAULT_MAX_CHARS, check_completion
from sdrlib.rewards.spec import MethodScores, RewardError, RewardMethod, RewardSpec, TrainOptions, register_method

__all__ = ["EditError", "EDIT_LEVELS", "EDIT_COUNTS", "LOSS", "DEFAULT_TAU", "DEFAULT_OPS", "EditName", "parse_name",
           "is_edit_name", "edit_section", "edit_report", "clinical_components", "positive_f1", "entity_f1",
           "EditGRPOSettings", "EditGRPOMethod", "check_tau", "check_ops", "check_level"]

#: edit granularity: ``sentence`` (the paper's default) or ``paragraph`` (its ablation "para")
EDIT_LEVELS: tuple[str, ...] = ("sentence", "paragraph", "none")
#: counters of one batch of edits (logged per step as ``edits/<name>``)
EDIT_COUNTS: tuple[str, ...] = ("replace_conflict", "replace_fp", "delete", "add", "replace_section",
                                "unchanged", "no_template")
#: the paper's loss: Dr. GRPO (TRL ``loss_type``, ``scale_rewards``)
LOSS: tuple[str, str] = ("dr_grpo", "none")


@dataclass(frozen=True)
class EditGRPOSettings:
    """EditGRPO's profile settings (``grpo.editgrpo.*``); a configuration name may override level, tau, ops."""

    tau: float = field(default=0.6, metadata={"min": 0, "max": 1,
        "help": "cosine from which a false-positive sentence is replaced (below: deleted); EditGRPO Tab. 7 (0.6)"})
    level: str = field(default="sentence", metadata={"choices": ("sentence", "paragraph"),
        "help": "edit level of the name 'editgrpo': sentence | paragraph; EditGRPO sec. 3 (sentence)"})
    ops: int = field(default=1, metadata={"min": 0,
        "help": "edit operations per section and edited completion (EditGRPO's released configuration: 1, "
                "extractor_num_ops_per_para=1); 0 = until no rule applies (our ablation, as editgrpo_opsall)"})
    learning_rate: float = field(default=0.0, metadata={"min": 0,
        "help": "AdamW learning rate of EditGRPO runs (EditGRPO app. D: 1e-6); 0 = grpo.learning_rate (ours)"})
    weight_decay: float = field(default=0.0, metadata={"min": 0,
        "help": "AdamW weight decay of EditGRPO runs (EditGRPO app. D: 1e-2); 0 = TRL's default, as every other run"})


#: similarity threshold of rule (b) (:class:`EditGRPOSettings`)
DEFAULT_TAU: float = EditGRPOSettings.tau
#: edit operations per section: the released configuration's ``extractor_num_ops_per_para=1``
DEFAULT_OPS: int = EditGRPOSettings.ops

_NAME_RE = re.compile(r"editgrpo(?:_(para|noedit|ops(?:[1-9][0-9]*|all)))?(?:_tau(0|1|0\.[0-9]+|1\.0+))?")


class EditError(SDRError, ValueError):
    """An EditGRPO setting or batch is unusable (bad tau / level / name, a batch that is not whole groups)."""


class EditName(NamedTuple):
    """An EditGRPO configuration name read by :func:`parse_name`; ``None`` fields mean "the profile's value".

    ``ops`` is the number of edit operations per section; ``0`` means "until no rule applies" (``_opsall``).
    """

    level: str | None
    tau: float | None
    ops: int | None = None


def parse_name(name: str) -> EditName | None:
    """``(level, tau, ops)`` of an EditGRPO configuration name (:class:`EditName`), ``None`` when it is not one.

    ``None`` fields mean "the profile's value". Example: ``parse_name("editgrpo_tau0.3") -> (None, 0.3, None)``,
    ``parse_name("editgrpo_para") -> ("paragraph", None, None)``, ``parse_name("editgrpo_opsall") ->
    (None, None, 0)``, ``parse_name("chamfer") -> None``.
    """
    if not isinstance(name, str):
        return None
    m = _NAME_RE.fullmatch(name)
    if m is None:
        return None
    mod = m.group(1) or ""
    level = {"para": "paragraph", "noedit": "none"}.get(mod)
    ops = (0 if mod == "opsall" else int(mod[3:])) if mod.startswith("ops") else None
    return EditName(level, float(m.group(2)) if m.group(2) is not None else None, ops)


def is_edit_name(name: str) -> bool:
    """Whether ``name`` is an EditGRPO configuration (``editgrpo``, ``editgrpo_para``, ``editgrpo_tau0.3``, ...)."""
    return parse_name(name) is not None


def check_tau(tau: Any) -> float:
    if isinstance(tau, (bool, np.bool_)) or not isinstance(tau, (int, float, np.integer, np.floating)) \
            or not np.isfinite(tau) or not 0.0 <= float(tau) <= 1.0:
        raise EditError(f"edit tau must be a number in [0, 1], got {tau!r}")
    return float(tau)


def check_ops(ops: Any) -> int | None:
    """``ops`` as an int >= 1, or ``None`` for "until no rule applies" (``0`` and ``None`` both mean that)."""
    if ops is None:
        return None
    if isinstance(ops, (bool, np.bool_)) or not isinstance(ops, (int, np.integer)) or ops < 0:
        raise EditError(f"edit ops must be an integer >= 1 (operations per section) or 0 / None (until no rule "
                        f"applies), got {ops!r}")
    return int(ops) or None


def check_level(level: Any) -> str:
    if level not in EDIT_LEVELS:
        raise EditError(f"edit level must be one of {list(EDIT_LEVELS)}, got {level!r}")
    return level


# --------------------------------------------------------------------------- edits


def _entities(presence_row: np.ndarray) -> set[tuple[int, int]]:
    return {(int(k), int(presence_row[k])) for k in np.flatnonzero(presence_row)}


def _unit(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, np.float64).reshape(len(a), -1)
    n = np.linalg.norm(a, axis=1, keepdims=True)
    return a / np.where(n > 0, n, 1.0)


def edit_section(generated: Sequence[str], reference: Sequence[str], gen_vecs: np.ndarray, ref_vecs: np.ndarray,
                 tau: float = DEFAULT_TAU, rng: np.random.Generator | None = None,
                 ops: int | None = DEFAULT_OPS) -> tuple[list[str], Counter]:
    """Apply rules (a)-(e) (module doc) to one section's sentences; returns ``(sentences, counts)``.

    ``gen_vecs`` (n, d) and ``ref_vecs`` (m, d) are the sentences' embeddings (any scale).
    ``ops``: operations of rules (a)-(d) at most (default 1, the released configuration; ``None`` or 0:
    until no rule applies, capped at ``4 (n + m) + 4`` rounds). Rule (e) then fills a section left empty.
    ``counts`` has ``replace_conflict`` (a), ``replace_fp`` (b), ``delete`` (c) and ``add`` (d, e).
    Example: generated ``["No pneumothorax.", "Small left pleural effusion."]`` against reference
    ``["Small right pneumothorax.", "No pleural effusion."]`` -> one of the two sentences replaced (a)
    (both with ``ops=2``).
    """
    tau = check_tau(tau)
    ops = check_ops(ops)
    rng = rng or np.random.default_rng(0)
    gen, ref = list(generated), list(reference)
    if len(gen_vecs) != len(gen) or len(ref_vecs) != len(ref):
        raise EditError(f"{len(gen)} sentences / {len(gen_vecs)} vectors, {len(ref)} reference sentences / "
                        f"{len(ref_vecs)} vectors: rows must match")
    counts: Counter = Counter()
    if not ref:
        return gen, counts
    R = _unit(ref_vecs)
    ref_ent = [_entities(r) for r in sentence_presence(ref)]
    ref_all = set().union(*ref_ent)
    # working copy: (sentence, entities, unit vector or None, fixed = put in by an edit)
    G = _unit(gen_vecs) if len(gen) else np.zeros((0, R.shape[1]))
    x = [(s, e, G[i], False) for i, (s, e) in enumerate(zip(gen, [_entities(r) for r in sentence_presence(gen)]))]
    cap = 4 * (len(gen) + len(ref)) + 4
    for _ in range(cap if ops is None else min(ops, cap)):
        # (a) conflicting presence with a reference sentence
        conflicts = [(i, j) for i, (_, e, _, fixed) in enumerate(x) if not fixed
                     for j, f in enumerate(ref_ent) if any((k, -v) in f for k, v in e)]
        if conflicts:
            i, j = conflicts[int(rng.integers(len(conflicts)))]
            x[i] = (ref[j], ref_ent[j], R[j], True)
            counts["replace_conflict"] += 1
            continue
        # (b) / (c) a false-positive sentence: an entity no reference sentence carries with that presence
        fp = [i for i, (_, e, _, fixed) in enumerate(x) if not fixed and e - ref_all]
        if fp:
            i = fp[0]
            s, _, v, _ = x[i]
            cand = [j for j in range(len(ref)) if ref[j] != s]
            sims = R[cand] @ v if cand else np.zeros(0)
            if cand and sims.max() >= tau:
                j = cand[int(np.argmax(sims))]
                x[i] = (ref[j], ref_ent[j], R[j], True)
                counts["replace_fp"] += 1
            else:
                del x[i]
                counts["delete"] += 1
            continue
        # (d) a reference entity no sentence carries: append the first reference sentence that carries it
        have = set().union(*(e for _, e, _, _ in x)) if x else set()
        missing = ref_all - have
        if missing:
            j = next(j for j, f in enumerate(ref_ent) if f & missing)
            x.append((ref[j], ref_ent[j], R[j], True))
            counts["add"] += 1
            continue
        break
    if not x:  # (e) an empty report gets a reference sentence
        x.append((ref[0], ref_ent[0], R[0], True))
        counts["add"] += 1
    return [s for s, *_ in x], counts


def _needs_edit(generated: Sequence[str], reference: Sequence[str]) -> bool:
    """Whether any of rules (a), (b)/(c), (d) applies to a section (the paragraph-level trigger)."""
    if not reference:
        return False
    ref_ent = [_entities(r) for r in sentence_presence(list(reference))]
    ref_all = set().union(*ref_ent)
    gen_ent = [_entities(r) for r in sentence_presence(list(generated))] if generated else []
    have = set().union(*gen_ent) if gen_ent else set()
    conflict = any((k, -v) in ref_all for e in gen_ent for k, v in e)
    return bool(conflict or (have - ref_all) or (ref_all - have) or not generated)


def edit_report(text: str, ref_findings: str, ref_impression: str, embedder: Any, *, tau: float = DEFAULT_TAU,
                level: str = "sentence", rng: np.random.Generator | None = None,
                max_chars: int = DEFAULT_MAX_CHARS, ops: int | None = DEFAULT_OPS) -> tuple[str, Counter]:
    """Edit one templated completion against its reference; returns ``(edited text, counts)``.

    ``ops`` operations per section (:func:`edit_section`; sentence level only).

    A completion without a valid template (:func:`sdrlib.rewards.completion.check_completion`) is read as a
    report with two empty sections (``counts["no_template"] = 1``), so rules (d) and (e) rebuild it from
    reference sentences: our policy's template is the one thing the paper's untemplated reports lack.
    One that no rule changes gets ``counts["unchanged"] = 1`` and is returned as it is.
    ``level="paragraph"`` replaces each section that needs an edit by the whole reference section
    (``counts["replace_section"]``). The result is a valid template (:func:`sdrlib.reports.build_template`).
    """
    level = check_level(level)
    ops = check_ops(ops)
    if level == "none":
        return text, Counter({"unchanged": 1})
    sections, _ = check_completion(text, max_chars)
    counts: Counter = Counter()
    if sections is None:
        counts["no_template"] += 1
        gen_sections = ("", "")
    else:
        gen_sections = (sections.findings, sections.impression)
    out = []
    for gen_text, ref_text in zip(gen_sections, (ref_findings, ref_impression)):
        gen, ref = split_sentences(gen_text), split_sentences(ref_text)
        if level == "paragraph":
            if _needs_edit(gen, ref):
                out.append(" ".join(ref))
                counts["replace_section"] += 1
            else:
                out.append(" ".join(gen))
            continue
        if gen:
            gv, rv = embedder.encode_sections([gen_text, ref_text])
        else:
            rv = embedder.encode_sections([ref_text])[0]
            gv = np.zeros((0, rv.shape[1]))
        sents, c = edit_section(gen, ref, gv, rv, tau, rng, ops)
        counts.update(c)
        out.append(" ".join(sents))
    if not sum(counts.values()):
        return text, Counter({"unchanged": 1})
    if not all(o.strip() for o in out):  # a reference section without sentences: nothing to rebuild from
        return text, counts
    return build_template(*out), counts


# --------------------------------------------------------------------------- composite clinical reward


def positive_f1(gen_labels: dict[str, int], ref_labels: dict[str, int]) -> float:
    """Per-report F1 of the positive CheXpert-14 labels (micro over observations), uncertain counted positive as
    in the evaluation (:mod:`sdrlib.metrics.clinical`); 1 when both have none."""
    a = {k for k, v in gen_labels.items() if v in (1, -1)}
    b = {k for k, v in ref_labels.items() if v in (1, -1)}
    return 1.0 if not a and not b else 2 * len(a & b) / (len(a) + len(b))


def entity_f1(gen_labels: dict[str, int], ref_labels: dict[str, int]) -> float:
    """F1 of the (observation, presence) pairs, uncertain read as positive, "No Finding" excluded; 1 when both
    empty."""
    a = {(k, min(abs(v), 1)) for k, v in gen_labels.items() if k != "No Finding"}
    b = {(k, min(abs(v), 1)) for k, v in ref_labels.items() if k != "No Finding"}
    return 1.0 if not a and not b else 2 * len(a & b) / (len(a) + len(b))


def clinical_components(gen_findings: Sequence[str], gen_impression: Sequence[str], ref_findings: Sequence[str],
                        ref_impression: Sequence[str]) -> dict[str, np.ndarray]:
    """``f1_14`` and ``f1_entity`` (module doc) for parsed completions, arrays of shape (n,) in [0, 1]: the mean of
    the two sections' F1 (Findings against the reference Findings, Impression against the reference Impression).

    Per section, not per report (ours; the paper scores whole reports): CheXpert's report-level merge lets an
    uncertain mention win over a negative one, so a report whose Findings deny the reference's hedged finding
    while its Impression repeats the hedge read exactly like the reference. EditGRPO edits one section at a
    time, and its reward now reads them the same way.

    ``sem_neg`` (the negation-aware Chamfer similarity) needs the encoder and is computed by
    :class:`sdrlib.rewards.RewardScorer`.
    """
    f1, ent = [], []
    for gf, gi, rf, ri in zip(gen_findings, gen_impression, ref_findings, ref_impression):
        pairs = [(label_report(g), label_report(r)) for g, r in ((gf, rf), (gi, ri))]
        f1.append(float(np.mean([positive_f1(g, r) for g, r in pairs])))
        ent.append(float(np.mean([entity_f1(g, r) for g, r in pairs])))
    return {"f1_14": np.asarray(f1, float), "f1_entity": np.asarray(ent, float)}


# --------------------------------------------------------------------------- the method


class EditGRPOMethod(RewardMethod):
    """``editgrpo*``: the composite clinical reward, Dr. GRPO, half of each group edited (module doc)."""

    name = "editgrpo"
    settings = EditGRPOSettings
    order = 20
    prefix = "editgrpo"
    grammar = ("EditGRPO: editgrpo, editgrpo_para, editgrpo_noedit, editgrpo_ops<k> with k >= 1, editgrpo_opsall "
               "or editgrpo[_para|_ops<k>]_tau<t> with t in [0, 1] (e.g. editgrpo_tau0.3)")
    logs_failures = True

    def parse(self, name: str) -> RewardSpec | None:
        parsed = parse_name(name)
        if parsed is None:
            return None
        return RewardSpec(name, self.name, options=tuple(sorted(parsed._asdict().items())),
                          tags=frozenset({"related", "edits"}))

    def label(self, spec: RewardSpec) -> str:
        o = spec.opts
        base = {"paragraph": "EditGRPO-para", "none": "DrGRPO-clin"}.get(o["level"], "EditGRPO")
        if o["ops"] is not None:
            base += "-opsall" if o["ops"] == 0 else f"-ops{o['ops']}"
        return base + (f"-t{o['tau']:g}" if o["tau"] is not None else "")

    def check_settings(self, settings: Any) -> Any:
        settings = super().check_settings(settings)
        try:
            check_tau(settings.tau)
            check_level(settings.level)
            check_ops(settings.ops)
        except EditError as exc:
            raise RewardError(str(exc)) from None
        return settings

    def score(self, scorer, valid, findings, impression, n) -> MethodScores:
        """EditGRPO's composite components (:func:`clinical_components` + ``sem_neg``)."""
        out = {k: np.zeros(n) for k in ("f1_14", "f1_entity", "sem_neg")}
        if valid:
            idx = [i for i, _ in valid]
            gf, gi = [s.findings for _, s in valid], [s.impression for _, s in valid]
            rf, ri = [findings[i] for i in idx], [impression[i] for i in idx]
            for k, v in clinical_components(gf, gi, rf, ri).items():
                out[k][idx] = v
            d = scorer.section_distances(gf, rf, "chamfer_neg") + scorer.section_distances(gi, ri, "chamfer_neg")
            out["sem_neg"][idx] = 1.0 - d / 2.0
        return MethodScores(content=out["f1_14"] + out["f1_entity"] + out["sem_neg"], components=out)

    def trl_parts(self, spec, scorer) -> list[tuple]:
        return [(fname, (lambda b, _k=key: b.components[_k]), 1.0)
                for fname, key in (("r_f1_14", "f1_14"), ("r_f1_entity", "f1_entity"), ("r_sem_neg", "sem_neg"))]

    def train_options(self, spec, settings, grpo_cfg, embedder) -> TrainOptions:
        """Dr. GRPO whatever the profile's loss, half of each group edited, EditGRPO's own learning rate."""
        o = spec.opts
        return TrainOptions(
            trainer="sdrlib.training.editgrpo_trainer:EditGRPOTrainer",
            trainer_kwargs={"edit_embedder": embedder, "edit_level": o["level"] or settings.level,
                            "edit_tau": settings.tau if o["tau"] is None else o["tau"],
                            "edit_ops": settings.ops if o["ops"] is None else o["ops"],
                            "edit_max_chars": grpo_cfg.max_chars},
            loss_type=LOSS[0], scale_rewards=LOSS[1],
            learning_rate=settings.learning_rate or grpo_cfg.learning_rate,
            weight_decay=settings.weight_decay)

    def run_info(self, trainer) -> dict:
        log = trainer.edit_log
        return {"edit_level": trainer.edit_level, "edit_tau": trainer.edit_tau, "edit_ops": trainer.edit_ops,
                "edits": {k: sum(d[k] for d in log) for k in EDIT_COUNTS},
                "edit_seconds": sum(d["seconds"] for d in log)}


register_method(EditGRPOMethod())
