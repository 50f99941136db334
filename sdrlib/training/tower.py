"""A vision tower that reads the findings: label pretraining of the tiny policy's tower before SFT (ours).

The tiny CPU policy is trained from scratch, so its vision tower starts at a random initialisation. Trained
end to end by SFT's next-token loss it got *worse* at the findings than its random init (a linear probe on its
features, Cardiomegaly AUROC 0.94 vs 0.99), so the cpu profile keeps the tower frozen at random
(``sft.tiny_freeze_vision``) and trains only the merger into the text model. :func:`pretrain_tower` gives the tower
a task of its own first: multi-label classification of the 13 CheXpert observations (positive or uncertain,
the evaluation's convention) from the tower's merged image tokens, through a linear head on the flattened
tokens (so the head may read *where* a finding is: an effusion at the bases, a pneumothorax at an apex), or on
their maximum over positions (``sft.tiny_tower_head: max``: a finding read the same wherever it lands, a fracture at
any of 12 rib sites), or both (``flat+max``), trained with binary cross-entropy on the **training split's** labels
only. The head is then dropped; SFT freezes the
tower's blocks as before (``sft.tiny_freeze_vision``) and trains the merger. Validation and test labels are
never read. Not in any of the three papers: their policies come with pretrained vision encoders.

:func:`tower_probe` measures what the tower's features carry: a ridge probe per observation on the flattened
merged tokens, fitted on one split and scored (AUROC) on another, as notebook 00's pixel probe does on raw
pixels (:func:`sdrlib.data.stats.pixel_probe`).

Shapes: ``pixel_values`` are the processor's patches, ``(n * T, C)`` with ``T`` = patches per image; the tower
returns ``(n * K, hidden)`` merged tokens (``K`` = (image / patch / merge)^2, 36 on the cpu profile), read as
``(n, K * hidden)`` features.

Bad input (:class:`TowerInputError`, naming the study, label or setting): no records, a record without an image
or without labels, a label that is not a CheXpert-14 observation or not 1 / 0 / -1, a pretraining split with no
positive or uncertain label (nothing to learn), epochs / batch size / learning rate out of range. A split without
images or labels trains no tower: ``sft.tiny_tower_epochs: 0``.

Example::

    model, proc = build_tiny_policy(texts, spec)
    stats = pretrain_tower(model, proc, train_records, epochs=6, learning_rate=1e-3, seed=0)
    probe = tower_probe(model, proc, train_records, val_records)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import math

import numpy as np

from sdrlib.generation import load_images
from sdrlib.models import PolicyError
from sdrlib.vocabulary import CHEXPERT_14

__all__ = ["TOWER_OBSERVATIONS", "TOWER_HEADS", "TowerInputError", "tower_labels", "tower_features", "pretrain_tower",
           "tower_probe"]

#: the observations the tower learns to read: CheXpert's 14 without "No Finding"
TOWER_OBSERVATIONS: tuple[str, ...] = tuple(c for c in CHEXPERT_14 if c != "No Finding")
_FIX = "set sft.tiny_tower_epochs: 0 for a split without images or labels"


class TowerInputError(PolicyError, ValueError):
    """Records or settings the tower's pretraining or probe cannot use; the message names them and the fix."""


def _visual(model: Any) -> Any:
    visual = getattr(getattr(model, "model", None), "visual", None)
    if visual is None:
        raise PolicyError(f"{type(model).__name__} has no vision tower at model.visual")
    return visual


def tower_labels(records: Sequence[Any]) -> np.ndarray:
    """``(n, 13)`` float32: 1 where a record's label of :data:`TOWER_OBSERVATIONS` is positive or uncertain.

    Raises :class:`TowerInputError` when a record has no labels (a split without labels cannot teach the tower), a
    label that is not a CheXpert-14 observation or a value other than 1 / 0 / -1 (None: not mentioned)."""
    missing = [r.study_id for r in records if not getattr(r, "labels", None)]
    if missing:
        raise TowerInputError(f"tower pretraining needs labelled training studies; {len(missing)} have none (first: "
                              f"{missing[0]!r}); {_FIX}")
    for r in records:
        bad = [(k, v) for k, v in r.labels.items() if k not in CHEXPERT_14 or v not in (1, 0, -1, None)]
        if bad:
            raise TowerInputError(f"study {r.study_id!r}: label {bad[0][0]!r}: {bad[0][1]!r}; labels are CheXpert-14 "
                                  "observations (sdrlib.vocabulary.CHEXPERT_14) valued 1, 0 or -1")
    return np.array([[float(r.labels.get(o) in (1, -1)) for o in TOWER_OBSERVATIONS] for r in records], np.float32)


