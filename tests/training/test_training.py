"""Tests for sdrlib.training: SFT then GRPO on a tiny Qwen3-VL, curves, resume, reuse, bad input."""

from __future__ import annotations

import json

import pytest
import torch

from sdrlib import training
from sdrlib.config import load_profile
from sdrlib.models import PolicyError
from training_helpers import FakeEmbedder, TINY_POLICY, make_records

TINY = {
    **TINY_POLICY,
    "sft.max_steps": 3,
    "sft.batch_size": 4,
    "sft.learning_rate": 1.0e-3,
    "sft.save_steps": 2,
    "grpo.max_steps": 2,
    "grpo.batch_size": 4,
    "grpo.num_generations": 2,
    "grpo.max_completion_length": 12,
    "grpo.save_steps": 1,
}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("sdr")
    mp = pytest.MonkeyPatch()
    mp.setenv("SDR_ROOT", str(root))
    torch.set_num_threads(1)
    cfg = load_profile("smoke", TINY)
    recs = make_records(12, root / "img")
    sft = training.sft(cfg, recs)
    yield cfg, recs, sft
    mp.undo()


def test_sft_writes_policy_curves_and_run_record(setup):
    cfg, recs, res = setup
    assert res.final == training.run_dir(cfg, "sft", seed=cfg.seed) / "final" == training.policy_dir(cfg, "sft")
    assert (res.final / "config.json").is_file() and (res.final / "processor_config.json").is_file()
    curves = training.read_curves(res.path)
    assert curves["step"].max() == 3 and {"loss", "step_seconds"} <= set(curves.columns)
    info = json.loads((res.path / "run.json").read_text())
    assert info["steps"] == 3 and info["n_train"] == len(recs) and info["torch_threads"] == 1
    again = training.sft(cfg, recs)  # a finished run is reused, not retrained
    assert again.reused and again.final == res.final


def test_sft_datasets_put_the_report_in_the_completion(setup):
    _, recs, _ = setup
    ds = training.sft_dataset(recs)
    row = ds[0]
    assert row["prompt"][0]["role"] == "user" and row["completion"][0]["role"] == "assistant"
    assert row["completion"][0]["content"].startswith("<think> ") and len(row["images"]) == 1
    g = training.grpo_dataset(recs)
    assert set(g.column_names) >= {"prompt", "images", "findings", "impression"}
    assert g[0]["findings"] == recs[0].findings
    bad = [type(recs[0])("x", [], "F.", "I.", None, "train")]
    with pytest.raises(ValueError, match="no record"):
        training.sft_dataset(bad)


@pytest.mark.parametrize("reward", ["fmt", "chamfer"])
def test_grpo_logs_reward_components_kl_and_lengths(setup, reward):
    cfg, recs, sft = setup
    emb = FakeEmbedder()
    res = training.grpo(cfg, reward, sft.final, recs, embedder=emb)
    curves = training.read_curves(res.path)
    assert curves["step"].tolist() == [1, 2]
    cols = set(curves.columns)
    assert {"rewards/r_fmt/mean", "kl", "completions/mean_length", "reward_time/seconds"} <= cols
    assert {f"bad_completions/{r}" for r in ("no_template", "non_text_tokens", "too_long")} <= cols
    if reward == "chamfer":
        assert {"rewards/r_sem_chamfer/mean", "reward_components/sem_findings"} <= cols
    # every completion was scored exactly once: 2 steps x 4 completions
    assert res.counts["total"] == 8
    assert 0.0 < res.reward_share < 1.0 and res.step_seconds > 0
    info = json.loads((res.path / "run.json").read_text())
    assert info["reward"] == reward and info["beta"] == cfg.grpo.beta
    assert (res.final / "config.json").is_file()


