"""Checks for the exercises of docs/teaching.md, and proof that each check can pass and can fail.

Every exercise has a **check** (a function that raises ``AssertionError`` when a solution does not do
what the exercise asks), a **reference solution** written here, and a **stock** counterpart: what the
library (or the obvious first attempt) does today. Three tests per exercise, all selected by
``-k <exercise>``:

- ``test_exercise[<exercise>-yours]``: the check on *your* solution, the attribute of the same name in
  ``teaching_solutions.py`` at the repository root (or the file named by ``SDR_TEACHING_SOLUTIONS``).
  Without one the id reads ``[<exercise>-reference]`` and the reference is checked instead, so the
  test id always says whose code passed.
- ``test_check_passes_on_reference[<exercise>]``: the check is satisfiable (not vacuous).
- ``test_check_fails_on_stock[<exercise>]``: the check fails on the stock behaviour (it tests
  something new).

Example: ``.venv/bin/python -m pytest tests/notebooks/test_teaching.py -k hausdorff_forgiving -v``.
Everything here runs in seconds on a CPU: no encoder, no model, no data download.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from sdrlib.reports import Sections, build_template, parse_template, split_report

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = Path(os.environ.get("SDR_TEACHING_SOLUTIONS", ROOT / "teaching_solutions.py"))


# --------------------------------------------------------------------------- helpers
def _onehot(idx: list[int], d: int = 8) -> np.ndarray:
    """A sentence set of orthonormal embeddings: rows e_i (cosine cost 0 to itself, 0.5 to any other)."""
    return np.eye(d)[idx]


def _random_sets(seed: int, n_pairs: int = 12, d: int = 8) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((int(rng.integers(1, 6)), d)), rng.standard_normal((int(rng.integers(1, 6)), d)))
            for _ in range(n_pairs)]


# --------------------------------------------------------------------------- 00 data: strata
def check_strata_rule(stratum: Callable[[dict], str]) -> None:
    """Your ``stratum(labels)`` agrees with the paper's rule (appendix F) on the labeler's reading of real-style
    sentences and on the cases that trip a first attempt (Support Devices, uncertain, No Finding)."""
    import pandas as pd

    from sdrlib.data import stratum as ref
    from sdrlib.clinical import label_report

    cases = [{}, {"No Finding": 1}, {"Support Devices": 1}, {"Support Devices": 1, "Edema": 1},
             {"Edema": 1, "Cardiomegaly": -1}, {"Edema": 0, "Pneumothorax": 0}, {"Lung Opacity": -1},
             {"Pleural Effusion": 1, "Atelectasis": 1, "Support Devices": 1}]
    sentences = pd.read_csv(ROOT / "tests" / "fixtures" / "labeler_sentences.csv", keep_default_na=False)
    cases += [label_report(t) for t in sentences["text"]]
    for labels in cases:
        assert stratum(dict(labels)) == ref(labels), f"stratum({labels}) should be {ref(labels)!r}"


def _strata_reference(labels: dict) -> str:
    skip = {"No Finding", "Support Devices"}
    n = sum(1 for k, v in labels.items() if k not in skip and v in (1, -1))
    return ("no_finding", "single", "multi")[min(n, 2)]


def _strata_stock(labels: dict) -> str:  # the first attempt: every positive observation but No Finding counts
    n = sum(1 for k, v in labels.items() if k != "No Finding" and v == 1)
    return ("no_finding", "single", "multi")[min(n, 2)]


# --------------------------------------------------------------------------- 01 embedding: sections, template
OPINION_REPORTS = {
    "Findings: The heart is normal in size. The lungs are clear.\nOpinion: No acute cardiopulmonary disease.":
        ("The heart is normal in size. The lungs are clear.", "No acute cardiopulmonary disease."),
    "FINDINGS: Small left pleural effusion. CONCLUSION: Small effusion.":
        ("Small left pleural effusion.", "Small effusion."),
    "FINDINGS: Heart size normal. OPINION: Normal chest.":
        ("Heart size normal.", "Normal chest."),
}
STANDARD_REPORTS = [
    "FINAL REPORT\n INDICATION: cough\n FINDINGS: The heart is mildly enlarged. No pneumothorax.\n"
    " IMPRESSION:\n 1. Mild cardiomegaly.\n 2. Small left pleural effusion.",
    "FINDINGS: Lungs are clear. IMPRESSION: Normal. RECOMMENDATION(S): none.",
    "Impression: Stable appearance of the chest.",
    "No headers at all, just a sentence.",
]


def check_opinion_header(split: Callable[[str], Sections]) -> None:
    """Your splitter reads ``Opinion:`` (UK reports) like ``Impression:`` and otherwise splits as split_report."""
    for text, (f, i) in OPINION_REPORTS.items():
        got = split(text)
        assert (got.findings, got.impression) == (f, i), f"{text!r} -> {got}"
    for text in STANDARD_REPORTS:
        assert split(text) == split_report(text), f"{text!r}: changed what split_report already did"


def _opinion_reference(text: str) -> Sections:
    return split_report(re.sub(r"(?im)\bopinion\s*:", "IMPRESSION:", text))


TEMPLATE_OK = build_template("The heart is enlarged. Small effusion.", "Cardiomegaly.")
LENIENT_ACCEPT = [TEMPLATE_OK + " Hope this helps!", TEMPLATE_OK + "\n\nLet me know if you need more.",
                  TEMPLATE_OK]
LENIENT_REJECT = ["<answer> x </answer> <think> y </think>",
                  "<think> a <think> b </think> </think> <answer> c </answer>",
                  "<think> a </think> <answer>  </answer>", "The heart is enlarged.",
                  "Sure! " + TEMPLATE_OK, TEMPLATE_OK + " <answer> again </answer>"]


def check_lenient_template(parse: Callable[[str], Sections | None]) -> None:
    """Your parser forgives chatter *after* ``</answer>`` and nothing else the paper's rule rejects."""
    want = parse_template(TEMPLATE_OK)
    for text in LENIENT_ACCEPT:
        assert parse(text) == want, f"should accept {text!r} as {want}"
    for text in LENIENT_REJECT:
        assert parse(text) is None, f"should still reject {text!r}"


