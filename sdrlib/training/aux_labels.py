"""An auxiliary label loss for SFT of the tiny policy: the decoder must know the findings where the report starts
(ours; none of the three papers trains one).

Trained on next-token loss alone, the tiny policy writes the findings the image shows barely more often than an
image-blind guesser on half the labels, although the images carry them (docs/evidence/sft_start). With
``sft.aux_label_weight`` = w > 0, SFT adds ``w x`` the binary cross-entropy of the 13 CheXpert observations
(positive or uncertain, :data:`sdrlib.training.tower.TOWER_OBSERVATIONS`; the **training split's** labels,
:func:`sdrlib.training.tower.tower_labels`) predicted by a linear head from the decoder's final hidden state (after
its last norm) at the last prompt position, the one whose next-token distribution starts the report. That state
sees the image tokens and the prompt only, so the head can be right only if the decoder has gathered the findings
there, where every report token can read them. The head is dropped when training ends: the saved policy is a
plain Qwen3-VL, generated from and GRPO-trained as before.

Pieces, used by :func:`sdrlib.training.sft.sft`:

- :func:`attach`: adds the head to the model (``model.sdr_aux_head``, ``(hidden, 13)``, so the optimizer, DDP and
  checkpoints carry it) and a forward hook on the text model's final norm that applies the head to its output
  ``(B, T, hidden)`` inside the model's forward and keeps the logits ``(B, T, 13)``.
- :func:`with_labels`: the SFT dataset plus an ``aux_labels`` column (13 floats per study).
- :func:`trainer_class`: TRL's ``SFTTrainer`` whose collator stacks ``aux_labels`` ``(B, 13)`` and whose loss adds
  the weighted cross-entropy (divided over gradient accumulation steps, as TRL does for its own auxiliary loss);
  the mean auxiliary loss is logged as ``aux_label_loss``, and the head removed at the end of training.

Scope: the tiny policy (``sft.policy: tiny``); a GPU policy with ``aux_label_weight`` > 0 is refused
(:class:`AuxLabelError`) before any work. Bad input: a batch whose rows have no completion (no report position to
read) raises :class:`AuxLabelError`; records without labels raise
:class:`sdrlib.training.tower.TowerInputError` as the tower's pretraining does.

Example::

    head = attach(model)                    # model: a tiny Qwen3-VL
    ds = with_labels(sft_dataset(records), records)
    trainer = trainer_class()(model=model, args=args, train_dataset=ds, processing_class=proc, aux_weight=1.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sdrlib.models import PolicyError
from sdrlib.training.datasets import row_records
from sdrlib.training.tower import TOWER_OBSERVATIONS, tower_labels

__all__ = ["AuxLabelError", "HEAD", "attach", "detach", "with_labels", "start_positions", "trainer_class"]

#: the attribute of the model that holds the head while it trains
HEAD = "sdr_aux_head"


class AuxLabelError(PolicyError, ValueError):
    """The auxiliary label loss cannot be used here (a GPU policy, a batch without a report); the message says why."""


def attach(model: Any) -> Any:
    """Add the label head and the hidden-state hook to a tiny Qwen3-VL; returns the head (``torch.nn.Linear``).

    The head is initialised from torch's current random state (seeded by SFT before the model is built). Raises
    :class:`AuxLabelError` when the model has no text model with a final norm (``model.model.language_model.norm``).
    """
    import torch

    norm = getattr(getattr(getattr(model, "model", None), "language_model", None), "norm", None)
    if norm is None:
        raise AuxLabelError(f"{type(model).__name__} has no text model norm at model.model.language_model.norm; "
                            "the auxiliary label loss needs the tiny Qwen3-VL (sft.policy: tiny)")
    hidden = model.config.text_config.hidden_size
    head = torch.nn.Linear(hidden, len(TOWER_OBSERVATIONS))
    setattr(model, HEAD, head)

    def keep(_module, _inputs, output):  # inside the model's forward, so DDP sees the head used once per step
        model._sdr_aux_logits = head(output)

    model._sdr_hook = norm.register_forward_hook(keep)
    return head


def detach(model: Any) -> None:
    """Remove the head, the hook and the kept hidden state (the saved policy is a plain Qwen3-VL)."""
    hook = getattr(model, "_sdr_hook", None)
    if hook is not None:
        hook.remove()
    for name in (HEAD, "_sdr_hook", "_sdr_aux_logits"):
        if hasattr(model, name):
            delattr(model, name)


def with_labels(ds: Any, records: Sequence[Any]) -> Any:
    """``ds`` (from :func:`sdrlib.training.datasets.sft_dataset` on ``records``) with an ``aux_labels`` column.

    Rows are matched by ``study_id``; the labels are :func:`sdrlib.training.tower.tower_labels` of the records
    the dataset kept (:func:`sdrlib.training.datasets.row_records`)."""
    return ds.add_column("aux_labels", tower_labels(row_records(ds, records)).tolist())


def start_positions(labels: Any) -> Any:
    """``(B,)`` index of the last prompt position per row: one before the first completion token of ``labels``
    (``(B, T)``, -100 outside the completion). Raises :class:`AuxLabelError` for a row without completion tokens or
    one whose completion starts at position 0."""
    import torch

    has = labels != -100
    first = torch.argmax(has.to(torch.int64), dim=1)
    bad = (~has.any(dim=1)) | (first == 0)
    if bool(bad.any()):
        raise AuxLabelError(f"{int(bad.sum())} row(s) of the batch have no report after a prompt; the auxiliary "
                            "label loss reads the position where the report starts")
    return first - 1


def trainer_class() -> type:
    """TRL's ``SFTTrainer`` with the auxiliary label loss (keyword ``aux_weight`` > 0); TRL imported here."""
    import torch
    from transformers import TrainerCallback
    from trl import SFTTrainer

    class _Drop(TrainerCallback):
        def on_train_end(self, args, state, control, model=None, **kwargs):
            if model is not None:
                detach(model)

    class AuxLabelSFTTrainer(SFTTrainer):
        def __init__(self, *args, aux_weight: float, **kwargs):
            super().__init__(*args, **kwargs)
            self.aux_weight = float(aux_weight)
            inner = self.data_collator

            def collate(examples):
                batch = inner(examples)
                batch["aux_labels"] = torch.tensor([ex["aux_labels"] for ex in examples], dtype=torch.float32)
                return batch

            self.data_collator = collate
            self.add_callback(_Drop())

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            y = inputs.pop("aux_labels")
            out = super().compute_loss(model, inputs, return_outputs=return_outputs,
                                       num_items_in_batch=num_items_in_batch)
            loss = out[0] if return_outputs else out
            every = self.accelerator.unwrap_model(model)._sdr_aux_logits  # (B, T, 13)
            pos = start_positions(inputs["labels"])
            logits = every[torch.arange(every.shape[0], device=every.device), pos]
            aux = torch.nn.functional.binary_cross_entropy_with_logits(logits, y.to(logits.dtype))
            mode = "train" if self.model.training else "eval"
            self._metrics[mode]["aux_label_loss"].append(
                self.accelerator.gather_for_metrics(aux.detach()).mean().item())
            steps = self.current_gradient_accumulation_steps if num_items_in_batch is not None else 1
            loss = loss + self.aux_weight * aux / steps
            return (loss, out[1]) if return_outputs else loss

    return AuxLabelSFTTrainer