def test_grpo_records_the_reward_encoders_work_of_this_run(setup):
    """run.json's encoder_stats: this run's share of the embedder's counters (an embedder passed in may have served
    earlier runs); none for a reward without an encoder, or an embedder that keeps no counters."""

    class Counting(FakeEmbedder):
        @property
        def stats(self):
            return {"encoded": len(self.seen), "encoded_tokens": 3 * len(self.seen), "encode_seconds": 0.5}

    cfg, recs, sft = setup
    emb = Counting()
    emb.seen.extend(["an earlier run's sentence."] * 5)  # counters the run must not count as its own
    res = training.grpo(cfg, "chamfer", sft.final, recs, embedder=emb, force=True)
    st = res.info["encoder_stats"]
    assert st == {"encoded": len(emb.seen) - 5, "encoded_tokens": 3 * (len(emb.seen) - 5), "encode_seconds": 0.0}
    assert json.loads((res.path / "run.json").read_text())["encoder_stats"] == st
    assert training.grpo(cfg, "chamfer", sft.final, recs, embedder=FakeEmbedder(), force=True
                         ).info["encoder_stats"] is None
    assert training.grpo(cfg, "fmt", sft.final, recs, force=True).info["encoder_stats"] is None


def test_grpo_resumes_from_last_checkpoint(setup):
    cfg, recs, sft = setup
    first = training.grpo(cfg, "exact", sft.final, recs, max_steps=1)
    assert first.info["steps"] == 1 and (first.path / "checkpoint-1").is_dir()
    second = training.grpo(cfg, "exact", sft.final, recs)  # the profile's 2 steps
    assert not second.reused
    assert second.info["resumed_from"].endswith("checkpoint-1") and second.info["steps"] == 2
    assert training.read_curves(second.path)["step"].tolist() == [1, 2]
    assert training.grpo(cfg, "exact", sft.final, recs).reused


def test_grpo_rejects_bad_configuration(setup, tmp_path):
    cfg, recs, sft = setup
    with pytest.raises(ValueError, match="no GRPO"):
        training.grpo(cfg, "sft", sft.final, recs)
    with pytest.raises(ValueError, match="unknown reward"):
        training.grpo(cfg, "cosine-sim", sft.final, recs)
    with pytest.raises(FileNotFoundError, match="run sft"):
        training.grpo(cfg, "fmt", tmp_path / "missing", recs)


def test_paper_policy_without_gpu_fails_before_any_work(setup, monkeypatch, tmp_path):
    cfg, recs, sft = setup
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    paper = load_profile("smoke", {**TINY, "sft.policy": "qwen3-vl-2b", "grpo.workers": 1, "sft.processes": 1})
    with pytest.raises(PolicyError, match="needs a CUDA GPU"):
        training.sft(paper, train_records=None)  # would otherwise load data first
    with pytest.raises(PolicyError, match="needs a CUDA GPU"):
        training.grpo(paper, "chamfer", sft.final, train_records=None)


# --------------------------------------------------------------------------- tables (sdrlib.experiments.posttrain)


def _long(models=("m1", "m2")):
    import pandas as pd

    rows = []
    for mi, m in enumerate(models):
        for r, base in (("sft", 0.30), ("fmt", 0.31), ("chamfer", 0.40)):
            seeds = [0] if r == "sft" else [0, 1, 2]
            for s in seeds:
                rows.append((m, r, s, "findings", "bertscore_f1@x", base + 0.01 * s + 0.1 * mi))
                rows.append((m, r, s, "findings", "rouge1", 0.5 - base))
    return pd.DataFrame(rows, columns=["model", "reward", "seed", "section", "metric", "value"])


def test_reward_table_mean_std_mean_block_and_bold():
    from sdrlib.experiments import posttrain

    t = posttrain.reward_table(_long(), "findings", "headline", ["sft", "fmt", "chamfer"])
    assert list(t.columns) == ["Model", "Metric", "SFT", "R_fmt", "R_Cham"]
    # COMET / RadGraph / clinical absent: rows that say so, never left out
    assert t.Model.tolist() == ["m1"] * 4 + ["m2"] * 4 + ["Mean"] * 4
    assert t.Metric.tolist()[:4] == ["BERTScore F1", "COMET", "RadGraph F1", "CheXpert-14 macro F1"]
    assert t.iloc[2]["SFT"].startswith("not computed: no radgraph_complete values") and t.iloc[2]["R_Cham"] == "not computed"
    m1 = t.iloc[0]
    assert m1["SFT"] == "0.300 ±0.000" and m1["R_Cham"] == "**0.410 ±0.010**"  # seeds 0.40, 0.41, 0.42
    mean = t.iloc[8]
    assert mean["R_Cham"].startswith("**0.460 ±0.071")  # mean of 0.41 and 0.51 across models, sample std
    r = posttrain.reward_table(_long(), "findings", "rouge", ["sft", "fmt", "chamfer"])
    assert r.iloc[0]["SFT"].startswith("**0.200")  # best per row is bold, whichever column
    with pytest.raises(ValueError, match="unknown table group"):
        posttrain.reward_table(_long(), "findings", "nope", ["sft"])
    one = posttrain.reward_table(_long(("m1",)), "findings", "headline", ["sft", "fmt", "chamfer"])
    assert one.Model.tolist() == ["m1"] * 4  # no Mean block repeating a single model with ±0


