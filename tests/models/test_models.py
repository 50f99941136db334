"""Tests for sdrlib.models: tokenizer, image-only processor, tiny Qwen3-VL, save/load, GPU checks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from PIL import Image

from sdrlib import models
from sdrlib.generation import generate_candidates, generate_reports, prompt_messages
from sdrlib.reports import build_template
from training_helpers import REPORTS

TEXTS = [build_template(f, i) for f, i in REPORTS.values()] * 10
SMALL = models.TinyVLSpec(hidden_size=32, layers=1, heads=2, kv_heads=1, head_dim=16, intermediate_size=64,
                          vision_hidden_size=32, vision_layers=1, vision_heads=2, vision_intermediate_size=64,
                          image_size=64, mrope_section=(4, 2, 2))


@pytest.fixture(scope="module")
def tiny():
    torch.set_num_threads(1)
    return models.build_tiny_policy(TEXTS, SMALL, vocab_size=320, seed=0)


def _img(seed: int, size: int = 80) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray((rng.random((size, size)) * 255).astype("uint8"))


def test_tokenizer_round_trips_reports_and_keeps_tags_as_single_tokens(tiny):
    _, proc = tiny
    tok = proc.tokenizer
    for text in TEXTS[:3]:
        ids = tok(text, add_special_tokens=False).input_ids
        assert tok.decode(ids, skip_special_tokens=True) == text
    for tag in models.TEMPLATE_TOKENS:
        assert len(tok(tag, add_special_tokens=False).input_ids) == 1
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    assert len(tok) <= 320
    # special tokens are single ids and vanish when decoding with skip_special_tokens
    ids = tok("<|im_start|>user\nhi<|im_end|>", add_special_tokens=False).input_ids
    assert tok.decode(ids, skip_special_tokens=True) == "user\nhi"


def test_train_tokenizer_rejects_bad_input():
    with pytest.raises(ValueError, match="non-empty"):
        models.train_tokenizer([])
    with pytest.raises(ValueError, match="vocab_size"):
        models.train_tokenizer(TEXTS, vocab_size=100)


def test_chat_template_and_image_token_expansion(tiny):
    _, proc = tiny
    text = proc.apply_chat_template(prompt_messages(1, "Report."), add_generation_prompt=True, tokenize=False)
    assert text == ("<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Report.<|im_end|>\n"
                    "<|im_start|>assistant\n")
    batch = proc(text=[text, text], images=[[_img(0, 80)], [_img(1, 112)]], return_tensors="pt", padding=True)
    grid = batch["image_grid_thw"]
    # images are resized to at most 64 x 64 -> 4 x 4 patches of 16 px -> 16 / 2^2 = 4 tokens each
    assert grid.tolist() == [[1, 4, 4], [1, 4, 4]]
    n_img = (batch["input_ids"] == proc.image_token_id).sum(1)
    assert n_img.tolist() == [4, 4]
    assert (batch["mm_token_type_ids"] == 1).sum().item() == 8
    assert batch["pixel_values"].shape == (32, 3 * 2 * 16 * 16)


def test_tiny_model_forward_depends_on_the_image_and_generates(tiny):
    model, proc = tiny
    text = proc.apply_chat_template(prompt_messages(1), add_generation_prompt=True, tokenize=False)
    a = proc(text=[text], images=[[_img(0)]], return_tensors="pt")
    b = proc(text=[text], images=[[_img(1)]], return_tensors="pt")
    with torch.no_grad():
        la, lb = model(**a).logits, model(**b).logits
    assert la.shape[-1] == len(proc.tokenizer)
    assert not torch.allclose(la[0, -1], lb[0, -1])  # the vision tower reaches the text decoder
    outs = generate_reports(model, proc, [[_img(0)], [_img(1)], [_img(2)]], max_new_tokens=5, batch_size=2)
    assert len(outs) == 3 and all(isinstance(o, str) for o in outs)
    # sampling is seeded: same seed, same candidates; candidate j uses seed + j
    c1 = generate_candidates(model, proc, [[_img(0)], [_img(1)]], n_candidates=3, max_new_tokens=5, seed=7)
    c2 = generate_candidates(model, proc, [[_img(0)], [_img(1)]], n_candidates=2, max_new_tokens=5, seed=7)
    assert len(c1) == 2 and all(len(c) == 3 for c in c1)
    assert [c[:2] for c in c1] == c2


def test_merge_size_sets_the_number_of_image_tokens(tmp_path):
    # merge 1: every 16 px patch is its own token -> (64/16)^2 = 16 tokens (4 with the default merge 2)
    spec = dataclasses.replace(SMALL, merge_size=1)
    model, proc = models.build_tiny_policy(TEXTS, spec, vocab_size=320, seed=0)
    text = proc.apply_chat_template(prompt_messages(1), add_generation_prompt=True, tokenize=False)
    batch = proc(text=[text], images=[[_img(0)]], return_tensors="pt")
    assert (batch["input_ids"] == proc.image_token_id).sum().item() == 16
    assert model.config.vision_config.spatial_merge_size == 1
    with torch.no_grad():
        assert torch.isfinite(model(**batch).logits).all()
    model2, proc2 = models.load_tiny_policy(models.save_policy(model, proc, tmp_path / "m1"))
    assert (proc2(text=[text], images=[[_img(0)]], return_tensors="pt")["input_ids"] == proc.image_token_id).sum() == 16
    with pytest.raises(ValueError, match="merge_size"):
        models.TinyVLSpec(image_size=96, patch_size=16, merge_size=4)


def test_save_load_round_trip(tiny, tmp_path):
    model, proc = tiny
    path = models.save_policy(model, proc, tmp_path / "policy")
    model2, proc2 = models.load_tiny_policy(path)
    assert type(proc2) is models.ImageOnlyQwen3VLProcessor
    assert proc2.tokenizer.get_vocab() == proc.tokenizer.get_vocab()
    assert proc2.chat_template == proc.chat_template
    text = proc.apply_chat_template(prompt_messages(1), add_generation_prompt=True, tokenize=False)
    x = proc(text=[text], images=[[_img(3)]], return_tensors="pt")
    x2 = proc2(text=[text], images=[[_img(3)]], return_tensors="pt")
    assert torch.equal(x["pixel_values"], x2["pixel_values"]) and torch.equal(x["input_ids"], x2["input_ids"])
    with torch.no_grad():
        torch.testing.assert_close(model(**x).logits, model2(**x2).logits)
    # saving again over an existing folder replaces it atomically
    models.save_policy(model2, proc2, path)
    assert (path / "config.json").is_file() and not any(p.name.startswith(".") for p in path.parent.iterdir())


def test_load_tiny_policy_names_missing_folder(tmp_path):
    with pytest.raises(models.PolicyError, match="no saved policy"):
        models.load_tiny_policy(tmp_path / "nothing")


def test_spec_validation():
    with pytest.raises(ValueError, match="mrope_section"):
        models.TinyVLSpec(head_dim=32, mrope_section=(8, 8, 8))
    with pytest.raises(ValueError, match="kv_heads"):
        models.TinyVLSpec(heads=4, kv_heads=3)
    with pytest.raises(ValueError, match="unknown tiny-model keys"):
        models.spec_from_dict({"layerz": 2})
    assert models.spec_from_dict({"layers": 2, "mrope_section": [6, 5, 5]}).layers == 2


def test_set_cpu_threads():
    prev = models.set_cpu_threads(1)
    assert torch.get_num_threads() == 1
    models.set_cpu_threads(prev)
    with pytest.raises(ValueError):
        models.set_cpu_threads(0)


def test_gpu_path_fails_clearly_without_gpu_or_weights(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(models.PolicyError, match="needs a CUDA GPU"):
        models.check_gpu_model("qwen3-vl-2b")
    with pytest.raises(models.PolicyError, match="needs a CUDA GPU"):
        models.load_unsloth_policy("qwen3-vl-2b")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(models.PolicyError, match="Download it first"):
        models.check_gpu_model("qwen3-vl-4b")
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "config.json").write_text("{}")
    assert models.check_gpu_model(str(tmp_path / "local")) == str(tmp_path / "local")


def test_reference_nll_matches_a_manual_forward_and_is_batch_invariant(tiny):
    from sdrlib.generation import reference_nll

    model, proc = tiny
    imgs = [[_img(0)], [_img(1)], [_img(2)]]
    comps = [TEXTS[0], TEXTS[1][:40], TEXTS[2]]  # different lengths: right padding must not leak into the sums
    got = reference_nll(model, proc, imgs, comps, batch_size=3)
    one = reference_nll(model, proc, imgs, comps, batch_size=1)
    np.testing.assert_allclose(got, one, rtol=1e-4, atol=1e-4)
    # manual: log-probabilities of the completion tokens after the prompt, one study
    head = proc.apply_chat_template(prompt_messages(1), add_generation_prompt=True, tokenize=False)
    b = proc(text=[head + comps[1] + proc.tokenizer.eos_token], images=[imgs[1]], return_tensors="pt")
    pl = proc(text=[head], images=[imgs[1]], return_tensors="pt")["input_ids"].shape[1]
    with torch.no_grad():
        lp = torch.log_softmax(model(**b).logits[0, pl - 1:-1].float(), -1)
    tgt = b["input_ids"][0, pl:]
    assert got[1, 1] == len(tgt) == len(proc.tokenizer(comps[1], add_special_tokens=False).input_ids) + 1
    assert got[1, 0] == pytest.approx(-lp.gather(-1, tgt[:, None]).sum().item(), rel=1e-4)
    # the image changes the likelihood (the vision tower reaches the decoder)
    other = reference_nll(model, proc, [imgs[2], imgs[0], imgs[1]], comps)
    assert not np.allclose(other[:, 0], got[:, 0])
    with pytest.raises(ValueError, match="completions"):
        reference_nll(model, proc, imgs, comps[:2])


def test_freeze_vision_tower_keeps_the_tower_and_trains_the_merger():
    model, proc = models.build_tiny_policy(TEXTS, SMALL, vocab_size=320, seed=0)
    n = models.freeze_vision_tower(model)
    vis = dict(model.model.visual.named_parameters())
    assert n == sum(p.numel() for k, p in vis.items() if not k.startswith(("merger", "deepstack_merger_list"))) > 0
    assert all(p.requires_grad == k.startswith(("merger", "deepstack_merger_list")) for k, p in vis.items())
    before = {k: p.detach().clone() for k, p in vis.items()}
    text = proc.apply_chat_template(prompt_messages(1), add_generation_prompt=True, tokenize=False)
    batch = proc(text=[text + "<think> x </think>"], images=[[_img(0)]], return_tensors="pt")
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    model(**batch, labels=batch["input_ids"]).loss.backward()
    opt.step()
    changed = {k for k, p in vis.items() if not torch.equal(p.detach(), before[k])}
    assert changed and all(k.startswith(("merger", "deepstack_merger_list")) for k in changed)
    with pytest.raises(models.PolicyError, match="vision tower"):
        models.freeze_vision_tower(torch.nn.Linear(2, 2))
