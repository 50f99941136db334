"""sdrlib.training under ``accelerate launch``: SFT then GRPO with 2 CPU processes (gloo), the documented command.

Runs the command of docs/running.md ("Training from the command line") with ``configs/accelerate/cpu_2proc.yaml``
(a tiny policy, 2 optimizer steps per stage) and checks what :mod:`sdrlib.training.runlog` documents: both ranks
take the same optimizer steps, each on its own shard of every global batch (SFT: accelerate's seeded permutation,
batch ``i`` to rank ``i % N``; GRPO: TRL's ``RepeatSampler`` block, rank ``r`` taking rows ``[r B, (r + 1) B)``),
only rank 0 writes the final policy, which loads and generates, and the world size is part of the run key. Also:
every accelerate config the README or a docs page names exists and parses with accelerate's own loader.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from sdrlib import training
from sdrlib.config import load_profile

ROOT = Path(__file__).resolve().parents[2]
ACCELERATE = Path(sys.executable).parent / "accelerate"
PROFILE = "rehearsal"  # the profile the 2-process runs use, plus OVERRIDES
OVERRIDES = {
    "data.n_train": 16, "data.n_val": 4, "data.n_test": 4,
    "sft.max_steps": 2, "sft.batch_size": 2, "sft.grad_accum": 2, "sft.save_steps": 1, "sft.threads": 1,
    "sft.vocab_size": 320, "sft.tiny_hidden_size": 32, "sft.tiny_layers": 1, "sft.tiny_heads": 2,
    "sft.tiny_kv_heads": 1, "sft.tiny_head_dim": 16, "sft.tiny_intermediate_size": 64,
    "sft.tiny_vision_hidden_size": 32, "sft.tiny_vision_layers": 1, "sft.tiny_vision_heads": 2,
    "sft.tiny_vision_intermediate_size": 64,
    "grpo.max_steps": 2, "grpo.batch_size": 2, "grpo.grad_accum": 2, "grpo.num_generations": 2,
    "grpo.max_completion_length": 12, "grpo.save_steps": 1,
}
WORLD = 2


def _launch(root: Path, *args: str) -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                                                           "MASTER_PORT", "ACCELERATE_USE_CPU")}
    env.update(SDR_ROOT=str(root), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false")
    sets = [a for k, v in OVERRIDES.items() for a in ("--set", f"{k}={v}")]
    cmd = [str(ACCELERATE), "launch", "--config_file", "configs/accelerate/cpu_2proc.yaml", "-m", "sdrlib.training",
           "--profile", PROFILE, *args, *sets]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    assert len(lines) == 1, done.stdout  # one result line: rank 0's
    return time.perf_counter() - t0


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("sdr-acc")
    mp = pytest.MonkeyPatch()
    mp.setenv("SDR_ROOT", str(root))
    seconds = {"sft": _launch(root, "--stage", "sft"), "grpo": _launch(root, "--stage", "grpo", "--reward", "fmt")}
    cfg = load_profile(PROFILE, OVERRIDES)
    yield cfg, seconds
    mp.undo()


def _ranks(folder: Path) -> list[dict]:
    recs = [json.loads((folder / f"rank{r}.json").read_text()) for r in range(WORLD)]
    assert not (folder / f"rank{WORLD}.json").exists()
    return recs


def _ids(cfg) -> list[str]:
    """The study ids in dataset order (what the samplers' indices point at)."""
    from sdrlib.data import load_split
    from sdrlib.training.datasets import usable_records

    return [r.study_id for r in usable_records(load_split(cfg, "train"))]


def _perm(n: int, seed: int) -> list[int]:
    import torch

    g = torch.Generator()
    g.manual_seed(seed)
    return torch.randperm(n, generator=g).tolist()


def test_readme_accelerate_configs_exist_and_parse():
    from accelerate.commands.config.config_args import load_config_from_file

    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]  # the README and the pages it links
    text = "\n".join(p.read_text(encoding="utf-8") for p in pages)
    named = set(re.findall(r"configs/accelerate/[\w.-]+\.yaml", text))
    assert {f"configs/accelerate/{n}gpu.yaml" for n in (1, 2, 4, 8)} | {"configs/accelerate/cpu_2proc.yaml"} <= named
    for rel in sorted(named):
        assert (ROOT / rel).is_file(), rel
        cfg = load_config_from_file(str(ROOT / rel))
        raw = yaml.safe_load((ROOT / rel).read_text(encoding="utf-8"))
        # gradient accumulation is the profile's, per process, in every config (no DeepSpeed override)
        assert "gradient_accumulation_steps" not in raw and "deepspeed_config" not in raw, rel
        if rel.endswith("gpu.yaml"):
            n = int(Path(rel).stem[:-3])
            assert cfg.num_processes == n and cfg.mixed_precision == "bf16" and not cfg.use_cpu, rel
            assert cfg.distributed_type.value == ("NO" if n == 1 else "MULTI_GPU"), rel
    cpu = load_config_from_file(str(ROOT / "configs/accelerate/cpu_2proc.yaml"))
    assert cpu.use_cpu and cpu.num_processes == WORLD