def test_positive_findings_table_counts_labeler_positives_per_configuration():
    from types import SimpleNamespace

    from sdrlib.experiments import posttrain
    from sdrlib.reports import build_template

    recs = [SimpleNamespace(findings="Small left pleural effusion. Mild cardiomegaly.", impression="x"),
            SimpleNamespace(findings="The lungs are clear. No pneumothorax.", impression="y")]
    normal = build_template("The lungs are clear.", "Normal.")
    sick = build_template("There is a small right pleural effusion.", "Effusion.")
    gens = {("sft", 0): [sick, normal], ("sft", 1): [sick, sick],
            ("chamfer", 0): [normal, "no template at all"]}
    t = posttrain.positive_findings_table(gens, recs).set_index("config")
    assert t.loc["reference", "positives per report"] == 1.0  # effusion + cardiomegaly, then none
    assert t.loc["reference", "share with no positive finding"] == 0.5
    assert t.loc["SFT", "seeds"] == 2 and t.loc["SFT", "positives per report"] == 0.75
    assert t.loc["SFT", "share with no positive finding"] == 0.25
    assert t.loc["R_Cham", "positives per report"] == 0.0  # a broken template counts as 0 positives
    assert t.loc["R_Cham", "share with no positive finding"] == 1.0
    with pytest.raises(ValueError, match="2 test studies"):
        posttrain.positive_findings_table({("sft", 0): [normal]}, recs)



def test_baseline_reports_are_image_blind_training_reports(setup):
    from sdrlib.experiments import posttrain

    _, recs, _ = setup
    b = posttrain.baseline_reports(recs, 5, seed=0)
    texts, _ = training.report_texts(recs)
    assert len(set(b["majority"])) == 1 and b["majority"][0] in texts
    assert len(b["random_train"]) == 5 and set(b["random_train"]) <= set(texts)


def test_generate_test_is_cached_per_seed_and_shuffle_control(setup):
    from sdrlib.experiments import posttrain

    cfg, recs, sft = setup
    few = recs[:4]
    a = posttrain.generate_test(cfg, sft.final, few, seed=0)
    assert len(a) == 4 and posttrain.generate_test(cfg, sft.final, few, seed=0) == a  # read back from the cache
    posttrain.generate_test(cfg, sft.final, few, seed=0, shuffle_images=True)
    names = sorted(p.name for p in sft.path.glob("test_generations*.json"))
    assert names == ["test_generations_s0.json", "test_generations_shuffled_s0.json"]
    data = json.loads((sft.path / "test_generations_s0.json").read_text())
    assert data["study_ids"] == [r.study_id for r in few] and data["do_sample"] == cfg.sft.eval_do_sample
    two = load_profile("smoke", {**TINY, "grpo.seeds": 2})
    runs = posttrain.eval_runs(two, {("sft", 0): sft.final, ("chamfer", 0): "c0", ("chamfer", 1): "c1"})
    assert sorted(runs) == [("chamfer", 0), ("chamfer", 1), ("sft", 0), ("sft", 1)]
    assert runs[("sft", 1)] == sft.final


def test_same_profile_and_seed_give_the_same_sft_run(tmp_path, monkeypatch):
    """Reproducibility: two SFT runs of one profile and seed in fresh roots give identical curves and weights."""
    from safetensors.torch import load_file

    torch.set_num_threads(1)
    runs = []
    for name in ("a", "b"):
        monkeypatch.setenv("SDR_ROOT", str(tmp_path / name))
        cfg = load_profile("smoke", TINY)
        recs = make_records(8, tmp_path / name / "img")
        res = training.sft(cfg, recs)
        runs.append((training.read_curves(res.path), load_file(str(res.final / "model.safetensors"))))
    (ca, wa), (cb, wb) = runs
    assert ca["loss"].tolist() == cb["loss"].tolist()
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


