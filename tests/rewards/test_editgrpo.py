"""Tests for sdrlib.rewards.methods.editgrpo and sdrlib.training.editgrpo_trainer: the sentence-level edit rules, group layout, names, and the trainer hook
(edited completions re-tokenised, scored and entering the loss) on a tiny Qwen3-VL."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
import torch

from sdrlib import training
from sdrlib.rewards.methods import editgrpo
from sdrlib.training import editgrpo_trainer
from sdrlib.config import ConfigError, load_profile
from sdrlib.rewards.methods.editgrpo import EditError, edit_report, edit_section, parse_name
from sdrlib.training.editgrpo_trainer import group_slots
from sdrlib.reports import build_template, parse_template, split_sentences
from sdrlib.rewards import RewardError, trl_reward_functions, validate_reward_name
from training_helpers import FakeEmbedder, TINY_POLICY, make_records

REF_F = "There is a right lower lobe opacity. Heart size is normal. No pneumothorax."
REF_I = "Right lower lobe pneumonia."


def _vecs(emb, sents, dim=16):
    return np.stack([emb.vec(s) for s in sents]) if sents else np.zeros((0, dim))


class AxisEmbedder(FakeEmbedder):
    """Sentences listed in ``near`` share one direction (cosine 1), all others are orthogonal-ish."""

    def __init__(self, near=()):
        super().__init__()
        self.near = set(near)

    def vec(self, s):
        if s in self.near:
            v = np.zeros(self.dim, np.float32)
            v[0] = 1.0
            return v
        return super().vec(s)


# --------------------------------------------------------------------------- rules


def test_conflicting_presence_is_replaced_by_the_reference_sentence():
    emb = FakeEmbedder()
    gen = ["The lungs are clear.", "Small right pneumothorax."]
    ref = split_sentences(REF_F)
    out, c = edit_section(gen, ref, _vecs(emb, gen), _vecs(emb, ref), 0.6)
    assert "No pneumothorax." in out and "Small right pneumothorax." not in out
    assert c["replace_conflict"] == 1
    assert out[0] == "The lungs are clear."  # a sentence without entities is left alone


def test_false_positive_replaced_above_tau_deleted_below():
    gen = ["Small left pleural effusion."]
    ref = ["No pneumothorax.", "Heart size is normal."]
    emb = AxisEmbedder(near={"Small left pleural effusion.", "Heart size is normal."})
    out, c = edit_section(gen, ref, _vecs(emb, gen), _vecs(emb, ref), tau=0.6)
    assert c["replace_fp"] == 1 and c["delete"] == 0
    assert out[0] == "Heart size is normal."
    far = FakeEmbedder()  # random directions: cosine well below 0.9
    out, c = edit_section(gen, ref, _vecs(far, gen), _vecs(far, ref), tau=0.9)
    assert c["delete"] == 1 and c["replace_fp"] == 0
    assert "Small left pleural effusion." not in out


def test_missing_reference_finding_is_appended_and_empty_report_rebuilt():
    emb = FakeEmbedder()
    ref = split_sentences(REF_F)
    gen = ["The lungs are clear."]
    out, c = edit_section(gen, ref, _vecs(emb, gen), _vecs(emb, ref), 0.6)
    assert out == ["The lungs are clear.", ref[0]] and c == Counter({"add": 1})  # one operation (default)
    out, c = edit_section(gen, ref, _vecs(emb, gen), _vecs(emb, ref), 0.6, ops=None)
    assert out[0] == "The lungs are clear." and set(ref) <= set(out)  # until none applies: every entity added
    assert c["add"] == 3
    out, c = edit_section([], ["The lungs are clear."], _vecs(emb, []), _vecs(emb, ["The lungs are clear."]))
    assert out == ["The lungs are clear."] and c["add"] == 1  # rule (e)


def test_edit_terminates_on_a_self_contradicting_reference():
    emb = FakeEmbedder()
    ref = ["Small right pneumothorax.", "No pneumothorax."]
    gen = ["Large left pneumothorax."]
    out, c = edit_section(gen, ref, _vecs(emb, gen), _vecs(emb, ref), 0.6, ops=None)
    assert out and sum(c.values()) < 10


def test_one_edit_operation_per_section_by_default():
    """EditGRPO's released configuration (extractor_num_ops_per_para=1): a minimal edit, not a copy of the
    reference. A report with two conflicts and two missing findings gets one operation; ops=k gets k; ops=None
    (the editgrpo_opsall ablation) repairs everything."""
    emb = FakeEmbedder()
    gen = ["Heart is enlarged.", "Small right pneumothorax."]
    ref = ["Heart size is normal.", "No pneumothorax.", "There is a right lower lobe opacity.",
           "Small left pleural effusion."]
    gv, rv = _vecs(emb, gen), _vecs(emb, ref)
    out, c = edit_section(gen, ref, gv, rv, 0.6)
    assert sum(c.values()) == 1 and c["replace_conflict"] == 1 and len(out) == 2
    assert len(set(out) & set(gen)) == 1  # one sentence of the sample is kept
    out2, c2 = edit_section(gen, ref, gv, rv, 0.6, ops=2)
    assert sum(c2.values()) == 2 and set(out2) == {"Heart size is normal.", "No pneumothorax."}
    full, cf = edit_section(gen, ref, gv, rv, 0.6, ops=None)
    assert sum(cf.values()) == 4 and set(full) == set(ref)  # repeated editing: a copy of the reference
    assert edit_section(gen, ref, gv, rv, 0.6, ops=0) == (full, cf)  # 0 means the same as None
    for bad in (-1, 1.5, True, "1"):
        with pytest.raises(EditError, match="ops"):
            edit_section(gen, ref, gv, rv, 0.6, ops=bad)
    text = build_template(" ".join(gen), "No acute process.")
    one, c = edit_report(text, " ".join(ref), REF_I, emb)
    every, ca = edit_report(text, " ".join(ref), REF_I, emb, ops=None)
    assert sum(c.values()) == 2 and sum(ca.values()) > 2  # one per section vs all of them
    assert parse_template(every).findings == " ".join(full)


def test_edit_report_keeps_the_template_and_counts():
    emb = FakeEmbedder()
    text = build_template("Heart is enlarged. Small right pneumothorax.", "No acute process.")
    edited, c = edit_report(text, REF_F, REF_I, emb, tau=0.6)
    assert parse_template(edited) is not None and c["replace_conflict"] == 1 and c["add"] == 1  # one per section
    edited, c = edit_report(text, REF_F, REF_I, emb, tau=0.6, ops=None)
    assert parse_template(edited) is not None and c["replace_conflict"] == 2 and c["add"] >= 1
    same, c = edit_report(build_template(REF_F, REF_I), REF_F, REF_I, emb)
    assert same == build_template(REF_F, REF_I) and c == Counter({"unchanged": 1})
    rebuilt, c = edit_report("no template here", REF_F, REF_I, emb)
    assert parse_template(rebuilt) is not None and c["no_template"] == 1
    para, c = edit_report(text, REF_F, REF_I, emb, level="paragraph")
    assert para == build_template(REF_F, REF_I) and c["replace_section"] == 2


def test_group_slots_and_names():
    assert group_slots(8, 4, "sentence") == ([0, 1, 4, 5], {2: 0, 3: 1, 6: 4, 7: 5})
    assert group_slots(4, 4, "paragraph") == ([0, 1, 2], {3: 0})
    assert group_slots(4, 2, "none") == ([0, 1, 2, 3], {})
    assert parse_name("editgrpo") == (None, None, None) and parse_name("editgrpo_tau0.3") == (None, 0.3, None)
    assert parse_name("editgrpo_para_tau0.9") == ("paragraph", 0.9, None)
    assert parse_name("editgrpo_noedit") == ("none", None, None)
    assert parse_name("editgrpo_tau0") == (None, 0.0, None) and parse_name("chamfer") is None
    assert parse_name("editgrpo_opsall") == (None, None, 0) and parse_name("editgrpo_ops3_tau0.9") == (None, 0.9, 3)
    from sdrlib.rewards import reward_label

    assert reward_label("editgrpo_opsall") == "EditGRPO-opsall" and reward_label("editgrpo_ops2") == "EditGRPO-ops2"


@pytest.mark.parametrize("bad", [(6, 4, "sentence"), (4, 1, "sentence"), (4, 2, "word")])
def test_group_slots_refuse_partial_groups_and_unknown_levels(bad):
    with pytest.raises(EditError):
        group_slots(*bad)


@pytest.mark.parametrize("tau", [-0.1, 1.5, float("nan"), True, "0.6"])
def test_edit_refuses_bad_tau(tau):
    emb = FakeEmbedder()
    with pytest.raises(EditError, match="tau"):
        edit_section(["No pneumothorax."], ["No pneumothorax."], _vecs(emb, ["a."]), _vecs(emb, ["a."]), tau)


def test_edit_refuses_misaligned_vectors():
    emb = FakeEmbedder()
    with pytest.raises(EditError, match="rows must match"):
        edit_section(["a.", "b."], ["c."], _vecs(emb, ["a."]), _vecs(emb, ["c."]))


def test_reward_names_accept_edit_configurations_and_refuse_bad_ones():
    for name in ("editgrpo", "editgrpo_para", "editgrpo_tau0.3", "editgrpo_tau0", "editgrpo_noedit", "gcarl",
                 "editgrpo_ops1", "editgrpo_ops12", "editgrpo_opsall", "editgrpo_opsall_tau0.9"):
        assert validate_reward_name(name) == name
    for bad in ("editgrpo_tau2", "editgrpo_tau0.3x", "editgrpo_sentence", "editgrpo_ops0", "editgrpo_ops",
                "editgrpo_para_ops2", "editgrpo_ops-1"):
        with pytest.raises(RewardError, match="EditGRPO"):
            validate_reward_name(bad)
    with pytest.raises(ConfigError, match="grpo.rewards"):
        load_profile("smoke", {"grpo.rewards": ["fmt", "editgrpo_tau7"]})
    with pytest.raises(ConfigError, match="grpo.ablations"):
        load_profile("smoke", {"grpo.ablations": ["fmt"]})  # already in grpo.rewards
    with pytest.raises(ConfigError, match="grpo.editgrpo.tau"):
        load_profile("smoke", {"grpo.editgrpo.tau": 1.5})
    with pytest.raises(ConfigError, match="grpo.editgrpo.ops"):
        load_profile("smoke", {"grpo.editgrpo.ops": -1})
    with pytest.raises(ConfigError, match="grpo.editgrpo.learning_rate"):
        load_profile("smoke", {"grpo.editgrpo.learning_rate": -1.0e-6})
    with pytest.raises(ConfigError, match="grpo.editgrpo.weight_decay"):
        load_profile("smoke", {"grpo.editgrpo.weight_decay": -0.01})


def test_profiles_give_editgrpo_its_own_settings():
    assert load_profile("cpu").grpo.editgrpo.ops == 1  # the released configuration
    assert load_profile("paper").grpo.editgrpo.learning_rate == 1.0e-6  # EditGRPO's appendix, not SDR's 2e-5
    assert load_profile("cpu").grpo.editgrpo.learning_rate == 0.0  # 0 = grpo.learning_rate
    assert load_profile("paper").grpo.editgrpo.weight_decay == 1.0e-2  # EditGRPO's appendix
    assert load_profile("cpu").grpo.editgrpo.weight_decay == 0.0


def test_composite_clinical_reward_components():
    funcs, weights = trl_reward_functions("editgrpo", FakeEmbedder())
    assert [f.__name__ for f in funcs] == ["r_fmt", "r_f1_14", "r_f1_entity", "r_sem_neg"] and weights == [1.0] * 4
    good = build_template(REF_F, REF_I)
    wrong = build_template("Heart is enlarged. Small right pneumothorax.", "Cardiomegaly.")
    b = funcs[0].scorer.score([good, wrong, "x"], [REF_F] * 3, [REF_I] * 3)
    assert np.allclose([b.components[k][0] for k in ("f1_14", "f1_entity", "sem_neg")], 1.0)
    assert b.components["f1_14"][1] == 0.0 and b.components["f1_entity"][1] < 0.5
    assert b.total[2] == 0.0 and np.isclose(b.total[0], 4.0)


# --------------------------------------------------------------------------- trainer

TINY = {
    **TINY_POLICY,
    "sft.max_steps": 3, "sft.batch_size": 4, "sft.learning_rate": 1.0e-3, "sft.save_steps": 2,
    "grpo.max_steps": 2, "grpo.batch_size": 4, "grpo.num_generations": 4, "grpo.max_completion_length": 12,
    "grpo.save_steps": 1,
}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("sdr")
    mp = pytest.MonkeyPatch()
    mp.setenv("SDR_ROOT", str(root))
    torch.set_num_threads(1)
    cfg = load_profile("smoke", TINY)
    recs = make_records(8, root / "img")
    sft = training.sft(cfg, recs, progress=False)
    yield cfg, recs, sft
    mp.undo()


def _trainer(cfg, recs, sft, level, out):
    from trl import GRPOConfig as TRLGRPOConfig

    from sdrlib.rewards import RewardScorer

    emb = FakeEmbedder()
    model, processor = training.load_policy(cfg, sft.final)
    scorer = RewardScorer("editgrpo", emb)
    funcs, weights = trl_reward_functions("editgrpo", scorer=scorer)
    args = TRLGRPOConfig(output_dir=str(out), max_steps=1, per_device_train_batch_size=4, num_generations=4,
                         max_completion_length=12, beta=0.04, loss_type="dr_grpo", scale_rewards="none",
                         reward_weights=weights, report_to="none", use_cpu=True, disable_tqdm=True, seed=0,
                         gradient_checkpointing=False, logging_steps=1)
    return editgrpo_trainer.EditGRPOTrainer(model=model, reward_funcs=funcs, args=args,
                                    train_dataset=training.grpo_dataset(recs), processing_class=processor,
                                    edit_embedder=emb, edit_level=level, edit_tau=0.6)


def _batch(trainer):
    trainer.model.train()
    rows = [trainer.train_dataset[0]] * trainer.num_generations  # one group of one study
    torch.manual_seed(0)
    return rows, trainer._generate_and_score_completions(rows)


def _grad(trainer, batch):
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer.train; compute_loss reads it
    trainer.model.zero_grad()
    loss = trainer.compute_loss(trainer.model, batch)
    loss.backward()
    return torch.cat([p.grad.flatten() for p in trainer.model.parameters() if p.grad is not None]).clone()


def test_edited_half_is_retokenised_scored_and_enters_the_loss(setup, tmp_path):
    cfg, recs, sft = setup
    trainer = _trainer(cfg, recs, sft, "sentence", tmp_path / "a")
    rows, batch = _batch(trainer)
    log = trainer.edit_log[-1]
    tok = trainer._tokenizer
    ids = batch["completion_ids"]
    mask = batch["completion_mask"]
    changed = 0
    assert set(trainer._edited_rows) <= {2, 3}
    for i in (2, 3):  # the edited slots; their sources are 0 and 1
        row = ids[i][mask[i].bool()].tolist()
        text = tok.decode(row, skip_special_tokens=True)
        src = tok.decode(ids[i - 2][mask[i - 2].bool()].tolist(), skip_special_tokens=True)
        if i in trainer._edited_rows:
            assert text != src
            changed += 1
            assert parse_template(text) is not None  # the edit is a valid report, re-tokenised
            assert row[-1] in trainer.eos_token_ids  # and terminated
            sents = set(split_sentences(parse_template(text).findings))
            assert sents & set(split_sentences(rows[i]["findings"]))  # built from reference sentences
    assert changed >= 1 and changed + log["unchanged"] == 2  # G / 2 = 2 edited copies
    # the reference-model log-probs (beta > 0) were computed by TRL from these (edited) completion ids
    assert batch["ref_per_token_logps"].shape == ids.shape
    g_all = _grad(trainer, batch)
    no_edit = dict(batch)
    no_edit["completion_mask"] = batch["completion_mask"].clone()
    no_edit["completion_mask"][2:] = 0  # the same batch without its edited half
    g_sampled = _grad(trainer, no_edit)
    assert torch.isfinite(g_all).all() and not torch.allclose(g_all, g_sampled)


def _recording_generate(monkeypatch, fake_logprob=None):
    """Record what TRL's own ``_generate`` sampled; with ``fake_logprob``, also hand out per-token sampling
    log-probabilities as vLLM does (TRL's generation itself stays the CPU one)."""
    from trl import GRPOTrainer

    real = GRPOTrainer._generate
    seen = []

    def wrapped(self, prompts):
        vllm, self.use_vllm = self.use_vllm, False  # generate on CPU
        try:
            out = list(real(self, prompts))
        finally:
            self.use_vllm = vllm
        if fake_logprob is not None:
            out[4] = [[fake_logprob] * len(ids) for ids in out[1]]
        seen.append((len(prompts), [list(x) for x in out[1]]))
        return tuple(out)

    monkeypatch.setattr(GRPOTrainer, "_generate", wrapped)
    return seen


def test_every_slot_is_sampled_and_an_unchanged_edit_keeps_its_own_sample(setup, tmp_path, monkeypatch):
    """G/2 sampled + G/2 edited, and an edit that changes nothing leaves the slot's own sample, not its
    source's duplicate (the released code fills a target only when text_changed)."""
    cfg, recs, sft = setup
    seen = _recording_generate(monkeypatch)
    trainer = _trainer(cfg, recs, sft, "sentence", tmp_path / "k")
    monkeypatch.setattr(editgrpo, "edit_report", lambda text, *a, **k: (text, Counter({"unchanged": 1})))
    _, batch = _batch(trainer)
    n, sampled = seen[-1]
    assert n == 4 and trainer._edited_rows == [] and trainer.edit_log[-1]["unchanged"] == 2
    ids, mask = batch["completion_ids"], batch["completion_mask"]
    for i in range(4):  # every slot holds what was sampled for it
        assert ids[i][mask[i].bool()].tolist() == sampled[i]


def test_vllm_edited_rows_leave_the_importance_sampling_correction(setup, tmp_path, monkeypatch):
    """With use_vllm, TRL corrects each sampled row by exp(old - sampling log-probs). An edited row was not
    sampled: its sampling log-probs become the policy's own (TRL's old_per_token_logps), its ratio exactly 1;
    the rows that stay as sampled keep vLLM's log-probs. Runs TRL's own correction code on CPU (vLLM's
    generation is replaced by the CPU one handing out log-probs as vLLM would)."""
    cfg, recs, sft = setup
    _recording_generate(monkeypatch, fake_logprob=-0.25)
    trainer = _trainer(cfg, recs, sft, "sentence", tmp_path / "v")
    trainer.use_vllm = True  # after __init__: no vLLM engine is built; only the correction path switches on
    assert trainer.vllm_importance_sampling_correction
    trainer.vllm_importance_sampling_mode = "token_truncate"
    _, batch = _batch(trainer)
    rows = trainer._edited_rows
    assert rows, "the tiny policy's samples always need an edit"
    old, samp = batch["old_per_token_logps"], batch["sampling_per_token_logps"]
    ratio, mask = batch["importance_sampling_ratio"], batch["completion_mask"].bool()
    assert torch.isfinite(samp).all() and torch.isfinite(ratio).all()  # nothing invented, no NaN
    for i in range(4):
        if i in rows:
            assert torch.equal(samp[i], old[i]) and (ratio[i] == 1).all()
        else:
            assert (samp[i][mask[i]] == -0.25).all()
            want = torch.exp((old[i] - samp[i]) * mask[i]).clamp(max=trainer.vllm_importance_sampling_clip_max)
            assert torch.allclose(ratio[i], want)
    g = _grad(trainer, batch)
    assert torch.isfinite(g).all()


def test_exclude_edited_from_correction_token_and_sequence_modes():
    old = torch.tensor([[-1.0, -2.0], [-0.5, -0.5], [-3.0, 0.0]])
    for shape in ((3, 2), (3, 1)):
        batch = {"old_per_token_logps": old.clone(), "sampling_per_token_logps": torch.full((3, 2), float("nan")),
                 "importance_sampling_ratio": torch.full(shape, 0.5)}
        editgrpo_trainer.exclude_edited_from_correction(batch, [0, 2])
        assert torch.equal(batch["sampling_per_token_logps"][[0, 2]], old[[0, 2]])
        assert torch.isnan(batch["sampling_per_token_logps"][1]).all()  # other rows untouched
        assert (batch["importance_sampling_ratio"][[0, 2]] == 1).all() and (batch["importance_sampling_ratio"][1] == 0.5).all()
    plain = {"completion_ids": torch.zeros(2, 2)}
    assert editgrpo_trainer.exclude_edited_from_correction(plain, [1]) == plain  # no vLLM: nothing to do
    with pytest.raises(EditError, match="old_per_token_logps"):
        editgrpo_trainer.exclude_edited_from_correction({"sampling_per_token_logps": torch.zeros(2, 2)}, [0])


def test_edited_rows_get_their_own_advantages(setup, tmp_path):
    cfg, recs, sft = setup
    trainer = _trainer(cfg, recs, sft, "sentence", tmp_path / "b")
    _, batch = _batch(trainer)
    adv = batch["advantages"].flatten()
    assert adv.shape[0] == 4 and torch.isclose(adv.sum(), torch.tensor(0.0), atol=1e-5)  # Dr. GRPO: r - mean
    assert (adv[2:] > adv[:2]).all()  # the tiny policy's samples score below their edits


def test_grpo_editgrpo_run_logs_edit_counts_and_dr_grpo(setup, monkeypatch):
    cfg, recs, sft = setup
    import sdrlib.embedding as embedding

    monkeypatch.setattr(embedding.SentenceEmbedder, "from_config", classmethod(lambda cls, c: FakeEmbedder()))
    lr_cfg = load_profile("smoke", {**TINY, "grpo.editgrpo.learning_rate": 1.0e-6,  # EditGRPO's own lr (paper profile)
                                    "grpo.editgrpo.weight_decay": 1.0e-2})  # and its weight decay
    res = training.grpo(lr_cfg, "editgrpo_para", sft.final, recs, embedder=FakeEmbedder(), progress=False)
    info = json.loads((res.path / "run.json").read_text())
    assert info["loss_type"] == "dr_grpo" and info["scale_rewards"] == "none" and info["edit_level"] == "paragraph"
    assert info["learning_rate"] == 1.0e-6 != lr_cfg.grpo.learning_rate and info["edit_ops"] == 1
    assert info["weight_decay"] == 1.0e-2  # what the optimizer's decayed parameter group ran with
    e = info["edits"]  # one edited copy per group of 4, one group per step: replaced sections or unchanged
    assert e["replace_section"] + e["unchanged"] >= info["steps"] and e["delete"] == e["add"] == 0
    curves = training.read_curves(res.path)
    assert {"edits/replace_section", "edits/add", "edits/seconds", "reward_time/seconds",
            "rewards/r_f1_14/mean"} <= set(curves.columns)
    assert np.allclose(curves["learning_rate"].dropna(), 1.0e-6)  # what the optimizer ran at
    log = (res.path / "train.log").read_text()
    assert '"loss"' in log  # TRL's per-step dicts go to the run's log file


def test_edit_trainer_refuses_a_batch_of_mixed_studies(setup, tmp_path):
    cfg, recs, sft = setup
    trainer = _trainer(cfg, recs, sft, "sentence", tmp_path / "c")
    trainer.model.train()
    rows = [trainer.train_dataset[0]] * 2 + [trainer.train_dataset[1]] * 2
    with pytest.raises(EditError, match="whole groups"):
        trainer._generate_and_score_completions(rows)