def _lenient_reference(text: str) -> Sections | None:
    end = text.find("</answer>")
    if end < 0 or text.count("</answer>") != 1:
        return None
    return parse_template(text[: end + len("</answer>")])


# --------------------------------------------------------------------------- 02 distances
def check_hausdorff_forgiving(dist: Callable[[np.ndarray, np.ndarray], float]) -> None:
    """Your distance forgives ONE extra (or missing) sentence, but not two, and otherwise reads like Hausdorff."""
    from sdrlib.distances import set_distance

    A = _onehot([0, 1, 2])
    assert abs(dist(A, A)) < 1e-9, "identical sets must be at distance 0"
    one_extra, two_extra = _onehot([0, 1, 2, 5]), _onehot([0, 1, 2, 5, 6])
    assert set_distance(A, one_extra, "hausdorff") == pytest.approx(0.5)  # what stock Hausdorff says
    assert abs(dist(A, one_extra)) < 1e-9 and abs(dist(one_extra, A)) < 1e-9, "one extra sentence is forgiven"
    assert dist(A, two_extra) == pytest.approx(0.5), "two extra sentences are not forgiven"
    assert dist(_onehot([0]), _onehot([1])) == pytest.approx(0.5), "single sentences that differ stay far apart"
    for a, b in _random_sets(0):
        v, h = float(dist(a, b)), set_distance(a, b, "hausdorff")
        assert 0.0 <= v <= h + 1e-12, f"in [0, 1] and never harsher than Hausdorff ({v} vs {h})"
        assert v == pytest.approx(float(dist(b, a))), "symmetric"


def _forgiving_reference(A: np.ndarray, B: np.ndarray) -> float:
    from sdrlib.distances.costs import as_pair, cosine_cost

    a, b = as_pair(A, B)
    return _forgiving_on_cost(cosine_cost(a, b))