# --------------------------------------------------------------------------- gradient checkpointing


def _trl_args(run_path):
    """The TRL TrainingArguments a run used, from its last checkpoint (``training_args.bin``)."""
    from transformers.trainer_utils import get_last_checkpoint

    return torch.load(f"{get_last_checkpoint(str(run_path))}/training_args.bin", weights_only=False)


@pytest.mark.parametrize("gc", [True, False])
def test_gradient_checkpointing_profile_key_reaches_both_trl_configs(tmp_path, monkeypatch, gc):
    monkeypatch.setenv("SDR_ROOT", str(tmp_path))
    torch.set_num_threads(1)
    cfg = load_profile("smoke", {**TINY, "sft.max_steps": 1, "sft.save_steps": 1, "grpo.max_steps": 1,
                                 "sft.gradient_checkpointing": gc, "grpo.gradient_checkpointing": gc})
    recs = make_records(6, tmp_path / "img")
    s = training.sft(cfg, recs)
    assert _trl_args(s.path).gradient_checkpointing is gc and s.info["gradient_checkpointing"] is gc
    g = training.grpo(cfg, "fmt", s.final, recs)
    assert _trl_args(g.path).gradient_checkpointing is gc and g.info["gradient_checkpointing"] is gc


def test_shipped_profiles_checkpoint_only_the_gpu_models():
    for name, want in (("smoke", False), ("cpu", False), ("paper", True)):
        cfg = load_profile(name)
        assert (cfg.sft.gradient_checkpointing, cfg.grpo.gradient_checkpointing) == (want, want), name


# --------------------------------------------------------------------------- run reuse is keyed


def _sft_in(tmp_path, monkeypatch, sub, overrides=None, recs=None):
    monkeypatch.setenv("SDR_ROOT", str(tmp_path / sub))
    torch.set_num_threads(1)
    cfg = load_profile("smoke", {**TINY, "sft.max_steps": 2, **(overrides or {})})
    recs = recs if recs is not None else make_records(6, tmp_path / "img")
    return cfg, recs


def test_sft_reuse_is_keyed_by_corpus_profile_and_provenance(tmp_path, monkeypatch):
    import dataclasses

    cfg, recs = _sft_in(tmp_path, monkeypatch, "k")
    first = training.sft(cfg, recs)
    assert not first.reused and training.sft(cfg, recs).reused
    # settings that do not change training (evaluation decoding, checkpoint cadence) keep the run
    same = load_profile("smoke", {**TINY, "sft.max_steps": 2, "sft.eval_temperature": 0.3, "sft.save_steps": 7})
    assert training.sft(same, recs).reused
    # a changed corpus (same ids, other report text), a changed training value, a run without key: retrained
    edited = [dataclasses.replace(recs[0], findings=recs[0].findings + " Small effusion.")] + recs[1:]
    cases = [(cfg, edited, "data"),
             (load_profile("smoke", {**TINY, "sft.max_steps": 2, "sft.learning_rate": 5.0e-4}), recs,
              "sft.learning_rate"),
             (load_profile("smoke", {**TINY, "sft.max_steps": 2, "sft.vocab_size": 300}), recs, "sft.vocab_size")]
    for c, r, what in cases:
        with pytest.warns(UserWarning, match=what.replace(".", r"\.")):
            res = training.sft(c, r)
        assert not res.reused and training.sft(c, r).reused, what
    (res.path / "run_key.json").unlink()  # e.g. a runs/ folder written before run keys existed
    with pytest.warns(UserWarning, match="no run_key.json"):
        assert not training.sft(c, r).reused


def test_stale_checkpoints_of_other_settings_are_not_resumed(tmp_path, monkeypatch):
    cfg, recs = _sft_in(tmp_path, monkeypatch, "c", {"sft.max_steps": 2, "sft.save_steps": 1})
    training.sft(cfg, recs)
    other = load_profile("smoke", {**TINY, "sft.max_steps": 2, "sft.save_steps": 1, "sft.learning_rate": 3.0e-4})
    out = training.run_dir(other, "sft", seed=other.seed)
    import shutil

    shutil.rmtree(out / "final")  # an "interrupted" run of the first settings: checkpoints only
    with pytest.warns(UserWarning, match="learning_rate"):
        res = training.sft(other, recs)
    assert res.info["resumed_from"] is None and res.info["steps"] == 2


