"""Tests for sdrlib.rewards: R_fmt guards, R_sem against the paper's formulas, R_exact, TRL adapters."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from sdrlib.reports import build_template, split_sentences
from sdrlib.rewards import (
    BAD_REASONS,
    RewardScorer,
    check_completion,
    completion_text,
    exact_match_section,
    normalise_sentence,
    prewarm,
    trl_reward_functions,
    validate_reward_name,
)

from training_helpers import FakeEmbedder

pytest.importorskip("sdrlib.distances")

F_REF = "The lungs are clear. Heart size is normal. No pleural effusion."
I_REF = "No acute cardiopulmonary process."
GOOD = build_template(F_REF, I_REF)


def _cost(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 - a @ b.T)  # paper: d(u, v) = (1 - u.v) / 2


def chamfer_ref(a, b):
    c = _cost(a, b)
    return 0.5 * (c.min(1).mean() + c.min(0).mean())


def hausdorff_ref(a, b):
    c = _cost(a, b)
    return max(c.min(1).max(), c.min(0).max())


# --------------------------------------------------------------------------- parsing guards


def test_completion_text_accepts_plain_and_conversational_forms():
    assert completion_text("abc") == "abc"
    assert completion_text([{"role": "assistant", "content": "abc"}]) == "abc"
    assert completion_text([{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]) == "ab"
    assert completion_text([{"role": "assistant", "content": [{"type": "image"}]}]) is None
    assert completion_text(None) is None
    assert completion_text(42) is None


@pytest.mark.parametrize(
    "text, reason",
    [
        (GOOD, None),
        ("The lungs are clear.", "no_template"),
        ("<answer> x </answer> <think> y </think>", "no_template"),
        ("<think> a </think> <answer> b </answer> trailing", "no_template"),
        ("<think>   </think> <answer> b </answer>", "empty_section"),
        ("<think> a </think> <answer>\n</answer>", "empty_section"),
        (GOOD.replace("clear", "clear <|image_pad|>"), "non_text_tokens"),
        (GOOD.replace("clear", "cl\ufffdear"), "non_text_tokens"),
        (GOOD.replace("clear", "cl\x00ear"), "non_text_tokens"),
        (build_template("Lungs clear. " * 500, "Normal."), "too_long"),
        (None, "not_text"),
    ],
)
def test_check_completion_reasons(text, reason):
    sections, got = check_completion(text, max_chars=4000)
    assert got == reason
    assert (sections is None) == (reason is not None)


def test_exact_match_is_a_sentence_set_equality_after_normalisation():
    assert exact_match_section("Heart normal.  NO effusion", "no effusion. heart normal.") == 1.0
    assert exact_match_section("Heart normal. No effusion. Heart normal.", "Heart normal. No effusion.") == 1.0
    assert exact_match_section("Heart normal.", "Heart normal. No effusion.") == 0.0
    assert exact_match_section("Heart enlarged. No effusion.", "Heart normal. No effusion.") == 0.0
    assert exact_match_section("", "") == 0.0


def test_validate_reward_name():
    assert validate_reward_name("fmt") == "fmt"
    assert validate_reward_name("chamfer") == "chamfer"
    with pytest.raises(ValueError, match="unknown reward"):
        validate_reward_name("no-such-distance")
    with pytest.raises(ValueError, match="no GRPO"):
        RewardScorer("sft")
    with pytest.raises(ValueError, match="non-negative"):
        RewardScorer("fmt", lambda_fmt=-1.0)


# --------------------------------------------------------------------------- scorer values


@pytest.mark.parametrize("name, ref", [("chamfer", chamfer_ref), ("hausdorff", hausdorff_ref)])
def test_semantic_reward_matches_paper_formulas(name, ref):
    emb = FakeEmbedder()
    scorer = RewardScorer(name, emb, lambda_fmt=1.0, lambda_sem=0.5)
    gen_f, gen_i = "The lungs are clear. There is a small left effusion.", "Small left effusion."
    comps = [GOOD, build_template(gen_f, gen_i), "no template", build_template("x y z.", "q.") + " <|im_end|>"]
    b = scorer.score(comps, [F_REF] * 4, [I_REF] * 4)
    assert b.fmt.tolist() == [1.0, 1.0, 0.0, 0.0]
    assert b.reasons == [None, None, "no_template", "non_text_tokens"]
    # identical report: both distances 0 -> R_sem = 2
    np.testing.assert_allclose(b.sem[0], 2.0, atol=1e-6)
    E = lambda t: np.stack([emb.vec(s) for s in split_sentences(t)]).astype(np.float64)  # noqa: E731
    expect = (1 - ref(E(gen_f), E(F_REF))) + (1 - ref(E(gen_i), E(I_REF)))
    np.testing.assert_allclose(b.sem[1], expect, atol=1e-5)
    # R_sem := 0 when R_fmt = 0; total is the weighted sum
    assert b.sem[2] == 0.0 and b.sem[3] == 0.0
    np.testing.assert_allclose(b.total, 1.0 * b.fmt + 0.5 * b.sem)
    assert scorer.counts["total"] == 4 and scorer.counts["no_template"] == 1 and scorer.counts["non_text_tokens"] == 1


def test_semantic_reward_is_invariant_to_sentence_order():
    scorer = RewardScorer("chamfer", FakeEmbedder())
    a = build_template("Heart size is normal. The lungs are clear.", "Normal chest.")
    b = build_template("The lungs are clear. Heart size is normal.", "Normal chest.")
    out = scorer.score([a, b], [F_REF] * 2, [I_REF] * 2)
    np.testing.assert_allclose(out.sem[0], out.sem[1], atol=1e-7)
    assert 0.0 < out.sem[0] < 2.0


def test_exact_reward_counts_matching_sections():
    scorer = RewardScorer("exact")
    comps = [GOOD, build_template(F_REF, "Something else."), build_template("Other.", "Other."), "bad"]
    b = scorer.score(comps, [F_REF] * 4, [I_REF] * 4)
    assert b.exact.tolist() == [2.0, 1.0, 0.0, 0.0]
    assert b.total.tolist() == [3.0, 2.0, 1.0, 0.0]


def test_scorer_rejects_misaligned_references():
    with pytest.raises(ValueError, match="differ in length"):
        RewardScorer("fmt").score([GOOD, GOOD], [F_REF], [I_REF])


def test_bad_completions_score_zero_and_never_reach_the_encoder():
    emb = FakeEmbedder()
    scorer = RewardScorer("hausdorff", emb)
    bad = ["", "<think></think><answer></answer>", "a" * 10_000, "<think> a </think> <answer> <|vision_start|> </answer>", None]
    b = scorer.score(bad, [F_REF] * 5, [I_REF] * 5)
    assert b.total.tolist() == [0.0] * 5
    assert emb.seen == []  # nothing was embedded
    assert set(r for r in b.reasons) <= set(BAD_REASONS)


# --------------------------------------------------------------------------- TRL adapters


def test_trl_functions_have_trl_signature_names_and_weights():
    funcs, weights = trl_reward_functions("chamfer", FakeEmbedder(), lambda_fmt=1.0, lambda_sem=2.0)
    assert [f.__name__ for f in funcs] == ["r_fmt", "r_sem_chamfer"]
    assert weights == [1.0, 2.0]
    for f in funcs:
        params = inspect.signature(f).parameters
        assert "completions" in params and any(p.kind is p.VAR_KEYWORD for p in params.values())
    assert [f.__name__ for f in trl_reward_functions("fmt")[0]] == ["r_fmt"]
    assert [f.__name__ for f in trl_reward_functions("exact")[0]] == ["r_fmt", "r_exact"]


def test_trl_functions_on_conversational_completions_log_components_once():
    emb = FakeEmbedder()
    funcs, weights = trl_reward_functions("hausdorff", emb)
    comps = [[{"role": "assistant", "content": GOOD}], [{"role": "assistant", "content": "no tags"}]]
    logged: dict[str, list[float]] = {}
    kwargs = dict(
        prompts=[[{"role": "user", "content": "p"}]] * 2,
        findings=[F_REF] * 2,
        impression=[I_REF] * 2,
        log_metric=lambda k, v: logged.setdefault(k, []).append(v),
        trainer_state=None,
    )
    outs = [f(completions=comps, **kwargs) for f in funcs]
    assert outs[0] == [1.0, 0.0]
    np.testing.assert_allclose(outs[1], [2.0, 0.0], atol=1e-6)
    total = np.sum([w * np.asarray(o) for w, o in zip(weights, outs)], axis=0)
    np.testing.assert_allclose(total, [3.0, 0.0], atol=1e-6)
    assert funcs[0].scorer.counts["total"] == 2  # the second function reused the first's result
    assert logged["bad_completions/no_template"] == [0.5]
    assert len(logged["reward_components/sem_findings"]) == 1
    assert "reward_time/seconds" in logged


def test_trl_function_names_the_missing_reference_column():
    (f,) = trl_reward_functions("fmt")[0]
    with pytest.raises(ValueError, match="findings"):
        f(completions=[GOOD], impression=[I_REF])


def test_real_encoder_embeds_only_new_sentences(tmp_path):
    emb_mod = pytest.importorskip("sdrlib.embedding")
    try:
        emb = emb_mod.SentenceEmbedder("all-MiniLM-L6-v2", cache_dir=tmp_path)
    except Exception as exc:  # encoder package not installed here
        pytest.skip(f"MiniLM encoder unavailable: {exc}")
    stats = prewarm(emb, [F_REF], [I_REF])  # the references, before training
    assert stats["misses"] == len(split_sentences(F_REF)) + len(split_sentences(I_REF))
    scorer = RewardScorer("chamfer", emb)
    scorer.score([GOOD], [F_REF], [I_REF])
    assert emb.stats["misses"] == stats["misses"]  # a completion made of reference sentences: nothing new
    comps = [GOOD, build_template("The lungs are clear. Small effusion.", I_REF)]
    first = scorer.score(comps, [F_REF] * 2, [I_REF] * 2)
    assert emb.stats["misses"] == stats["misses"] + 1  # only "Small effusion." was new
    assert first.new_sentences == 1 and scorer.counts["new_sentences"] == 1
    misses = emb.stats["misses"]
    again = scorer.score(comps, [F_REF] * 2, [I_REF] * 2)
    assert emb.stats["misses"] == misses  # nothing new to embed
    np.testing.assert_allclose(first.total, again.total)
    np.testing.assert_allclose(first.sem[0], 2.0, atol=1e-5)
    assert 1.0 < first.sem[1] < 2.0
