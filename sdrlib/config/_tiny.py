"""The tiny CPU policy's shape, written once: :class:`TinyVLSpec`.

The model builder (:func:`sdrlib.models.build_tiny_policy`) takes a :class:`TinyVLSpec`; a profile writes its
fields as ``sft.tiny_<field>`` keys (``sft.tiny_hidden_size``, ``sft.tiny_layers``, ...), which
:func:`with_tiny_keys` adds to :class:`sdrlib.config.SFTConfig` from this class: each shape field with a ``help``
(its default, its constraints, its help) becomes one profile key, so a new shape field is written here only.
:meth:`TinyVLSpec.from_profile` reads them back. ``max_positions`` and ``mrope_section`` are not profile keys:
the first is fixed, the second follows ``head_dim`` (:func:`mrope_for`). Left out: the tiny policy's training
settings (``sft.tiny_tower_epochs``, ``sft.tiny_tower_lr``, ``sft.tiny_freeze_vision``), which are not its shape.

Example:

>>> spec = TinyVLSpec(layers=2)
>>> spec.layers, spec.hidden_size, spec.mrope_section
(2, 128, (6, 5, 5))
>>> [f.name for f in profile_fields()][:3]
['hidden_size', 'layers', 'heads']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TinyVLSpec", "PROFILE_PREFIX", "profile_fields", "mrope_for", "with_tiny_keys"]

#: a shape field ``x`` is the profile key ``sft.<PROFILE_PREFIX>x``
PROFILE_PREFIX = "tiny_"


@dataclass(frozen=True)
class TinyVLSpec:
    """Shape of the tiny Qwen3-VL (text decoder + vision tower); defaults suit 2 CPU cores.

    ``head_dim`` must be even and ``mrope_section`` must sum to ``head_dim // 2``. The fields with a ``help``
    are profile keys (``sft.tiny_<field>``, :func:`with_tiny_keys`); their ``min`` is the profile's lower bound.
    """

    hidden_size: int = field(default=128, metadata={"min": 1, "help": "tiny policy: text hidden size"})
    layers: int = field(default=4, metadata={"min": 1, "help": "tiny policy: decoder layers"})
    heads: int = field(default=4, metadata={"min": 1, "help": "tiny policy: attention heads"})
    kv_heads: int = field(default=2, metadata={"min": 1, "help": "tiny policy: key/value heads"})
    head_dim: int = field(default=32, metadata={"min": 2, "help": "tiny policy: head dimension"})
    intermediate_size: int = field(default=384, metadata={"min": 1, "help": "tiny policy: MLP width"})
    vision_hidden_size: int = field(default=96, metadata={"min": 1, "help": "tiny policy: vision tower width"})
    vision_layers: int = field(default=2, metadata={"min": 1, "help": "tiny policy: vision tower depth"})
    vision_heads: int = field(default=4, metadata={"min": 1, "help": "tiny policy: vision heads"})
    vision_intermediate_size: int = field(default=256, metadata={"min": 1,
        "help": "tiny policy: vision MLP width"})
    patch_size: int = field(default=16, metadata={"min": 1, "help": "tiny policy: vision patch size (pixels)"})
    merge_size: int = field(default=2, metadata={"min": 1,
        "help": "tiny policy: patches merged per side into one image token ((image/patch/merge)^2 tokens)"})
    image_size: int = field(default=96, metadata={"min": 16,
        "help": "tiny policy: images resized to at most this side"})
    max_positions: int = 1024
    mrope_section: tuple[int, int, int] = (6, 5, 5)

    def __post_init__(self) -> None:
        if self.head_dim % 2 or sum(self.mrope_section) != self.head_dim // 2:
            raise ValueError(f"mrope_section {self.mrope_section} must sum to head_dim // 2 = {self.head_dim // 2}")
        if self.heads % self.kv_heads:
            raise ValueError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        if self.merge_size < 1 or self.image_size % (self.merge_size * self.patch_size):
            raise ValueError(f"image_size ({self.image_size}) must be a multiple of merge_size * patch_size "
                             f"({self.merge_size} * {self.patch_size})")

    @classmethod
    def from_profile(cls, sft: Any) -> TinyVLSpec:
        """The shape a profile's ``sft`` section states (its ``sft.tiny_<field>`` keys; ``mrope_section`` from
        ``head_dim``, :func:`mrope_for`).

        >>> from sdrlib.config import load_profile
        >>> TinyVLSpec.from_profile(load_profile("smoke", {"sft.tiny_layers": 1}).sft).layers
        1
        """
        values = {f.name: getattr(sft, PROFILE_PREFIX + f.name) for f in profile_fields()}
        return cls(**values, mrope_section=mrope_for(values["head_dim"]))


def profile_fields() -> tuple[dataclasses.Field, ...]:
    """The fields of :class:`TinyVLSpec` a profile sets (those with a ``help``), in declaration order."""
    return tuple(f for f in dataclasses.fields(TinyVLSpec) if "help" in f.metadata)


def mrope_for(head_dim: int) -> tuple[int, int, int]:
    """The rotary split of ``head_dim // 2`` over (time, height, width) in Qwen3-VL's proportions ([24, 20, 20]
    for head_dim 128).

    >>> mrope_for(32), mrope_for(128)
    ((6, 5, 5), (24, 20, 20))
    """
    half = head_dim // 2
    hw = (half * 5) // 16
    return (half - 2 * hw, hw, hw)


def with_tiny_keys(after: str) -> Callable[[type], type]:
    """Class decorator (applied before ``@dataclass``): add one field ``tiny_<name>`` per field of
    :func:`profile_fields` (same type, default and metadata) right after the field ``after``, so the section's keys
    keep their order in ``to_dict`` and profiles. A missing ``after`` is a :class:`TypeError`."""
    def add(cls: type) -> type:
        own = dict(cls.__dict__.get("__annotations__", {}))
        if after not in own:
            raise TypeError(f"{cls.__name__} has no field {after!r} to put the tiny policy's keys after")
        annotations: dict[str, Any] = {}
        for name, tp in own.items():
            annotations[name] = tp
            if name == after:
                for f in profile_fields():
                    key = PROFILE_PREFIX + f.name
                    annotations[key] = f.type
                    setattr(cls, key, field(default=f.default, metadata=dict(f.metadata)))
        cls.__annotations__ = annotations
        return cls
    return add
