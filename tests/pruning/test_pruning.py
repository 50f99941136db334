"""Tests for sdrlib.pruning: sentence tracking, the partial-report rule, Algorithm 1 live and replayed.

The live tests train a tiny Qwen3-VL for a few seconds on templated reports (a real model, so that it writes
sentences), then check that live pruning and the K full generations agree token for token, that replay picks the
same survivor, and the token accounting.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from PIL import Image

from sdrlib import models, pruning as pr
from sdrlib.embedding import ReportBank, SentenceEmbedder
from sdrlib.generation import prompt_messages
from sdrlib.reports import build_template
from training_helpers import REPORTS

SMALL = models.TinyVLSpec(hidden_size=48, layers=2, heads=2, kv_heads=1, head_dim=24, intermediate_size=96,
                          vision_hidden_size=32, vision_layers=1, vision_heads=2, vision_intermediate_size=64,
                          image_size=64, mrope_section=(6, 3, 3))
LONG = {0: ("The lungs are clear. Heart size is normal. No pleural effusion. No pneumothorax.",
            "No acute cardiopulmonary process."),
        1: ("There is a right lower lobe opacity. Heart size is normal. No effusion.", "Right lower lobe pneumonia."),
        2: ("The heart is enlarged. The lungs are clear. Mild edema is seen.", "Cardiomegaly. Mild edema.")}
TEXTS = [build_template(f, i) for f, i in {**REPORTS, **{k + 3: v for k, v in LONG.items()}}.values()]


def _img(seed: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray((rng.random((64, 64)) * 255).astype("uint8"))


@pytest.fixture(scope="module")
def policy():
    """A tiny Qwen3-VL trained for 60 steps to write the templated reports above (a few seconds)."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model, proc = models.build_tiny_policy(TEXTS * 4, SMALL, vocab_size=320, seed=0)
    prompt = proc.apply_chat_template(prompt_messages(1), add_generation_prompt=True, tokenize=False)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for step in range(60):
        batch_texts = [prompt + TEXTS[(step * 3 + i) % len(TEXTS)] + "<|im_end|>" for i in range(3)]
        b = proc(text=batch_texts, images=[[_img(i)] for i in range(3)], return_tensors="pt", padding=True)
        n_prompt = proc(text=[prompt], images=[[_img(0)]], return_tensors="pt")["input_ids"].shape[1]
        labels = b["input_ids"].clone()
        labels[:, :n_prompt] = -100
        labels[b["attention_mask"] == 0] = -100
        loss = model(**b, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    model.eval()
    return model, proc


@pytest.fixture(scope="module")
def scorer(small_encoder):
    emb = SentenceEmbedder(small_encoder)
    f = [f for f, _ in REPORTS.values()] + [f for f, _ in LONG.values()]
    i = [i for _, i in REPORTS.values()] + [i for _, i in LONG.values()]
    bank = ReportBank.build(emb, f, i)
    return pr.BankScorer(bank, emb, "chamfer", "avg")


# --------------------------------------------------------------------------- sentences and the scoring rule
def test_complete_sentences_of_partial_templates():
    cs = pr.complete_sentences
    assert cs("<think> Heart normal. Lungs") == [("findings", "Heart normal.")]
    assert cs("<think> Heart normal. Lungs clear.") == [("findings", "Heart normal."), ("findings", "Lungs clear.")]
    assert cs("<think> Heart normal. Lungs clear </think>") == [("findings", "Heart normal."), ("findings", "Lungs clear")]
    assert cs("<think> A lesion of 1.") == []  # "1." may become "1.5 cm"
    assert cs("<think> Heart normal. </think> <answer> Normal") == [("findings", "Heart normal.")]
    assert cs("<think> Heart normal. </think> <answer> Normal", final=True)[-1] == ("impression", "Normal")
    assert cs("FINDINGS: Heart normal. IMPRESSION: Normal.", candidate_format="report") == [
        ("findings", "Heart normal."), ("impression", "Normal.")]
    with pytest.raises(pr.PruningError):
        cs(None)
    with pytest.raises(pr.PruningError):
        cs("x", candidate_format="xml")


def test_proxy_pieces_give_back_the_text():
    t = "<think> Heart size 1.5 cm,  normal. </think> <answer> Normal. </answer>\n"
    p = pr.proxy_pieces(t)
    assert "".join(p) == t and "<think>" in p and " </answer>\n" in p


def test_partial_totals_use_the_sections_every_candidate_has_begun():
    S = np.array([[0.2, 1.0], [0.3, 0.1], [1.0, 1.0]])
    E = np.array([[False, True], [False, False], [True, True]])
    tot = pr.partial_totals(S, E)
    assert tot[0] == pytest.approx(0.2) and tot[1] == pytest.approx(0.3) and tot[2] == np.inf
    # everyone has both sections: eq. (9)'s sum
    assert pr.partial_totals(S[:2], np.zeros((2, 2), bool)).tolist() == pytest.approx([1.2, 0.4])
    # candidates not judged this round get NaN and do not decide the common sections
    assert np.isnan(pr.partial_totals(S, E, np.array([True, True, False]))[2])


@pytest.mark.parametrize("p", [0.0, 1.0, -0.1, 1.5, float("nan"), True, "0.5"])
def test_p_outside_the_open_unit_interval_is_refused(p):
    with pytest.raises(pr.PruningError, match="p"):
        pr.PruneParams(p=p)


def test_other_parameters_are_checked():
    for kw in ({"n_candidates": 0}, {"warmup": -1}, {"min_sentences": 0}, {"sentence_token_cap": 0}, {"n_candidates": 2.5}):
        with pytest.raises(pr.PruningError):
            pr.PruneParams(**kw)
    assert pr.PruneParams(n_candidates=5, p=0.5).n_drop(5) == 3 and pr.PruneParams(p=0.5).n_drop(2) == 1
    assert pr.PruneParams(p=0.99).n_drop(4) == 3  # never the last one


# --------------------------------------------------------------------------- replay, bad input
GOOD = "<think> The lungs are clear. Heart size is normal. No pleural effusion. </think> <answer> No acute process. </answer>"
ODD = "<think> Zebra purple window. Violin quantum teapot. Saxophone galaxy. </think> <answer> Banana. </answer>"


def test_replay_drops_the_far_candidate_and_counts_tokens(scorer):
    res = pr.replay_prune([ODD, GOOD, ODD], scorer, pr.PruneParams(n_candidates=3, p=0.5, warmup=1))
    assert res.survivor == 1 and res.finished[1]
    full = [len(pr.proxy_pieces(t)) + 1 for t in (ODD, GOOD, ODD)]  # + the end-of-sequence token
    assert res.tokens[1] == full[1] and res.tokens[0] < full[0] and res.tokens[2] < full[2]
    assert res.rounds[0]["t"] == 2 and sorted(res.rounds[0]["dropped"]) == [0, 2]


def test_a_candidate_that_finishes_early_stays_in_the_pool(scorer):
    short = "<think> The lungs are clear. </think> <answer> Normal. </answer>"
    res = pr.replay_prune([ODD, short, ODD, ODD], scorer, pr.PruneParams(n_candidates=4, p=0.25, warmup=1))
    # the short one finishes during round 2 (its Impression) and is judged on its finished text in every round
    assert res.finished[1] and res.survivor == 1
    assert all(1 in rd["active"] for rd in res.rounds)
    assert res.tokens[1] == len(pr.proxy_pieces(short)) + 1


def test_a_candidate_without_sentence_boundary_is_capped(scorer):
    runon = "<think> " + " ".join(["word"] * 60) + " </think> <answer> Normal. </answer>"
    prm = pr.PruneParams(n_candidates=2, p=0.5, warmup=1, sentence_token_cap=10)
    res = pr.replay_prune([runon, GOOD], scorer, prm)
    r0 = res.rounds[0]
    # ready after warm-up + round cap tokens, judged on no sentence: +inf, dropped
    assert res.survivor == 1 and r0["dropped"] == [0] and r0["scores"][0] == math.inf
    assert res.tokens[0] == 2 * 10  # 10 tokens (the cap) per lock-step sentence: warm-up, then round 2


def test_k_equal_one_decodes_the_single_candidate(scorer):
    res = pr.replay_prune([GOOD], None, pr.PruneParams(n_candidates=1))
    assert res.survivor == 0 and res.rounds == [] and res.finished == [True]
    assert res.tokens == [len(pr.proxy_pieces(GOOD)) + 1]


def test_warmup_longer_than_every_candidate_saves_nothing(scorer):
    texts = [ODD, GOOD, GOOD.replace("clear", "hyperinflated")]
    res = pr.replay_prune(texts, scorer, pr.PruneParams(n_candidates=3, p=0.5, warmup=20))
    assert all(res.finished) and res.tokens == [len(pr.proxy_pieces(t)) + 1 for t in texts]
    tot = scorer([pr.complete_sentences(t, final=True) for t in texts])
    assert res.survivor == int(np.argmin(tot))


def test_replay_refuses_bad_inputs(scorer):
    with pytest.raises(pr.PruningError, match="params.n_candidates"):
        pr.replay_prune([GOOD, GOOD], scorer, pr.PruneParams(n_candidates=3))
    with pytest.raises(pr.PruningError):
        pr.replay_prune(GOOD, scorer, pr.PruneParams(n_candidates=1))
    with pytest.raises(pr.PruningError):
        pr.replay_prune([GOOD, None], scorer, pr.PruneParams(n_candidates=2))
    with pytest.raises(pr.PruningError, match="scorer"):
        pr.replay_prune([GOOD, GOOD], None, pr.PruneParams(n_candidates=2))
    with pytest.raises(pr.PruningError, match="tokenizer"):
        pr.replay_prune([GOOD], None, pr.PruneParams(n_candidates=1), tokenizer=object())
    with pytest.raises(pr.PruningError, match="tokenizer"):
        pr.replay_prune([GOOD], None, pr.PruneParams(n_candidates=1), token_ids=[[1, 2]])


def test_empty_candidate_ranks_last(scorer):
    res = pr.replay_prune(["", GOOD], scorer, pr.PruneParams(n_candidates=2, warmup=0))
    assert res.survivor == 1 and res.rounds[0]["scores"][0] == math.inf


def test_scorer_refuses_bank_of_another_encoder(small_encoder):
    from sdrlib.selection import SelectionError

    emb = SentenceEmbedder(small_encoder)
    bank = ReportBank.build(emb, ["Heart normal."], ["Normal."])
    bank.encoder_id = "other@0"
    with pytest.raises(SelectionError, match="other@0"):
        pr.BankScorer(bank, emb)
    with pytest.raises(pr.PruningError, match="aggregation"):
        pr.BankScorer(ReportBank.build(emb, ["Heart normal."], ["Normal."]), emb, aggregation="median")


# --------------------------------------------------------------------------- live decoding
@pytest.mark.parametrize("warmup", [1, 2])
def test_live_pruning_matches_standard_generation_and_replay(policy, scorer, warmup):
    model, proc = policy
    prm = pr.PruneParams(n_candidates=5, p=0.5, warmup=warmup)
    any_saved = False
    for study in range(3):
        imgs = [_img(study)]
        std = pr.generate_standard(model, proc, imgs, 5, seed=7, temperature=1.0, max_new_tokens=80)
        live = pr.prune_live(model, proc, imgs, scorer, prm, seed=7, temperature=1.0, max_new_tokens=80)
        # per-candidate generators: every pruned candidate's tokens are a prefix of its full generation
        for j in range(5):
            assert std.ids[j][: len(live.meta["ids"][j])] == live.meta["ids"][j]
            assert live.tokens[j] == len(live.meta["ids"][j]) <= std.tokens[j]
        s = live.survivor
        assert live.survivor_text == std.texts[s] and live.tokens[s] == std.tokens[s] and live.finished[s]
        assert live.total_tokens <= std.total_tokens
        any_saved |= live.total_tokens < std.total_tokens
        # replay over the finished candidates' token ids: same survivor, same token counts
        rep = pr.replay_prune(std.texts, scorer, prm, tokenizer=proc.tokenizer, token_ids=std.ids)
        assert rep.survivor == live.survivor and rep.tokens == live.tokens
        assert [r["dropped"] for r in rep.rounds] == [r["dropped"] for r in live.rounds]
        # replay on the text alone (the API case): the same survivor wherever re-encoding gives back the sampled ids
        eos_ids = {proc.tokenizer.eos_token_id}
        if all(proc.tokenizer.encode(t, add_special_tokens=False) == [i for i in ids if i not in eos_ids]
               for t, ids in zip(std.texts, std.ids)):
            assert pr.replay_prune(std.texts, scorer, prm, tokenizer=proc.tokenizer, eos=std.eos).survivor == s
    assert any_saved


def test_greedy_batch_decoder_is_transformers_generate(policy):
    """The batch decoder against ``model.generate`` (greedy, one candidate each): the same tokens. A KV cache
    passed under a name the model does not read decodes every token without its history (garbage text that
    every other check here still accepts, since standard and live share the decoder)."""
    model, proc = policy
    for study in range(2):
        imgs = [_img(study)]
        std = pr.generate_standard(model, proc, imgs, 2, seed=0, temperature=0.0, max_new_tokens=40)
        text = proc.apply_chat_template(prompt_messages(1), add_generation_prompt=True, tokenize=False)
        batch = proc(text=[text], images=[imgs], return_tensors="pt")
        with torch.inference_mode():
            out = model.generate(**batch, do_sample=False, max_new_tokens=40, pad_token_id=proc.tokenizer.pad_token_id)
        ref = out[0, batch["input_ids"].shape[1]:].tolist()
        assert std.ids[0] == std.ids[1] == ref[: len(std.ids[0])] and len(std.ids[0]) == len(ref)
        assert std.texts[0] == proc.tokenizer.decode(ref, skip_special_tokens=True)


def test_cache_kwarg_is_read_off_the_forward_signature(policy):
    model, _ = policy

    class NoCache(torch.nn.Module):
        def forward(self, input_ids=None, **kwargs):
            return input_ids

    assert pr._cache_kwarg(model) in ("past_key_values", "cache")
    with pytest.raises(pr.PruningError, match="KV cache"):
        pr._cache_kwarg(NoCache())


def test_live_k_equal_one_is_the_standard_generation(policy):
    model, proc = policy
    live = pr.prune_live(model, proc, [_img(0)], None, pr.PruneParams(n_candidates=1), seed=3, max_new_tokens=60)
    std = pr.generate_standard(model, proc, [_img(0)], 1, seed=3, max_new_tokens=60)
    assert live.rounds == [] and live.tokens == std.tokens and live.texts == std.texts


def test_live_candidate_hitting_the_length_cap_is_finished(policy, scorer):
    model, proc = policy
    live = pr.prune_live(model, proc, [_img(1)], scorer, pr.PruneParams(n_candidates=3, warmup=1), seed=0, max_new_tokens=4)
    assert all(t <= 4 for t in live.tokens) and live.finished[live.survivor]


def test_live_refuses_bad_inputs(policy, scorer):
    model, proc = policy
    with pytest.raises(pr.PruningError, match="scorer"):
        pr.prune_live(model, proc, [_img(0)], None, pr.PruneParams(n_candidates=2))
    with pytest.raises(pr.PruningError, match="images"):
        pr.prune_live(model, proc, "img.png", scorer, pr.PruneParams(n_candidates=2))
    with pytest.raises(pr.PruningError, match="max_new_tokens"):
        pr.prune_live(model, proc, [_img(0)], scorer, pr.PruneParams(n_candidates=2), max_new_tokens=0)


def test_profile_pruning_section_is_checked():
    from sdrlib.config import ConfigError, load_profile

    assert load_profile("smoke").pruning.k == 3
    for ov, word in (({"pruning.p": 1.0}, "pruning.p"), ({"pruning.p": 0.0}, "pruning.p"),
                     ({"pruning.policies": ["sft", "hung_nn"]}, "pruning.policies"),
                     ({"pruning.live_names": ["ot"]}, "pruning.live_names"),
                     ({"pruning.sweep_p": [0.5, 1.5]}, "pruning.sweep_p")):
        with pytest.raises(ConfigError, match=word):
            load_profile("smoke", ov)