def test_grpo_reuse_is_keyed_by_the_sft_policy_and_reward_settings(tmp_path, monkeypatch):
    cfg, recs = _sft_in(tmp_path, monkeypatch, "g")
    sft = training.sft(cfg, recs)
    g = training.grpo(cfg, "fmt", sft.final, recs, max_steps=1)
    assert training.grpo(cfg, "fmt", sft.final, recs, max_steps=1).reused
    beta = load_profile("smoke", {**TINY, "sft.max_steps": 2, "grpo.beta": 0.1})
    with pytest.warns(UserWarning, match=r"grpo\.beta"):
        assert not training.grpo(beta, "fmt", sft.final, recs, max_steps=1).reused
    digest = training.policy_digest(sft.final)
    training.sft(cfg, recs, force=True, seed=cfg.seed)  # the same folder, retrained: same weights (deterministic)
    assert training.policy_digest(sft.final) == digest
    retrained = load_profile("smoke", {**TINY, "sft.max_steps": 2, "sft.learning_rate": 5.0e-4})
    with pytest.warns(UserWarning):
        training.sft(retrained, recs)  # other weights in the same folder
    assert training.policy_digest(sft.final) != digest
    with pytest.warns(UserWarning, match="init"):
        assert not training.grpo(retrained, "fmt", sft.final, recs, max_steps=1).reused
    assert g.path == training.run_dir(cfg, "grpo", "fmt", cfg.seed)
    assert g.final == training.policy_dir(cfg, "fmt") == training.policy_dir(cfg, "fmt", cfg.seed)


def test_test_generations_are_regenerated_for_a_retrained_policy(tmp_path, monkeypatch):
    from sdrlib.experiments import posttrain

    cfg, recs = _sft_in(tmp_path, monkeypatch, "t")
    sft = training.sft(cfg, recs)
    posttrain.generate_test(cfg, sft.final, recs[:2], seed=0)
    cache = sft.path / "test_generations_s0.json"
    before = json.loads(cache.read_text())["policy"]
    other = load_profile("smoke", {**TINY, "sft.max_steps": 2, "sft.learning_rate": 5.0e-4})
    with pytest.warns(UserWarning):
        training.sft(other, recs)  # retrained in place: the folder (and its cache) is cleared
    posttrain.generate_test(other, sft.final, recs[:2], seed=0)
    after = json.loads(cache.read_text())["policy"]
    assert before != after == training.policy_digest(sft.final)
    # another split has its own cache: generating it leaves the test cache as it was (notebook 04's validation
    # pick once overwrote the SFT test generations, which section 5 then generated again)
    test_bytes = cache.read_bytes()
    posttrain.generate_test(other, sft.final, recs[2:4], seed=0, split="val")
    assert (sft.path / "val_generations_s0.json").is_file() and cache.read_bytes() == test_bytes


def test_load_policy_uses_the_profile_threads(setup):
    cfg, _, sft = setup
    torch.set_num_threads(2)
    try:
        training.load_policy(cfg, sft.final)
        assert torch.get_num_threads() == cfg.sft.threads == 1
    finally:
        torch.set_num_threads(1)


# --------------------------------------------------------------------------- GRPO group statistics


def test_group_stats_examples():
    import numpy as np

    s = training.group_stats([1, 1, 3, 1], [0, 0, 2, 0], [0, 0, 2, 0], 2)
    assert s["exact_all_zero"] == 0.5 and s["n_groups"] == 2
    assert s["total_std"] == pytest.approx(np.std([3, 1], ddof=1) / 2)  # group 1 has no spread
    assert s["content_std"] == pytest.approx(np.std([2, 0], ddof=1) / 2)
    dense = training.group_stats([0.2, 0.5, 0.9, 1.4, 1.0, 1.1], [0.1, 0.3, 0.9, 0.4, 0.0, 0.1],
                                 [0, 0, 0, 0, 0, 0], 3)
    assert dense["exact_all_zero"] == 1.0 and dense["content_std"] > 0.1  # sparse exact, dense distance
    assert training.group_stats([1, 2, 2], [0, 0, 0], [1, 0, 0], 3)["exact_all_zero"] == 0.0
    for bad in (([1, 2, 3], [0] * 3, [0] * 3, 2), ([], [], [], 2), ([1, 2], [0, 0], [0], 2), ([1, 2], [0, 0], [0, 0], 1)):
        assert training.group_stats(*bad) is None