def _forgiving_on_cost(M: np.ndarray) -> float:
    """Second-worst nearest-neighbour cost in either direction of the cost block ``M`` (n, m)."""
    def second_worst(nn: np.ndarray) -> float:
        return float(np.sort(nn)[-2]) if len(nn) > 1 else float(nn[0])

    return max(second_worst(M.min(axis=1)), second_worst(M.min(axis=0)))


def _hausdorff_stock(A: np.ndarray, B: np.ndarray) -> float:
    from sdrlib.distances import set_distance

    return set_distance(A, B, "hausdorff")


def check_registry_family(name: str) -> None:
    """``name`` is a new family registered with ``sdrlib.distances.registry.register_family``: ``make_spec(name)``
    builds it, ``set_distance`` computes it (0 on identical sets, symmetric, in [0, 1]), the batched engine gives
    the same values, and it is not a renamed copy of an existing family."""
    from sdrlib.distances import FAMILIES, make_spec, set_distance
    from sdrlib.distances.engine import pairwise_distances

    assert name in FAMILIES, (f"{name!r} is not in FAMILIES: register it with "
                              "sdrlib.distances.registry.register_family(Family(...))")
    spec = make_spec(name)
    pairs = _random_sets(1)
    A = _onehot([0, 1, 2])
    assert set_distance(A, A, spec) == pytest.approx(0.0, abs=1e-9)
    vals = []
    for a, b in pairs:
        v = set_distance(a, b, spec)
        assert 0.0 <= v <= 1.0 and v == pytest.approx(set_distance(b, a, spec))
        vals.append(v)
    probe = pairs + [(A, _onehot([0, 1, 2, 5])), (A, _onehot([0, 1, 2, 5, 6]))]
    vals += [set_distance(a, b, spec) for a, b in probe[len(pairs):]]
    batched = pairwise_distances([a for a, _ in probe], [b for _, b in probe], spec)
    assert np.allclose(np.diag(batched), vals, atol=1e-9), "the engine's kernel disagrees with the reference"
    for other, fam in FAMILIES.items():
        if other == name or other == "gw" or fam.presence == "required":
            continue
        o = [set_distance(a, b, make_spec(other)) for a, b in probe]
        assert not np.allclose(vals, o), f"{name} gives the same values as {other}"


def _register_reference_family(monkeypatch, name: str = "hausdorff_2nd") -> str:
    """What the exercise asks you to write in the library, done here for the duration of one test."""
    from sdrlib.distances import registry

    def kernel(batch):
        out = np.array([_forgiving_on_cost(batch.cost_block(p)) for p in range(batch.P)])
        return out, np.ones(batch.P, dtype=bool)

    # straight into the registry's table (undone by monkeypatch after the test; register_family has no undo)
    monkeypatch.setitem(registry.FAMILIES._items, name, registry.Family(
        name, lambda A, B, M=None: (_forgiving_reference(A, B), True), kernel,
        describe=lambda p: "Hausdorff forgiving one sentence: second-worst nearest-neighbour cost in either direction"))
    return name


# --------------------------------------------------------------------------- 03 SFT: paired tests
def _paired_data(seed: int = 0, n: int = 200, diff: float = 0.02):
    rng = np.random.default_rng(seed)
    b = rng.uniform(0.0, 0.9, n)  # per-study difficulty: a wide spread
    a = b + diff + rng.normal(0, 0.01, n)  # A is a little better on almost every study
    return a, b