def _pixels(processor: Any, records: Sequence[Any]) -> tuple[Any, Any, int]:
    """The processor's patches of each record's first image: ``(pixel_values, grid_thw, patches per image)``."""
    if not records:
        raise TowerInputError(f"the tower needs studies with images; none given ({_FIX})")
    blind = [r.study_id for r in records if not r.image_paths]
    if blind:
        raise TowerInputError(f"the tower reads images; {len(blind)} studies have none (first: {blind[0]!r}); pass "
                              f"studies with images ({_FIX})")
    images = [load_images(r.image_paths, 1)[0] for r in records]
    out = processor.image_processor(images=images, return_tensors="pt")
    pv, thw = out["pixel_values"], out["image_grid_thw"]
    per = pv.shape[0] // len(records)
    if per * len(records) != pv.shape[0] or not (thw == thw[0]).all():
        raise PolicyError("tower pretraining needs images of one size (the profile's tiny_image_size)")
    return pv, thw, per


def _forward(visual: Any, pv: Any, thw: Any, per: int, idx: Sequence[int]) -> Any:
    """Flattened merged tokens ``(len(idx), K * hidden)`` of the images ``idx``."""
    import torch

    pix = torch.cat([pv[j * per:(j + 1) * per] for j in idx])
    out = visual(pix, grid_thw=thw[list(idx)])
    h = out.pooler_output if getattr(out, "pooler_output", None) is not None else out[0]
    return h.reshape(len(idx), -1)


def tower_features(model: Any, processor: Any, records: Sequence[Any], batch_size: int = 100) -> np.ndarray:
    """``(n, K * hidden)`` float32 features of the tower (no gradients, eval mode restored after)."""
    import torch

    visual = _visual(model)
    pv, thw, per = _pixels(processor, records)
    was = visual.training
    visual.eval()
    try:
        with torch.no_grad():
            parts = [_forward(visual, pv, thw, per, range(i, min(len(records), i + batch_size)))
                     for i in range(0, len(records), batch_size)]
    finally:
        visual.train(was)
    return torch.cat(parts).numpy()


#: the pretraining heads (``sft.tiny_tower_head``): which view of the merged tokens the linear head reads
TOWER_HEADS = ("flat", "max", "flat+max")


