"""Property tests (issue 12): report parsing and rewards on arbitrary input.

Every public entry point of :mod:`sdrlib.reports` and :mod:`sdrlib.rewards` either returns a
value in its documented range (finite, never NaN) or raises a deliberate
:class:`~sdrlib.errors.SDRError` subclass; never a crash (``TypeError``, ``AttributeError``, ...)
and never NaN. Inputs: arbitrary Unicode text (with template tags, header words and invisible
characters mixed in), bytes, ``None``, NaN / inf / numbers, and chat-message lists.

Run with ``--hypothesis-show-statistics`` for example counts.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sdrlib.errors import SDRError
from sdrlib.reports import (Sections, is_blank, parse_template, split_report,
                            split_sentences)
from sdrlib.rewards import (BAD_REASONS, ReferenceTextError, RewardError, RewardScorer, check_completion,
                            exact_match_section, format_reward, trl_reward_functions)

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Pieces that steer random text into the interesting branches: tags, headers, sentence ends,
# invisible characters, chat special tokens, abbreviations, list markers.
PIECES = ["<think>", "</think>", "<answer>", "</answer>", "FINDINGS:", "Impression:", "history:",
          "FINDINGS AND IMPRESSION:", "\n", "\n\n", ". ", "; ", "!", "?", "approx.", "1. ", "2) ", "Dr. ",
          "\u200b", "\u200d", "\ufeff", "\u00ad", "\u00a0", "\u200f", "\u202e", "\u3164", "\u0301",
          "<|image_pad|>", "<|im_end|>", "\ufffd", "\x00", "nan", "The lungs are clear.", "No effusion."]

texts = st.lists(st.one_of(st.text(max_size=30), st.sampled_from(PIECES)), max_size=12).map("".join)


SENTENCES = ["The lungs are clear.", "Heart size is normal.", "No pleural effusion.", "Mild cardiomegaly.",
             "No acute cardiopulmonary process.", "There is a 1.2 cm nodule.", "Dr. XXXX was notified."]
# Report-like text with visible content: mostly real sentences, sometimes random text around them.
clean = st.one_of(
    st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=4).map(" ".join),
    st.tuples(st.sampled_from(SENTENCES), st.text(max_size=20)).map(lambda t: f"{t[0]} {t[1]}"),
    st.text(st.characters(blacklist_characters="<>"), min_size=1, max_size=30).map(lambda t: "A " + t),
)
blank = st.sampled_from(["", " ", "\u200b", "\ufeff\u00a0", "\t\n", "\u200f", "\u00ad\u3164"])


@st.composite
def templates(draw):
    """Text that is often a valid template (clean sections, blank outside), often almost one."""
    body = st.one_of(clean, clean, clean, texts, blank)
    outside = st.one_of(blank, blank, blank, texts)
    return (f"{draw(outside)}<think>{draw(body)}</think>{draw(outside)}"
            f"<answer>{draw(body)}</answer>{draw(outside)}")


def _utf8(s: str) -> bytes:
    """UTF-8 bytes of any drawn text (hypothesis draws lone surrogates, which strict UTF-8 refuses)."""
    return s.encode("utf-8", "surrogatepass")


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                    st.just(float("nan")), st.just(np.float32("nan")))
messages = st.lists(st.fixed_dictionaries(
    {"role": st.one_of(st.sampled_from(["assistant", "user", "system"]), scalars),
     "content": st.one_of(texts, templates(), scalars,
                          st.lists(st.one_of(st.fixed_dictionaries({"type": st.just("text"), "text": templates()}),
                                             st.fixed_dictionaries({"type": st.just("image")}),
                                             texts, scalars), max_size=3))}), max_size=3)
anything = st.one_of(texts, templates(), st.binary(max_size=40), templates().map(_utf8), scalars, messages,
                     st.lists(scalars, max_size=2))
# references: mostly usable text, sometimes missing / blank / not text
references = st.one_of(clean, clean, clean.map(_utf8), texts, blank, scalars, st.binary(max_size=20))


def _is_text(ref) -> bool:
    """What a reference must be to be scored: str or UTF-8 bytes with visible content."""
    if isinstance(ref, bytes):
        try:
            ref = ref.decode("utf-8")
        except UnicodeDecodeError:
            return False
    return isinstance(ref, str) and not is_blank(ref)


def _finite_in(values, allowed=None, lo=None, hi=None):
    arr = np.asarray(values, dtype=np.float64)
    assert np.isfinite(arr).all(), values
    if allowed is not None:
        assert set(arr.tolist()) <= set(allowed), values
    if lo is not None:
        assert (arr >= lo - 1e-9).all() and (arr <= hi + 1e-9).all(), values


# --------------------------------------------------------------------------- reports


@FAST
@given(anything)
def test_split_report_gives_sections_or_sdr_error(x):
    try:
        s = split_report(x)
    except SDRError:
        assert not isinstance(x, str)  # text always splits; only non-text / bad bytes refuse
        return
    assert isinstance(s, Sections) and isinstance(s.findings, str) and isinstance(s.impression, str)
    for sec in (s.findings, s.impression):
        assert sec == sec.strip() and "  " not in sec


@FAST
@given(anything)
def test_split_sentences_gives_sentences_or_sdr_error(x):
    try:
        out = split_sentences(x)
    except SDRError:
        assert not isinstance(x, str)
        return
    assert isinstance(out, list) and all(isinstance(s, str) and s == s.strip() and s for s in out)
    assert all(any(ch.isalpha() and not is_blank(ch) for ch in s) for s in out)  # a visible letter each


@FAST
@given(st.one_of(anything, templates()))
def test_parse_template_and_format_reward_never_raise(x):
    s = parse_template(x)
    r = format_reward(x, "paper")
    event(f"R_fmt = {r}")
    assert r in (0.0, 1.0) and (r == 1.0) == (s is not None)
    if s is not None:  # a valid template always has visible content in both sections
        assert not is_blank(s.findings) and not is_blank(s.impression)


@FAST
@given(st.one_of(texts, clean, blank), st.one_of(texts, clean, blank))
def test_property_build_template_output_always_parses_back(findings, impression):
    """build_template("\u200b", "x") succeeded although parse_template refuses the result (an invisible
    section): whatever build accepts, parse gives back the same sections; what it refuses has a reason."""
    from sdrlib.reports import ReportTextError, TEMPLATE_TAGS, build_template, normalize_text

    try:
        text = build_template(findings, impression)
    except ReportTextError:
        event("refused")
        assert any(is_blank(t) or any(tag in t for tag in TEMPLATE_TAGS) for t in (findings, impression))
        return
    event("built")
    assert parse_template(text) == Sections(normalize_text(findings), normalize_text(impression))
    assert format_reward(text, "paper") == 1.0


@FAST
@given(st.one_of(anything, templates()), st.one_of(st.just(4000), st.integers(-3, 50), scalars))
def test_check_completion_reason_or_sections(x, max_chars):
    try:
        sections, reason = check_completion(x, max_chars)
    except RewardError:  # only a bad max_chars may raise
        assert isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1
        return
    event(f"reason: {reason}")
    assert (sections is None) != (reason is None)
    assert reason is None or reason in BAD_REASONS
    if sections is not None:
        assert format_reward(x, "paper") == 1.0


@FAST
@given(references, references)
def test_exact_match_section_is_zero_or_one(gen, ref):
    try:
        r = exact_match_section(gen, ref)
    except SDRError:
        return
    assert r in (0.0, 1.0)


# --------------------------------------------------------------------------- rewards, TRL adapters


@FAST
@given(st.lists(st.one_of(templates(), anything), min_size=1, max_size=4), references, references)
def test_trl_fmt_and_exact_rewards_stay_in_range(completions, findings, impression):
    n = len(completions)
    for name in ("fmt", "exact"):
        funcs, weights = trl_reward_functions(name)
        try:
            outs = [f(completions=completions, findings=[findings] * n, impression=[impression] * n) for f in funcs]
        except SDRError as exc:
            # only a bad reference may raise, and then with the named error
            event(f"{name}: refused reference")
            assert isinstance(exc, ReferenceTextError)
            assert not (_is_text(findings) and _is_text(impression))
            continue
        event(f"{name}: scored, R_fmt sum {sum(outs[0]):.0f}")
        assert _is_text(findings) and _is_text(impression)  # a missing reference is never scored
        assert all(len(o) == n for o in outs)
        _finite_in(outs[0], allowed={0.0, 1.0})
        if name == "exact":
            _finite_in(outs[1], allowed={0.0, 1.0, 2.0})
            assert all(e == 0.0 for e, f in zip(outs[1], outs[0]) if f == 0.0)  # R_exact := 0 when R_fmt = 0


@FAST
@given(st.one_of(st.floats(0, 10), st.integers(0, 10), st.floats(0, 1e300), scalars | st.text(max_size=3)),
       st.one_of(st.floats(0, 10), st.integers(0, 10), st.floats(0, 1e300), scalars | st.text(max_size=3)),
       st.one_of(st.integers(1, 10**6), st.integers(1, 50), scalars | st.text(max_size=3)))
def test_scorer_parameters_are_checked_or_give_finite_totals(lf, ls, mc):
    try:
        scorer = RewardScorer("exact", lambda_fmt=lf, lambda_sem=ls, max_chars=mc)
    except RewardError:
        event("refused")
        return
    event("accepted")
    assert math.isfinite(scorer.lambda_fmt + 2 * scorer.lambda_sem)
    good = "<think> A. </think> <answer> B. </answer>"
    b = scorer.score([good, "no"], ["A."] * 2, ["B."] * 2)
    _finite_in(b.total, lo=0.0, hi=scorer.lambda_fmt + 2 * scorer.lambda_sem)


@pytest.fixture(scope="module")
def minilm(small_encoder):
    from sdrlib.embedding import SentenceEmbedder

    return SentenceEmbedder(small_encoder)


@SLOW
@given(st.lists(st.one_of(templates(), templates(), anything), min_size=1, max_size=3), references)
def test_set_distance_reward_stays_in_range(minilm, completions, impression):
    """R_sem with a real encoder (all-MiniLM-L6-v2): every value finite and in [0, 2]."""
    n = len(completions)
    funcs, weights = trl_reward_functions("chamfer", minilm)
    try:
        outs = [f(completions=completions, findings=["The lungs are clear. No effusion."] * n,
                  impression=[impression] * n) for f in funcs]
    except SDRError as exc:
        event("refused reference")
        assert isinstance(exc, ReferenceTextError) and not _is_text(impression)
        return
    event(f"scored, R_fmt sum {sum(outs[0]):.0f}")
    assert _is_text(impression)
    _finite_in(outs[0], allowed={0.0, 1.0})
    _finite_in(outs[1], lo=0.0, hi=2.0)
    assert all(s == 0.0 for s, f in zip(outs[1], outs[0]) if f == 0.0)
    total = sum(w * np.asarray(o) for w, o in zip(weights, outs))
    _finite_in(total, lo=0.0, hi=weights[0] + 2 * weights[1])