def check_paired_test(p_value: Callable[[np.ndarray, np.ndarray], float]) -> None:
    """Your ``p_value(a, b)`` (per-sample scores of systems A and B on the same studies) is a two-sided
    paired test: it sees a small but consistent gain that an unpaired test misses, is 1-ish for
    identical systems, symmetric in A and B, and not significant for pure noise."""
    a, b = _paired_data()
    p = p_value(a, b)
    assert 0.0 <= p <= 1.0
    assert p < 0.01, f"a consistent +0.02 on 200 studies is significant for a paired test (p = {p})"
    assert p_value(b, a) == pytest.approx(p, abs=0.02), "two-sided: swapping A and B keeps p"
    assert p_value(b, b) > 0.5, "identical systems"
    rng = np.random.default_rng(1)
    noise = rng.normal(0, 0.05, 200)
    assert p_value(b + noise, b - noise[::-1]) > 0.01, "pure noise is not significant"


def _paired_reference(a: np.ndarray, b: np.ndarray, n: int = 2000, seed: int = 0) -> float:
    """Sign-flip permutation test of the mean paired difference."""
    d = np.asarray(a, float) - np.asarray(b, float)
    if not np.any(d):
        return 1.0
    rng = np.random.default_rng(seed)
    flips = rng.choice([-1.0, 1.0], size=(n, len(d)))
    null = np.abs((flips * d).mean(axis=1))
    return float((1 + np.sum(null >= abs(d.mean()) - 1e-15)) / (n + 1))