@pytest.mark.parametrize("reward", ["exact", "chamfer"])
def test_grpo_logs_group_sparsity_for_every_reward(tmp_path, monkeypatch, reward):
    cfg, recs = _sft_in(tmp_path, monkeypatch, f"s{reward}")
    sft = training.sft(cfg, recs)
    res = training.grpo(cfg, reward, sft.final, recs, embedder=FakeEmbedder())
    c = training.read_curves(res.path).dropna(subset=["reward"])
    cols = ["reward_groups/exact_all_zero", "reward_groups/content_std", "reward_groups/total_std"]
    assert set(cols) <= set(c.columns) and c[cols].notna().all().all()
    assert c["reward_groups/exact_all_zero"].between(0, 1).all() and (c["reward_groups/total_std"] >= 0).all()
    # 4 completions per step, G = 2: two groups per step
    assert (c["reward_groups/n_groups"] == cfg.grpo.batch_size / cfg.grpo.num_generations).all()


def test_exact_scores_match_the_exact_reward_on_any_configuration():
    from sdrlib.rewards import RewardScorer

    refs_f, refs_i = ["The lungs are clear. Heart size is normal."] * 3, ["No acute process."] * 3
    comps = ["<think> Heart size is normal. The lungs are clear. </think> <answer> No acute process. </answer>",
             "<think> The lungs are clear. </think> <answer> No acute process. </answer>",
             "no template at all"]
    want = RewardScorer("exact").score(comps, refs_f, refs_i).exact.tolist()
    assert want == [2.0, 1.0, 0.0]
    import importlib

    assert importlib.import_module("sdrlib.training.grpo")._exact_scores(comps, refs_f, refs_i, 4000) == want



@pytest.mark.parametrize("freeze", [True, False])
def test_grpo_keeps_the_frozen_tiny_vision_tower_frozen(setup, tmp_path, monkeypatch, freeze):
    """sft.tiny_freeze_vision: the tower SFT kept at its random init stays frozen through GRPO (issue 27)."""
    from sdrlib import models

    _, recs, _ = setup
    monkeypatch.setenv("SDR_ROOT", str(tmp_path))
    cfg = load_profile("smoke", {**TINY, "sft.tiny_freeze_vision": freeze})
    sft = training.sft(cfg, recs)
    frozen = []
    real = models.freeze_vision_tower

    def record(model):
        n = real(model)
        frozen.append(sorted(k for k, p in model.named_parameters() if not p.requires_grad))
        return n

    monkeypatch.setattr(models, "freeze_vision_tower", record)
    training.grpo(cfg, "chamfer", sft.final, recs, embedder=FakeEmbedder())
    if not freeze:
        assert frozen == []
        return
    assert len(frozen) == 1 and frozen[0]
    assert all(".visual." in k and "merger" not in k for k in frozen[0])  # the tower only; mergers and text train


def test_trl_stage_times_collect_trls_own_timings_into_disjoint_stages():
    """TRL's ProfilingContext timings are summed per name inside the block (and restored after); split() turns
    them and the step total into disjoint stages that add up to the step time."""
    from trl.extras.profiling import ProfilingContext

    from sdrlib.training.runlog import trl_stage_times

    original = ProfilingContext._log_metrics
    with trl_stage_times() as st:
        for name, seconds in (("GRPOTrainer._prepare_inputs", 5.0), ("GRPOTrainer.transformers.generate", 2.0),
                              ("GRPOTrainer._calculate_rewards", 1.5), ("GRPOTrainer.compute_loss", 1.0),
                              ("GRPOTrainer.transformers.generate", 0.5)):
            ProfilingContext(name, report_to=[], is_main_process=True)._log_metrics(seconds)
        ProfilingContext("GRPOTrainer.compute_loss", report_to=[], is_main_process=False)._log_metrics(9.0)
    assert ProfilingContext._log_metrics is original
    assert st.raw["GRPOTrainer.transformers.generate"] == [2.5, 2]
    split = st.split(step_seconds=10.0)
    assert split == {"generation": 2.5, "rewards": 1.5, "scoring": 1.0, "loss_forward": 1.0,
                     "backward_optimizer": 4.0}
    assert sum(split.values()) == 10.0