def pretrain_tower(model: Any, processor: Any, records: Sequence[Any], *, epochs: int, learning_rate: float,
                   batch_size: int = 32, seed: int = 0, head: str = "flat") -> dict[str, Any]:
    """Train the vision tower (patch embedding, blocks, merger) to classify :data:`TOWER_OBSERVATIONS` from
    ``records`` (the training split), through a head that is then dropped: ``head="flat"`` a linear layer on the
    flattened merged tokens ``(n, K * hidden)`` (it may read where a finding is), ``"max"`` one on their maximum
    over the K positions ``(n, hidden)`` (a finding is read the same wherever it lands: a fracture at any of 12
    rib sites), ``"flat+max"`` the sum of both layers' logits.

    AdamW at ``learning_rate``, ``epochs`` passes in a seeded order, BCE averaged over the 13 observations.
    Returns ``{"epochs", "steps", "loss_first", "loss_last", "n"}`` (mean loss of the first and last epoch).
    ``epochs = 0`` changes nothing. Deterministic for a seed on one thread count."""
    import torch

    whole = all(isinstance(v, int) and not isinstance(v, bool) for v in (epochs, batch_size))
    if not whole or epochs < 0 or batch_size < 1 or not (isinstance(learning_rate, (int, float)) and
                                                         math.isfinite(learning_rate) and learning_rate > 0):
        raise TowerInputError(f"epochs >= 0, batch_size >= 1 (whole numbers) and learning_rate > 0 (finite) needed, "
                              f"got {epochs!r}, {batch_size!r}, {learning_rate!r}")
    if head not in TOWER_HEADS:
        raise TowerInputError(f"head {head!r}: one of {', '.join(TOWER_HEADS)} (sft.tiny_tower_head)")
    if epochs == 0:
        return {"epochs": 0, "steps": 0, "loss_first": None, "loss_last": None, "n": len(records)}
    visual = _visual(model)
    pv, thw, per = _pixels(processor, records)
    y = torch.from_numpy(tower_labels(records))
    if not y.any():
        raise TowerInputError(f"none of the {len(records)} studies has a positive or uncertain label of "
                              f"{len(TOWER_OBSERVATIONS)} observations: nothing to learn ({_FIX})")
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        width = _forward(visual, pv, thw, per, [0]).shape[1]
    k = int(thw[0].prod()) // _merge(visual) ** 2  # merged tokens per image
    if k < 1 or width % k:
        raise PolicyError(f"the tower returns {width} features per image, not a whole number per merged token ({k})")
    layers = {}
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        for view in head.split("+"):
            n_in = width if view == "flat" else width // k
            layers[view] = torch.nn.Linear(n_in, y.shape[1])
            torch.nn.init.normal_(layers[view].weight, std=n_in ** -0.5)
            torch.nn.init.zeros_(layers[view].bias)

    def logits(h: Any) -> Any:
        out = layers["flat"](h) if "flat" in layers else 0
        return out + layers["max"](h.view(len(h), k, -1).amax(dim=1)) if "max" in layers else out

    params = [p for p in visual.parameters() if p.requires_grad] + [p for m in layers.values() for p in m.parameters()]
    opt = torch.optim.AdamW(params, lr=learning_rate)
    was = visual.training
    visual.train()
    losses, steps = [], 0
    try:
        for _ in range(epochs):
            perm = torch.randperm(len(records), generator=gen).tolist()
            total = 0.0
            for i in range(0, len(perm), batch_size):
                idx = perm[i:i + batch_size]
                loss = torch.nn.functional.binary_cross_entropy_with_logits(
                    logits(_forward(visual, pv, thw, per, idx)), y[idx])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                total += float(loss.detach()) * len(idx)
                steps += 1
            losses.append(total / len(perm))
    finally:
        visual.train(was)
    return {"epochs": epochs, "steps": steps, "loss_first": losses[0], "loss_last": losses[-1], "n": len(records),
            "head": head}


def _merge(visual: Any) -> int:
    """The tower's spatial merge size (2 x 2 patches per merged token on the tiny policy)."""
    return int(getattr(getattr(visual, "config", None), "spatial_merge_size", None)
               or getattr(visual, "spatial_merge_size", 2))


def tower_probe(model: Any, processor: Any, fit: Sequence[Any], score: Sequence[Any], *, alpha: float = 100.0
                ) -> "Any":
    """What the tower's features carry: per observation a ridge classifier on standardised :func:`tower_features`
    of ``fit`` (positive or uncertain vs not), scored by AUROC on ``score``. Observations with fewer than 5
    positives or negatives in ``fit``, or one class in ``score``, get NaN. Returns a DataFrame: observation,
    n_pos_fit, n_pos_score, auroc."""
    import pandas as pd
    from sklearn.linear_model import RidgeClassifier
    from sklearn.metrics import roc_auc_score

    xf, xs = tower_features(model, processor, fit), tower_features(model, processor, score)
    mu, sd = xf.mean(0), xf.std(0) + 1e-6
    xf, xs = (xf - mu) / sd, (xs - mu) / sd
    yf, ys = tower_labels(fit), tower_labels(score)
    rows = []
    for k, o in enumerate(TOWER_OBSERVATIONS):
        a, b = yf[:, k], ys[:, k]
        auc = float("nan")
        if min(a.sum(), len(a) - a.sum()) >= 5 and len(set(b.tolist())) == 2:
            auc = float(roc_auc_score(b, RidgeClassifier(alpha=alpha).fit(xf, a).decision_function(xs)))
        rows.append({"observation": o, "n_pos_fit": int(a.sum()), "n_pos_score": int(b.sum()), "auroc": auc})
    return pd.DataFrame(rows)