def _unpaired_stock(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import mannwhitneyu

    return float(mannwhitneyu(a, b, alternative="two-sided").pvalue)


# --------------------------------------------------------------------------- 04 GRPO: rewards
def check_reward_ignores_impression(make_reward: Callable[..., Callable]) -> None:
    """``make_reward(embedder)`` returns ``reward(completions, findings, impression) -> array`` that scores the
    template and the Findings set distance (Chamfer), and ignores the Impression entirely."""
    from training_helpers import FakeEmbedder  # a deterministic stand-in encoder (hashing), no model load

    reward = make_reward(FakeEmbedder())
    F, I = "The heart is enlarged. Small left pleural effusion.", "Cardiomegaly."
    good = build_template(F, I)
    other_i = build_template(F, "No acute disease. Lungs are clear.")
    other_f = build_template("The lungs are clear. No pneumothorax.", I)
    r = np.asarray(reward([good, other_i, other_f, F], [F] * 4, [I] * 4), dtype=float)
    assert r.shape == (4,) and np.all(np.isfinite(r))
    assert r[0] == pytest.approx(2.0), "a perfect completion: R_fmt 1 + Findings 1"
    assert r[1] == pytest.approx(r[0]), "a different Impression must not change the reward"
    assert r[2] < r[0] - 0.05, "a different Findings section must lower it"
    assert r[3] == 0.0, "no template: 0"


def _findings_only_reference(embedder):
    from sdrlib.rewards import RewardScorer

    scorer = RewardScorer("chamfer", embedder)

    def reward(completions, findings, impression):
        b = scorer.score(completions, findings, impression)
        return b.fmt + b.sem_findings

    return reward


def _full_reward_stock(embedder):
    from sdrlib.rewards import RewardScorer

    scorer = RewardScorer("chamfer", embedder)
    return lambda c, f, i: scorer.score(c, f, i).total


# --------------------------------------------------------------------------- 05 selection: aggregation
def check_robust_aggregation(agg: Callable[[np.ndarray], np.ndarray]) -> None:
    """Your ``agg(D)`` over the bank axis ``(..., N) -> (...)`` is not fooled by one near-duplicate (or one
    far-away) bank report, is monotone, and leaves a constant row at its value."""
    from sdrlib.selection import argmin_first

    D = np.random.default_rng(0).uniform(0, 1, (3, 5, 7))
    out = np.asarray(agg(D))
    assert out.shape == (3, 5)
    assert np.asarray(agg(np.full((2, 9), 0.3))) == pytest.approx(np.full(2, 0.3))
    dup = np.array([0.5, 0.5, 0.5, 0.5, 0.0])   # one bank report is a near-copy of the candidate
    far = np.array([0.5, 0.5, 0.5, 0.5, 1.0])   # one bank report is unrelated
    assert float(agg(dup)) >= 0.45, f"one near-duplicate pulls the score to {float(agg(dup))}"
    assert float(agg(far)) <= 0.55, f"one outlier pushes the score to {float(agg(far))}"
    assert np.all(np.asarray(agg(D + 0.1)) >= out - 1e-12), "monotone"
    # best-of-2: the candidate that is typical of the bank wins over the one that copies a single report
    cands = np.array([[0.0, 0.6, 0.6, 0.6, 0.6], [0.35, 0.35, 0.35, 0.35, 0.35]])
    assert int(argmin_first(np.asarray(agg(cands)))) == 1


def _median_reference(D: np.ndarray) -> np.ndarray:
    return np.median(np.asarray(D, float), axis=-1)


def _avg_stock(D: np.ndarray) -> np.ndarray:
    from sdrlib.selection import aggregate

    return aggregate(np.asarray(D, float), "avg")


# --------------------------------------------------------------------------- 06 pruning: the schedule
def check_pruning_schedule(pool_sizes: Callable[[int, float], list[int]]) -> None:
    """``pool_sizes(K, p)``: candidates alive at each round of Algorithm 1 when the worst ceil(p x |C|) are
    dropped per round, never the last one."""
    expected = {(5, 0.5): [5, 2, 1], (8, 0.5): [8, 4, 2, 1], (5, 0.2): [5, 4, 3, 2, 1], (1, 0.5): [1],
                (5, 0.99): [5, 1], (16, 0.25): [16, 12, 9, 6, 4, 3, 2, 1]}
    for (k, p), want in expected.items():
        assert list(pool_sizes(k, p)) == want, f"K={k}, p={p}: expected {want}, got {list(pool_sizes(k, p))}"


def _schedule_reference(k: int, p: float) -> list[int]:
    sizes = [k]
    while sizes[-1] > 1:
        c = sizes[-1]
        sizes.append(max(1, c - math.ceil(p * c)))
    return sizes


def _schedule_floor_stock(k: int, p: float) -> list[int]:  # drops floor(p x |C|): the off-by-one to avoid
    sizes = [k]
    while sizes[-1] > 1:
        c = sizes[-1]
        sizes.append(max(1, c - max(1, math.floor(p * c))))
    return sizes


# --------------------------------------------------------------------------- 07 figures
CURVES = {"R_fmt": (np.arange(1, 33), np.linspace(0.4, 1.0, 32), 1.0),
          "R_Cham": (np.arange(1, 33), np.linspace(1.2, 2.7, 32), 3.0),
          "R_exact": (np.arange(1, 33), np.linspace(0.9, 1.1, 32), 3.0)}


def check_reward_axes(plot: Callable[[dict], Any]) -> None:
    """``plot(curves)`` with ``curves = {name: (steps, values, max_reward)}`` draws one panel per reward, each
    y axis from 0 to that reward's maximum, titled with the reward's name, steps as whole numbers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plot(CURVES)
    try:
        axes = [ax for ax in fig.axes if ax.lines]
        assert len(axes) == len(CURVES), f"one panel per reward, got {len(axes)} panels with lines"
        for ax in axes:
            name = next((n for n in CURVES if n in ax.get_title()), None)
            assert name is not None, f"panel title {ax.get_title()!r} names no reward"
            lo, hi = ax.get_ylim()
            assert lo == pytest.approx(0.0, abs=0.05) and hi == pytest.approx(CURVES[name][2], rel=0.06), (
                f"{name}: y axis {lo:.2f}..{hi:.2f}, expected 0..{CURVES[name][2]}")
            fig.canvas.draw()
            ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
            assert ticks and all(float(t).is_integer() for t in ticks), f"{name}: fractional step ticks {ticks}"
    finally:
        plt.close(fig)


def _axes_reference(curves: dict):
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(1, len(curves), figsize=(4 * len(curves), 3))
    for ax, (name, (steps, values, top)) in zip(np.atleast_1d(axes), curves.items()):
        ax.plot(steps, values)
        ax.set(title=name, ylim=(0, top), xlabel="step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return fig


def _one_axis_stock(curves: dict):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    for name, (steps, values, _) in curves.items():
        ax.plot(steps, values, label=name)
    ax.legend()
    return fig


# --------------------------------------------------------------------------- the exercise table
@dataclass(frozen=True)
class Exercise:
    name: str               # the attribute in teaching_solutions.py, and the -k key
    notebook: str
    check: Callable[[Any], None]
    reference: Any
    stock: Any
    register: Callable | None = None  # registers the reference in the library for one test (monkeypatch)


EXERCISES = {e.name: e for e in [
    Exercise("strata_rule", "00_data", check_strata_rule, _strata_reference, _strata_stock),
    Exercise("opinion_header", "01_embedding", check_opinion_header, _opinion_reference, split_report),
    Exercise("lenient_template", "01_embedding", check_lenient_template, _lenient_reference, parse_template),
    Exercise("hausdorff_forgiving", "02_distances", check_hausdorff_forgiving, _forgiving_reference,
             _hausdorff_stock),
    Exercise("registry_family", "02_distances", check_registry_family, "hausdorff_2nd", "hausdorff_2nd",
             _register_reference_family),
    Exercise("paired_test", "03_sft", check_paired_test, _paired_reference, _unpaired_stock),
    Exercise("reward_ignores_impression", "04_grpo", check_reward_ignores_impression, _findings_only_reference,
             _full_reward_stock),
    Exercise("robust_aggregation", "05_selection", check_robust_aggregation, _median_reference, _avg_stock),
    Exercise("pruning_schedule", "06_pruning", check_pruning_schedule, _schedule_reference, _schedule_floor_stock),
    Exercise("reward_axes", "07_figures", check_reward_axes, _axes_reference, _one_axis_stock),
]}


def _learner_module():
    """(module or None, import error or None) of teaching_solutions.py; read once at collection."""
    if not SOLUTIONS.is_file():
        return None, None
    spec = importlib.util.spec_from_file_location("teaching_solutions", SOLUTIONS)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # noqa: BLE001 - reported by the learner's test, not at collection
        return None, e
    return mod, None


_MOD, _MOD_ERROR = _learner_module()


def _whose(name: str) -> str:
    return "yours" if _MOD_ERROR is not None or (_MOD is not None and hasattr(_MOD, name)) else "reference"


@pytest.mark.parametrize("name, whose", [(n, _whose(n)) for n in EXERCISES],
                         ids=[f"{n}-{_whose(n)}" for n in EXERCISES])
def test_exercise(name, whose, monkeypatch):
    """Your solution (``teaching_solutions.<name>``) when you wrote one, else the reference (see the id)."""
    ex = EXERCISES[name]
    if whose == "reference":
        if ex.register is not None:
            ex.register(monkeypatch)
        ex.check(ex.reference)
        return
    if _MOD_ERROR is not None:
        raise AssertionError(f"{SOLUTIONS} does not import: {_MOD_ERROR!r}") from _MOD_ERROR
    ex.check(getattr(_MOD, name))


@pytest.mark.parametrize("name", list(EXERCISES))
def test_check_passes_on_reference(name, monkeypatch):
    ex = EXERCISES[name]
    if ex.register is not None:
        ex.register(monkeypatch)
    ex.check(ex.reference)


@pytest.mark.parametrize("name", list(EXERCISES))
def test_check_fails_on_stock(name, monkeypatch):
    ex = EXERCISES[name]
    if ex.register is not None:  # the family must be absent, whatever the learner added to the library
        from sdrlib.distances import registry

        monkeypatch.delitem(registry.FAMILIES, ex.stock, raising=False)
    with pytest.raises(AssertionError):
        ex.check(ex.stock)


def test_every_exercise_is_in_the_doc():
    """docs/teaching.md names each exercise's -k key and its notebook, and nothing the tests lack."""
    doc = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    keys = set(re.findall(r"-k ([a-z_]+)`", doc))
    assert keys == set(EXERCISES), (keys ^ set(EXERCISES))
    for ex in EXERCISES.values():
        assert ex.notebook in doc