def test_sft_ranks_take_the_same_steps_on_disjoint_shards_of_each_global_batch(runs):
    cfg, seconds = runs
    folder = training.run_dir(cfg, "sft", seed=cfg.seed)
    recs = _ranks(folder)
    ids, s = _ids(cfg), cfg.sft
    order = [ids[i] for i in _perm(len(ids), cfg.seed)]  # accelerate's SeedableRandomSampler, epoch 0
    for r, rec in enumerate(recs):
        assert (rec["rank"], rec["world_size"], rec["optimizer_steps"]) == (r, WORLD, s.max_steps)
        assert rec["torch_threads"] == 1 and rec["vocab_digest"] == recs[0]["vocab_digest"]
        for k, step in enumerate(rec["steps"]):
            # batch i of the permutation goes to rank i % N; step k takes grad_accum batches per rank
            want = [order[(i * WORLD + r) * s.batch_size:(i * WORLD + r + 1) * s.batch_size]
                    for i in range(k * s.grad_accum, (k + 1) * s.grad_accum)]
            assert step == {"step": k + 1, "batches": want}, (r, k)
    for k in range(s.max_steps):
        shards = [{i for b in rec["steps"][k]["batches"] for i in b} for rec in recs]
        assert not shards[0] & shards[1] and sum(map(len, shards)) == WORLD * s.batch_size * s.grad_accum
    print(f"SFT, 2 processes: {seconds['sft']:.1f} s")


def test_grpo_ranks_take_the_same_steps_on_their_rows_of_each_repeat_sampler_block(runs):
    cfg, seconds = runs
    folder = training.run_dir(cfg, "grpo", "fmt", cfg.seed)
    recs = _ranks(folder)
    ids, g = _ids(cfg), cfg.grpo
    G, spg = g.num_generations, g.grad_accum  # TRL: steps_per_generation defaults to gradient_accumulation_steps
    per_rank = g.batch_size * spg  # rows of one rank's generation batch
    prompts = WORLD * per_rank // G  # prompts per step (generation_batch_size / G)
    order = [ids[i] for i in _perm(len(ids), cfg.seed)]  # RepeatSampler's randperm, seeded with args.seed
    for r, rec in enumerate(recs):
        assert (rec["rank"], rec["world_size"], rec["optimizer_steps"]) == (r, WORLD, g.max_steps)
        for k, step in enumerate(rec["steps"]):
            block = [p for p in order[k * prompts:(k + 1) * prompts] for _ in range(G)]
            rows = block[r * per_rank:(r + 1) * per_rank]
            assert step == {"step": k + 1, "batches": [rows] * g.grad_accum}, (r, k)  # the block, spg times
    for k in range(g.max_steps):
        a, b = (set(rec["steps"][k]["batches"][0]) for rec in recs)
        assert not a & b  # per_rank is a multiple of G (sdrlib.config): each prompt's group stays on one rank
    print(f"GRPO, 2 processes: {seconds['grpo']:.1f} s")


@pytest.mark.parametrize("stage", ["sft", "grpo"])
def test_only_rank_0_writes_the_policy_and_it_loads_and_generates(runs, stage):
    cfg, _ = runs
    folder = training.run_dir(cfg, "sft", seed=cfg.seed) if stage == "sft" else training.run_dir(cfg, "grpo", "fmt",
                                                                                                   cfg.seed)
    assert [rec["wrote_final"] for rec in _ranks(folder)] == [True, False]
    assert json.loads((folder / "run.json").read_text())["world_size"] == WORLD
    assert (folder / "train.log").is_file() and (folder / "train.rank1.log").is_file()
    from sdrlib.data import load_split
    from sdrlib.generation import generate_reports, load_images

    model, processor = training.load_policy(cfg, folder / "final")
    rec = load_split(cfg, "test")[0]
    out = generate_reports(model, processor, [load_images(rec.image_paths)], max_new_tokens=8)
    assert len(out) == 1 and isinstance(out[0], str)


def test_a_one_process_run_does_not_reuse_the_two_process_run(runs):
    cfg, _ = runs
    from sdrlib.data import load_split
    from sdrlib.training import runkeys

    folder = training.run_dir(cfg, "sft", seed=cfg.seed)
    saved = json.loads((folder / "run_key.json").read_text())
    here = training.run_key(cfg, "sft", load_split(cfg, "train"), seed=cfg.seed)  # this pytest process: 1
    assert saved["world_size"] == WORLD and here["world_size"] == 1
    assert {k: v for k, v in saved.items() if k != "world_size"} == {k: v for k, v in here.items() if k != "world_size"}
    assert not runkeys.reusable(folder, here)


