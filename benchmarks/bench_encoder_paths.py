"""Faster paths for the reward's sentence encoder (all-mpnet-base-v2), side by side with the fp32 PyTorch one.

Run (repository root; the cpu profile's SynthCXR data must exist, e.g. after notebook 00):

    .venv/bin/python benchmarks/bench_encoder_paths.py [--n 300] [--threads 1]

A path is kept only if every embedding keeps cosine >= 0.999 to the fp32 one and every case of the real-language
battery (``sdrlib.experiments.battery``) keeps its order under the set-distance rewards. Paths:

- ``fp32``: the project's path (sentence-transformers, PyTorch eager), the reference;
- ``int8 all``: PyTorch dynamic int8 quantisation of every ``nn.Linear`` (``torch.ao.quantization.quantize_dynamic``);
- ``int8 attention``: the same for the attention projections only (the feed-forward layers stay fp32);
- ``onnxruntime fp32``: the same weights exported with ``torch.onnx.export`` and run by ONNX Runtime (only when the
  ``onnx`` and ``onnxruntime`` packages are importable; they are not project dependencies).

Sentences: ``--n`` unique Findings / Impression sentences of the training split, encoded as the project encodes them
(one forward pass per token count, no padding: ``SentenceEmbedder._batches``), each path timed on the same passes,
best of ``--reps``. Printed: a Markdown table (path, seconds, time / fp32, min and 1st-percentile cosine to fp32,
battery cases whose order under R_Cham / R_Haus differs from fp32's, kept).
"""

from __future__ import annotations

import argparse
import copy
import random
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

BATTERY_REWARDS = ("chamfer", "hausdorff")


def sentences(n: int, seed: int = 0) -> list[str]:
    from sdrlib.config import load_profile
    from sdrlib.data import load_split
    from sdrlib.reports import split_sentences

    recs = load_split(load_profile("cpu"), "train")
    uniq = list(dict.fromkeys(s for r in recs for sec in (r.findings, r.impression) for s in split_sentences(sec)))
    random.Random(seed).shuffle(uniq)
    return uniq[:n]


def passes(model, texts: list[str]) -> list[list[str]]:
    """One list of sentences per token count (the project's unpadded passes), at most 64 each."""
    groups: dict[int, list[str]] = {}
    for t in texts:
        groups.setdefault(len(model.tokenizer(t)["input_ids"]), []).append(t)
    return [g[i:i + 64] for _, g in sorted(groups.items()) for i in range(0, len(g), 64)]


def timed(encode, batches: list[list[str]], reps: int) -> tuple[np.ndarray, float]:
    best, out = float("inf"), None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = np.concatenate([encode(b) for b in batches])
        best = min(best, time.perf_counter() - t0)
    out = out / np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype(np.float32), best


def st_encoder(model):
    return lambda b: model.encode(b * 2 if len(b) == 1 else b, batch_size=64, convert_to_numpy=True,
                                  normalize_embeddings=False, show_progress_bar=False)[:len(b)]


def onnx_encoder(model, threads: int):
    """An ONNX Runtime session of ``model``'s transformer + mean pooling (unpadded passes: a plain mean), or the
    reason there is none."""
    try:
        import onnxruntime as ort
        import torch
    except ImportError as e:
        return None, f"not measured: {e.name} is not installed"

    class Body(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, ids, mask):
            return self.m(input_ids=ids, attention_mask=mask).last_hidden_state

    path = Path(tempfile.mkdtemp(prefix="sdr-onnx-")) / "encoder.onnx"
    x = model.tokenizer(["There is a small left pleural effusion."], return_tensors="pt")
    try:
        torch.onnx.export(Body(model[0].auto_model).eval(), (x["input_ids"], x["attention_mask"]), str(path),
                          input_names=["ids", "mask"], output_names=["h"], opset_version=17, dynamo=False,
                          dynamic_axes={"ids": {0: "b", 1: "t"}, "mask": {0: "b", 1: "t"}, "h": {0: "b", 1: "t"}})
    except Exception as e:  # the exporter needs the onnx package too
        return None, f"not measured: export failed ({type(e).__name__}: {e})"
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])

    def encode(batch):
        enc = model.tokenizer(batch, return_tensors="np")
        h = sess.run(None, {"ids": enc["input_ids"].astype(np.int64), "mask": enc["attention_mask"].astype(np.int64)})
        return h[0].mean(axis=1)

    return encode, ""


