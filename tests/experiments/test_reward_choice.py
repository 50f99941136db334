"""Choosing the trained recall setting on validation studies (issue 34): the grid, the rule, the refusals."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from audit_helpers import synth_record
from sdrlib.experiments import audit, reward_choice
from sdrlib.reports import build_template
from sdrlib.rewards import RewardError, parse_reward

GRPO = SimpleNamespace(lambda_fmt=1.0, lambda_sem=1.0, max_chars=4000)


_record = synth_record


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from sdrlib.embedding import SentenceEmbedder

    train = [_record("train", i) for i in range(120)]
    val = [_record("val", i) for i in range(24)]
    modal = build_template(*audit.modal_normal_report(train))
    # a policy that answers the modal normal report, the reference itself, or the reference plus a wrong finding
    wrong = "There is a large right pneumothorax."
    samples = {r.study_id: [modal, build_template(r.findings, r.impression),
                            build_template(f"{r.findings} {wrong}", r.impression)] for r in val}
    emb = SentenceEmbedder("all-MiniLM-L6-v2", cache_dir=tmp_path_factory.mktemp("emb"))
    return train, val, samples, emb


def test_grid_names_and_unsound_settings_refused_with_the_reason():
    assert reward_choice.grid_names([0.5, 1], [1, 2]) == ["chamfer_recall_0.5", "chamfer_recall_0.5_bal2",
                                                          "chamfer_recall_1", "chamfer_recall_1_bal2"]
    with pytest.raises(RewardError, match="extra text would weigh more"):  # alpha < 0.5: silence would pay
        reward_choice.grid_names([0.4], [1])
    with pytest.raises(RewardError, match="weight after _bal"):
        reward_choice.grid_names([1], [0.5])
    with pytest.raises(reward_choice.RewardChoiceError, match="non-empty"):
        reward_choice.grid_names([], [1])


def test_the_rule_picks_on_validation_and_records_the_grid(setup):
    train, val, samples, emb = setup
    grid = reward_choice.grid_names([0.5, 1], [1, 2])
    table, chosen = reward_choice.choose_recall_setting(grid, val, train, samples, emb, GRPO)
    assert list(table.reward) == grid and table.chosen.sum() == 1 and table.loc[table.chosen, "reward"].item() == chosen
    assert {"broken_required", "worst_required_diff", "mixed_margin", "sound", "n_references"} <= set(table.columns)
    assert table.sound.all() and (table.worst_required_diff > 0).all()  # every setting keeps the orderings now
    # the rule: the smallest w under which stating pays (mixed_margin > 0), else w = 1; then the largest margin
    paying = table[table.mixed_margin > 0]
    w = paying.weight.min() if len(paying) else table.weight.min()
    at_w = (paying if len(paying) else table)
    at_w = at_w[at_w.weight == w]
    assert chosen == at_w.sort_values(["mixed_margin", "alpha"], ascending=[False, True]).reward.iloc[0]
    # the prompt weight scales the abnormal prompts' margin: w = 2 doubles the abnormal half of mixed_margin
    one, two = (table.set_index("reward").loc[n] for n in ("chamfer_recall_1", "chamfer_recall_1_bal2"))
    assert two.silence_margin == pytest.approx(2 * one.silence_margin) and two.normal_margin == pytest.approx(one.normal_margin)


def test_no_sound_setting_is_refused_naming_what_breaks(setup, monkeypatch):
    train, val, samples, emb = setup
    real = audit.broken_orderings

    def all_broken(result):
        t = real(result)
        return t.assign(diff=-abs(t["diff"]) - 0.01, broken=True)

    monkeypatch.setattr(reward_choice.audit, "broken_orderings", all_broken)
    with pytest.raises(reward_choice.RewardChoiceError, match=r"chamfer_recall_1: .*paraphrase > hallucinated \(single: -"):
        reward_choice.choose_recall_setting(["chamfer_recall_1"], val, train, samples, emb, GRPO)


def test_a_grid_of_other_rewards_is_refused(setup):
    train, val, samples, emb = setup
    with pytest.raises(reward_choice.RewardChoiceError, match="not chamfer_recall"):
        reward_choice.choose_recall_setting(["chamfer"], val, train, samples, emb, GRPO)
    assert parse_reward("chamfer_recall_1").method == "chamfer_recall"


@pytest.mark.parametrize("alphas, weights, says", [
    (["0.5", 1], [1], r"alphas must be numbers, not \['0.5'\]"),
    ([1], ["2"], r"weights must be numbers"),
    ("0.5", [1], "alphas must be a list of numbers"),
    ([True], [1], "alphas must be numbers"),
])
def test_grid_values_that_are_not_numbers_are_refused_by_name(alphas, weights, says):
    with pytest.raises(reward_choice.RewardChoiceError, match=says):
        reward_choice.grid_names(alphas, weights)


def test_names_given_as_one_string_are_refused_not_read_as_characters(setup):
    train, val, samples, emb = setup
    with pytest.raises(reward_choice.RewardChoiceError, match=r"not one string .*\['chamfer_recall_1'\]"):
        reward_choice.choose_recall_setting("chamfer_recall_1", val, train, samples, emb, GRPO)


@pytest.mark.parametrize("case", ["no references", "one reference", "no samples", "empty samples", "unknown ids"])
def test_validation_inputs_the_rule_cannot_choose_from_are_refused(setup, case):
    train, val, samples, emb = setup
    refs, smp, says = val, samples, ""
    if case == "no references":
        refs, says = [], "at least 2 validation studies, got 0"
    elif case == "one reference":
        refs, smp, says = val[:1], {val[0].study_id: samples[val[0].study_id]}, "got 1"
    elif case == "no samples":
        smp, says = {}, "validation samples"
    elif case == "empty samples":
        smp, says = {k: [] for k in samples}, "validation samples"
    else:
        smp, says = {f"nope-{i}": v for i, v in enumerate(samples.values())}, "not validation references"
    with pytest.raises(reward_choice.RewardChoiceError, match=says):
        reward_choice.choose_recall_setting(["chamfer_recall_1"], refs, train, smp, emb, GRPO)


def test_nan_margins_choose_nothing(setup, monkeypatch):
    train, val, samples, emb = setup
    real = audit.expected_reward_view

    def nan_view(*a, **k):
        v = real(*a, **k)
        v["mixed_margin"] = float("nan")
        return v

    monkeypatch.setattr(reward_choice.audit, "expected_reward_view", nan_view)
    table, chosen = reward_choice.choose_recall_setting(reward_choice.grid_names([0.5, 1], [1]), val, train,
                                                        samples, emb, GRPO)
    assert chosen is None and not table.chosen.any() and table.sound.all()   # said, not picked by the tie-break
    assert "finite mixed_margin" in reward_choice.NO_PICK