def test_sft_processes_launches_the_same_run_from_a_plain_process(runs):
    """``sft.processes: 2`` from a plain process (a notebook) hands the run to ``accelerate launch``: the key it
    expects is the launched run's, so the CLI run above stands in for it (nothing retrains); trained again from
    here it gives the CLI run's weights bit for bit; records other than the profile's training split are refused
    before anything is launched."""
    from sdrlib.data import load_split
    from sdrlib.errors import SDRError

    cfg, _ = runs
    two = load_profile(PROFILE, {**OVERRIDES, "sft.processes": WORLD})
    folder = training.run_dir(two, "sft", seed=two.seed)
    digest = json.loads((folder / "run.json").read_text())["policy_digest"]
    res = training.sft(two, progress=False)
    assert res.reused and res.path == folder and res.info["world_size"] == WORLD
    assert res.info["policy_digest"] == digest
    again = training.sft(two, progress=False, force=True)  # launched from here: the same steps, the same weights
    assert not again.reused and again.info["world_size"] == WORLD and again.info["policy_digest"] == digest
    key = training.run_key(two, "sft", load_split(two, "train"), seed=two.seed, world=WORLD)
    assert {k: v for k, v in key.items() if k != "kernel"} == {
        k: v for k, v in json.loads((folder / "run_key.json").read_text()).items() if k != "kernel"}
    with pytest.raises(SDRError, match="training split"):
        training.sft(two, load_split(two, "train")[:3], progress=False)


# --------------------------------------------------------------------------- without launching (fast)


def test_sft_processes_is_for_the_tiny_policy_and_no_part_of_the_key(monkeypatch):
    from sdrlib.config import ConfigError

    with pytest.raises(ConfigError, match="sft.processes"):
        load_profile("paper", {"sft.processes": 2})
    recs = [SimpleNamespace(study_id="s1", findings="Heart size is normal.", impression="Normal.", image_paths=[])]
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    one, two = load_profile("smoke", {"sft.processes": 1}), load_profile("smoke", {"sft.processes": 2})
    assert training.run_key(one, "sft", recs) == training.run_key(two, "sft", recs)  # world_size says it
    assert training.run_key(two, "sft", recs, world=2)["world_size"] == 2


def test_processes_read_the_launcher_environment(monkeypatch):
    from sdrlib.training import processes

    for k in ("RANK", "WORLD_SIZE", "ACCELERATE_USE_CPU"):
        monkeypatch.delenv(k, raising=False)
    assert (processes.rank(), processes.world_size(), processes.is_main(), processes.init()) == (0, 1, True, None)
    processes.barrier()  # no-op without a launcher
    with processes.main_first():
        pass
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert (processes.rank(), processes.world_size(), processes.is_main()) == (1, 2, False)
    monkeypatch.setenv("ACCELERATE_USE_CPU", "True")  # an accelerate config with use_cpu: true
    assert processes.on_cpu() and training.policy.device_kwargs()["use_cpu"]


def test_world_size_is_part_of_the_run_key(monkeypatch):
    cfg = load_profile("smoke")
    recs = [SimpleNamespace(study_id="s1", findings="Heart size is normal.", impression="Normal.", image_paths=[])]
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    one = {s: training.run_key(cfg, s, recs, reward="fmt" if s == "grpo" else None) for s in ("sft", "grpo")}
    monkeypatch.setenv("WORLD_SIZE", "2")
    two = {s: training.run_key(cfg, s, recs, reward="fmt" if s == "grpo" else None) for s in ("sft", "grpo")}
    for s in one:
        assert (one[s]["world_size"], two[s]["world_size"]) == (1, 2)
        assert {k for k in one[s] if one[s][k] != two[s][k]} == {"world_size"}


def test_cli_set_overrides_reach_the_profile(monkeypatch, capsys):
    import importlib

    cli = importlib.import_module("sdrlib.training.cli")
    seen = {}

    def fake_sft(cfg, seed=None, force=False):
        seen["cfg"] = cfg
        return SimpleNamespace(final=Path("final"), seconds=0.0, reused=True)

    monkeypatch.setattr(cli, "sft", fake_sft)
    assert cli.main(["--profile", "smoke", "--stage", "sft", "--set", "sft.max_steps=7",
                     "--set", "sft.learning_rate=2.0e-4"]) == 0
    assert seen["cfg"].sft.max_steps == 7 and seen["cfg"].sft.learning_rate == 2.0e-4
    assert json.loads(capsys.readouterr().out)["reused"] is True
    with pytest.raises(SystemExit):
        cli.main(["--profile", "smoke", "--stage", "sft", "--set", "sft.max_steps"])


@pytest.mark.parametrize("argv, says", [
    (["--profile", "smoke", "--stage", "grpo", "--set", "grpo.workers=0"], "grpo.workers = 0: out of range"),
    (["--profile", "smoke", "--stage", "grpo", "--reward", "chamfr"], "unknown reward 'chamfr'"),
    (["--profile", "nope", "--stage", "sft"], "nope"),
])
def test_cli_bad_arguments_are_one_line_and_exit_2_before_any_work(monkeypatch, capsys, argv, says):
    import importlib

    cli = importlib.import_module("sdrlib.training.cli")
    ran = []
    monkeypatch.setattr(cli, "sft", lambda *a, **k: ran.append("sft"))
    monkeypatch.setattr(cli, "grpo", lambda *a, **k: ran.append("grpo"))
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("python -m sdrlib.training: ") and says in err
    assert ran == []