def battery_flips(model, reference: dict[str, list[bool]] | None) -> tuple[dict[str, list[bool]], int]:
    """Which battery cases each of :data:`BATTERY_REWARDS` passes with ``model`` as the encoder, and how many
    (reward, case) outcomes differ from ``reference``."""
    from sdrlib.config import load_profile
    from sdrlib.data import load_split
    from sdrlib.embedding import SentenceEmbedder, load_encoder
    from sdrlib.experiments.battery import run_battery

    from sdrlib.embedding.encoders import _LOADED_ID, model_identity

    cfg = load_profile("cpu")
    if model not in _LOADED_ID:  # a quantised copy: its packed weights have no plain tensors to digest
        _LOADED_ID[model] = f"{model_identity(load_encoder('all-mpnet-base-v2'))}+variant{id(model)}"
    emb = SentenceEmbedder(model, cache_dir=None)
    table = run_battery(list(BATTERY_REWARDS), emb, cfg.grpo, load_split(cfg, "train")[:200])
    got = {r: table[table.reward == r].sort_values("case")["passed"].tolist() for r in BATTERY_REWARDS}
    if reference is None:
        return got, 0
    return got, sum(a != b for r in BATTERY_REWARDS for a, b in zip(got[r], reference[r]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="unique training sentences encoded")
    ap.add_argument("--threads", type=int, default=1, help="torch / ONNX Runtime threads (a GRPO worker's: 1)")
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    import torch
    from torch.ao.quantization import quantize_dynamic

    from sdrlib.embedding import load_encoder

    torch.set_num_threads(a.threads)
    model = load_encoder("all-mpnet-base-v2")
    texts = sentences(a.n)
    batches = passes(model, texts)
    print(f"{len(texts)} unique training sentences in {len(batches)} unpadded passes, {a.threads} thread(s), "
          f"{torch.backends.quantized.engine} quantized engine\n")
    ref, t_ref = timed(st_encoder(model), batches, a.reps)
    ref_battery, _ = battery_flips(model, None)
    linear = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)]
    rows = [("fp32 (PyTorch, the project's)", t_ref, 1.0, 1.0, 0, "reference")]
    variants = {"int8 all (dynamic)": set(linear),
                "int8 attention (dynamic)": {n for n in linear if ".attention." in n}}
    for label, names in variants.items():
        q = quantize_dynamic(copy.deepcopy(model), names, dtype=torch.qint8)
        v, t = timed(st_encoder(q), batches, a.reps)
        cos = (v * ref).sum(axis=1)
        _, flips = battery_flips(q, ref_battery)
        rows.append((label, t, float(cos.min()), float(np.quantile(cos, 0.01)), flips, ""))
    enc, why = onnx_encoder(model, a.threads)
    if enc is None:
        rows.append(("onnxruntime fp32", float("nan"), float("nan"), float("nan"), -1, why))
    else:
        v, t = timed(enc, batches, a.reps)
        cos = (v * ref).sum(axis=1)
        rows.append(("onnxruntime fp32", t, float(cos.min()), float(np.quantile(cos, 0.01)), -1,
                     "battery not run (same vectors to 1e-6)"))
    print("| path | seconds | time / fp32 | min cosine | 1st pct cosine | battery outcomes changed | meets the gate |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for label, t, cmin, c01, flips, note in rows:
        keep = "reference" if note == "reference" else (
            "yes" if cmin >= 0.999 and flips <= 0 and t < t_ref else "no" + (f" ({note})" if note else ""))
        print(f"| {label} | {t:.2f} | {t / t_ref:.2f} | {cmin:.6f} | {c01:.6f} | "
              f"{'-' if flips < 0 else flips} | {keep} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
