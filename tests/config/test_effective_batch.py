"""The paper's effective batches on any number of processes without editing YAML: the paper profile states each
stage's per-device ``batch_size`` and its ``effective_batch`` (SFT 96 studies, GRPO 64 completions; SDR paper app.
C.2 / C.3), and :func:`sdrlib.config.accumulation` derives ``grad_accum`` from the number of processes; the
trainers hand that to TRL. A target no whole accumulation reaches is refused with the batch sizes that work."""

from __future__ import annotations

import pytest

from sdrlib.config import ConfigError, accumulation, load_profile

PAPER_SFT, PAPER_GRPO = 96, 64  # SDR paper app. C.2 (SFT), app. C.3 (GRPO, completions)


@pytest.fixture(scope="module")
def paper():
    return load_profile("paper")


@pytest.mark.parametrize("processes", [1, 2, 8])
def test_the_paper_profile_reaches_the_papers_effective_batches(paper, processes):
    s, g = paper.sft, paper.grpo
    assert s.batch_size * accumulation(s, processes, "sft") * processes == PAPER_SFT
    assert g.batch_size * accumulation(g, processes, "grpo") * processes == PAPER_GRPO
    # each process's generation batch holds whole groups of G completions (TRL's rule)
    assert (g.batch_size * accumulation(g, processes, "grpo")) % g.num_generations == 0


def test_accumulation_values_for_1_2_4_8_processes(paper):
    assert [accumulation(paper.sft, n, "sft") for n in (1, 2, 4, 8)] == [24, 12, 6, 3]
    assert [accumulation(paper.grpo, n, "grpo") for n in (1, 2, 4, 8)] == [8, 4, 2, 1]


def test_without_effective_batch_grad_accum_is_taken_as_given():
    cpu = load_profile("cpu")
    assert cpu.sft.effective_batch == 0 and cpu.grpo.effective_batch == 0
    for n in (1, 2, 8):
        assert accumulation(cpu.sft, n, "sft") == cpu.sft.grad_accum
        assert accumulation(cpu.grpo, n, "grpo") == cpu.grpo.grad_accum


def test_a_target_no_whole_accumulation_reaches_is_refused_with_what_works(paper):
    with pytest.raises(ConfigError) as e:
        accumulation(paper.grpo, 3, "grpo")  # 64 / (8 x 3)
    assert "grpo.effective_batch = 64" in str(e.value) and "a number of processes that divides 64" in str(e.value)
    over = load_profile("paper", {"grpo.batch_size": 16})
    with pytest.raises(ConfigError) as e:
        accumulation(over.grpo, 8, "grpo")  # 64 / (16 x 8) = 0.5
    assert "(16 x 8 = 128)" in str(e.value) and "a grpo.batch_size that divides 8 (1, 2, 4, 8)" in str(e.value)


def test_a_profile_whose_target_one_process_cannot_reach_is_refused_at_load():
    with pytest.raises(ConfigError, match=r"sft.effective_batch = 96 .*\(5 x 1 = 5\)"):
        load_profile("paper", {"sft.batch_size": 5})
    with pytest.raises(ConfigError, match="grpo.batch_size x grpo.grad_accum = 4 x 3"):  # 12 completions: not whole groups of 8
        load_profile("paper", {"grpo.batch_size": 4, "grpo.effective_batch": 12})


@pytest.mark.parametrize("world", [1, 2, 8])
def test_the_trainers_hand_the_derived_accumulation_to_trl(paper, monkeypatch, tmp_path, world):
    import importlib

    sft = importlib.import_module("sdrlib.training.sft")  # the modules (the package re-exports their functions)
    grpo = importlib.import_module("sdrlib.training.grpo")
    # the process count the trainers read (WORLD_SIZE under a launcher); TRL's own arguments would start a process
    # group if WORLD_SIZE itself were set here
    for mod in (sft, grpo):
        monkeypatch.setattr(mod, "world_size", lambda: world)
    s_args = sft._trl_args(paper.sft, tmp_path / "sft", 0)
    run = {"learning_rate": 2.0e-5, "weight_decay": 0.0, "loss_type": "grpo", "scale_rewards": "group"}
    g_args = grpo._trl_args(paper.grpo, tmp_path / "grpo", 2, 0, [1.0], run)
    assert s_args.per_device_train_batch_size * s_args.gradient_accumulation_steps * world == PAPER_SFT
    assert g_args.per_device_train_batch_size * g_args.gradient_accumulation_steps * world == PAPER_GRPO


@pytest.mark.parametrize("processes", [0, -2, True, 2.5, "2"])
def test_accumulation_refuses_a_count_that_is_not_a_number_of_processes(paper, processes):
    # before: 0 raised ZeroDivisionError, "2" a TypeError, -2 returned -12 steps and True was read as 1 process
    with pytest.raises(ConfigError, match=r"sft: processes = .*allowed: a whole number >= 1"):
        accumulation(paper.sft, processes, "sft")
