"""Policies: a tiny Qwen3-VL built from scratch for CPU, and Unsloth models on GPU.

CPU / default path (no download, no torchvision):

- :func:`train_tokenizer` trains a byte-level BPE on the training reports with
  the ``tokenizers`` library and adds the special tokens Qwen3-VL's chat format
  needs (``<|im_start|>``, ``<|im_end|>``, ``<|vision_start|>``,
  ``<|image_pad|>``, ...) plus the report template tags as single tokens.
- :func:`build_image_processor` builds a PIL-backend Qwen2-VL image processor
  (the torchvision backend is never used).
- :class:`ImageOnlyQwen3VLProcessor` is Qwen3-VL's processor without the video
  half (the stock one requires a video processor, which requires torchvision).
  ``AutoProcessor`` cannot rebuild it from a folder (it would return the
  tokenizer), so load it with ``ImageOnlyQwen3VLProcessor.from_pretrained``
  or :func:`load_tiny_policy`.
- :func:`build_tiny_policy` makes a randomly initialised
  ``Qwen3VLForConditionalGeneration`` from a shrunk config (:class:`TinyVLSpec`).

GPU / paper path: :func:`load_unsloth_policy` loads Qwen3-VL-2B/4B or
Gemma3-4B with Unsloth's ``FastVisionModel`` and attaches LoRA adapters.
Unsloth is imported only inside that function, after checking that a CUDA
device and the model weights are present, so a missing GPU or path fails with
a clear message before any work starts.

Left out: quantised CPU inference, video inputs, multi-image prompts beyond
what the chat template renders (one ``<|image_pad|>`` run per image part).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sdrlib.config import TinyVLSpec  # the shape, written once: also the profile's sft.tiny_* keys
from sdrlib.errors import SDRError

__all__ = [
    "SPECIAL_TOKENS",
    "TEMPLATE_TOKENS",
    "CHAT_TEMPLATE",
    "TinyVLSpec",
    "ImageOnlyQwen3VLProcessor",
    "PolicyError",
    "build_image_processor",
    "build_processor",
    "build_tiny_policy",
    "freeze_vision_tower",
    "load_tiny_policy",
    "save_policy",
    "train_tokenizer",
    "set_cpu_threads",
    "check_gpu_model",
    "load_unsloth_policy",
    "local_weights",
    "PAPER_MODELS",
    "describe",
    "spec_from_dict",
]

#: Special tokens of Qwen3-VL's chat / vision format (ids 0.. in this order).
SPECIAL_TOKENS: tuple[str, ...] = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
#: Report template tags, added as ordinary (non-special) single tokens so they survive decoding.
TEMPLATE_TOKENS: tuple[str, ...] = ("<think>", "</think>", "<answer>", "</answer>")

#: Qwen-style chat template: text and ``{"type": "image"}`` parts; ends a turn with ``<|im_end|>``.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}"
    "{%- else -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'image' -%}{{- '<|vision_start|><|image_pad|><|vision_end|>' -}}"
    "{%- elif part['type'] == 'text' -%}{{- part['text'] -}}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)

#: Paper policies (Hugging Face ids; resolved from a local path or the user's HF cache only).
PAPER_MODELS: dict[str, str] = {
    "qwen3-vl-2b": "unsloth/Qwen3-VL-2B-Instruct",
    "qwen3-vl-4b": "unsloth/Qwen3-VL-4B-Instruct",
    "gemma3-4b": "unsloth/gemma-3-4b-it",
}


class PolicyError(SDRError, RuntimeError):
    """A policy cannot be built or loaded (missing GPU, weights or files)."""


def set_cpu_threads(n: int = 1) -> int:
    """Set torch's intra-op threads (tiny models run fastest single-threaded on a busy CPU).

    Starts numba's thread pool first: numba starts it lazily, at its first parallel kernel or
    thread query (a distance reward's), and its OpenMP layer then calls ``omp_set_num_threads``
    (numba's thread count, the core count by default) in the starting thread, which is the setting
    ``torch.get_num_threads()`` reads. Started after this call, it would move the policy to numba's
    thread count mid-run, in a process's first distance-reward run only (docs/reproducibility.md).
    Returns the previous value. Example: ``set_cpu_threads(1)``.
    """
    import numba
    import torch

    if n < 1:
        raise ValueError(f"threads must be >= 1, got {n}")
    prev = torch.get_num_threads()
    numba.get_num_threads()  # starts numba's pool (once per process); its own thread count is unchanged
    torch.set_num_threads(n)
    return prev


# --------------------------------------------------------------------------- tokenizer


def train_tokenizer(texts: Iterable[str], vocab_size: int = 1024, min_frequency: int = 2) -> Any:
    """Train a byte-level BPE tokenizer on ``texts`` and wrap it for transformers.

    ``vocab_size`` counts the 256 byte symbols, merges, :data:`SPECIAL_TOKENS` and
    :data:`TEMPLATE_TOKENS`. ``eos`` is ``<|im_end|>`` (the end of an assistant turn),
    ``pad`` is ``<|endoftext|>``; the chat template is :data:`CHAT_TEMPLATE`.
    Example: ``tok = train_tokenizer(["No acute findings."], vocab_size=300)``.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    texts = [t for t in texts if isinstance(t, str) and t]
    if not texts:
        raise ValueError("train_tokenizer needs at least one non-empty text")
    n_fixed = 256 + len(SPECIAL_TOKENS) + len(TEMPLATE_TOKENS)
    if vocab_size < n_fixed:
        raise ValueError(f"vocab_size must be at least {n_fixed}, got {vocab_size}")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(TEMPLATE_TOKENS),
        min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=list(SPECIAL_TOKENS[1:]),
    )
    fast.add_tokens(list(TEMPLATE_TOKENS))
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "left"
    return fast


# --------------------------------------------------------------------------- processor


def build_image_processor(image_size: int = 96, patch_size: int = 16, merge_size: int = 2) -> Any:
    """A PIL-backend Qwen2-VL image processor that resizes images to about ``image_size`` px.

    Images are converted to RGB and resized (aspect kept) to multiples of
    ``patch_size * merge_size`` with at most ``image_size**2`` pixels, so a
    96-112 px synthetic radiograph becomes 96 x 96 -> (96/16)^2 = 36 patches ->
    9 image tokens with the defaults.
    Example: ``build_image_processor(96)(images=[img])["image_grid_thw"] -> [[1, 6, 6]]``.
    """
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    factor = patch_size * merge_size
    if image_size < factor:
        raise ValueError(f"image_size must be >= patch_size * merge_size = {factor}, got {image_size}")
    return Qwen2VLImageProcessorPil(
        patch_size=patch_size,
        temporal_patch_size=2,
        merge_size=merge_size,
        min_pixels=factor * factor,
        max_pixels=image_size * image_size,
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
    )


def _processor_base():
    from transformers.processing_utils import ProcessorMixin

    return ProcessorMixin


class ImageOnlyQwen3VLProcessor(_processor_base()):  # type: ignore[misc]
    """Qwen3-VL's processor for images and text only (no video processor, no torchvision).

    ``processor(text=[...], images=[...])`` expands each ``<|image_pad|>`` to the
    number of merged patches of its image and returns ``input_ids``,
    ``attention_mask``, ``pixel_values``, ``image_grid_thw`` and the
    ``mm_token_type_ids`` Qwen3-VL needs for its multimodal RoPE.
    Save with ``save_pretrained``; load with this class's ``from_pretrained``.
    """

    return_mm_token_type_ids = True
    text_kwargs = {"return_token_type_ids": False}

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        self.image_token = "<|image_pad|>"
        self.video_token = "<|video_pad|>"
        self.image_token_id = tokenizer.convert_tokens_to_ids(self.image_token)
        self.video_token_id = tokenizer.convert_tokens_to_ids(self.video_token)
        self.vision_start_token = "<|vision_start|>"
        self.vision_end_token = "<|vision_end|>"
        self.vision_start_token_id = tokenizer.convert_tokens_to_ids(self.vision_start_token)
        self.vision_end_token_id = tokenizer.convert_tokens_to_ids(self.vision_end_token)
        super().__init__(image_processor, tokenizer, chat_template=chat_template)

    def __call__(self, *args, **kwargs):
        # transformers 5.17 (the newest that Unsloth 2026.10.9, the GPU path, accepts) ignores the class attribute
        # above and returns no mm_token_type_ids unless asked per call; Qwen3-VL then refuses every image batch.
        kwargs.setdefault("return_mm_token_type_ids", True)
        return super().__call__(*args, **kwargs)

    def replace_image_token(self, image_inputs: dict, image_idx: int, **kwargs) -> str:
        merge_length = self.image_processor.merge_size**2
        num_image_tokens = int(image_inputs["image_grid_thw"][image_idx].prod()) // merge_length
        return self.image_token * num_image_tokens

    def post_process_image_text_to_text(self, generated_outputs, skip_special_tokens=True, **kwargs) -> list[str]:
        return self.tokenizer.batch_decode(generated_outputs, skip_special_tokens=skip_special_tokens, **kwargs)

    @property
    def model_input_names(self) -> list[str]:
        return list(super().model_input_names) + ["mm_token_type_ids"]


def build_processor(tokenizer, image_size: int = 96, patch_size: int = 16,
                    merge_size: int = 2) -> ImageOnlyQwen3VLProcessor:
    """Combine ``tokenizer`` with :func:`build_image_processor` into an image-only processor.

    Example: ``proc = build_processor(train_tokenizer(texts))``.
    """
    return ImageOnlyQwen3VLProcessor(
        image_processor=build_image_processor(image_size, patch_size, merge_size),
        tokenizer=tokenizer,
        chat_template=tokenizer.chat_template or CHAT_TEMPLATE,
    )


# --------------------------------------------------------------------------- tiny model


def _tiny_config(spec: TinyVLSpec, tokenizer):
    from transformers import Qwen3VLConfig

    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    grid = spec.image_size // spec.patch_size
    return Qwen3VLConfig(
        text_config=dict(
            vocab_size=len(tokenizer),
            hidden_size=spec.hidden_size,
            intermediate_size=spec.intermediate_size,
            num_hidden_layers=spec.layers,
            num_attention_heads=spec.heads,
            num_key_value_heads=spec.kv_heads,
            head_dim=spec.head_dim,
            max_position_embeddings=spec.max_positions,
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 10000.0,
                "mrope_section": list(spec.mrope_section),
                "mrope_interleaved": True,
            },
            pad_token_id=ids["<|endoftext|>"],
            eos_token_id=tokenizer.eos_token_id,
            tie_word_embeddings=True,
        ),
        vision_config=dict(
            depth=spec.vision_layers,
            hidden_size=spec.vision_hidden_size,
            intermediate_size=spec.vision_intermediate_size,
            num_heads=spec.vision_heads,
            patch_size=spec.patch_size,
            spatial_merge_size=spec.merge_size,
            temporal_patch_size=2,
            out_hidden_size=spec.hidden_size,
            num_position_embeddings=max(grid, 4) ** 2,
            deepstack_visual_indexes=[0],
        ),
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=True,
    )


def build_tiny_policy(texts: Sequence[str], spec: TinyVLSpec | None = None, *, vocab_size: int = 1024,
                      seed: int = 0) -> tuple[Any, Any]:
    """Randomly initialised tiny ``Qwen3VLForConditionalGeneration`` and its processor.

    The tokenizer is trained on ``texts`` (the training reports in template form).
    Returns ``(model, processor)``; the model is in float32 on CPU.
    Example: ``model, proc = build_tiny_policy(train_texts, TinyVLSpec(layers=2))``.
    """
    import torch
    from transformers import GenerationConfig, Qwen3VLForConditionalGeneration

    spec = spec or TinyVLSpec()
    tokenizer = train_tokenizer(texts, vocab_size=vocab_size)
    processor = build_processor(tokenizer, spec.image_size, spec.patch_size, spec.merge_size)
    torch.manual_seed(seed)
    model = Qwen3VLForConditionalGeneration(_tiny_config(spec, tokenizer))
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    model.config.eos_token_id = tokenizer.eos_token_id
    model.config.pad_token_id = tokenizer.pad_token_id
    model.config.sdr_tiny_spec = asdict(spec)
    return model, processor


def freeze_vision_tower(model) -> int:
    """Stop gradients into a Qwen3-VL vision tower except its mergers; returns the number of frozen parameters.

    The patch embedding, position embedding and transformer blocks keep their values (``requires_grad=False``);
    ``merger`` and ``deepstack_merger_list`` (the projections into the text model) still train. Measured on the
    cpu profile (200 test studies, teacher forcing and a linear probe, docs/results.md, "Expected results"): the tiny
    tower's *random* features are linearly more informative about the findings than the ones SFT trains, so a
    frozen random tower with a trained merger is a fair choice for a model trained from scratch.
    Raises :class:`PolicyError` for a model without a ``model.visual`` tower.
    """
    visual = getattr(getattr(model, "model", None), "visual", None)
    if visual is None:
        raise PolicyError(f"{type(model).__name__} has no vision tower at model.visual to freeze")
    frozen = 0
    for name, p in visual.named_parameters():
        if not name.startswith(("merger", "deepstack_merger_list")):
            p.requires_grad_(False)
            frozen += p.numel()
    return frozen


def save_policy(model, processor, path: str | os.PathLike) -> Path:
    """Save model weights (safetensors), config and processor to ``path`` (a folder).

    Writes into a temporary sibling folder first and renames it into place, so an
    interrupted save never leaves a half-written policy. Example: ``save_policy(m, p, "runs/sft")``.
    """
    import shutil
    import tempfile

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        processor.save_pretrained(tmp)
        if path.exists():
            old = path.with_name(f".{path.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def load_tiny_policy(path: str | os.PathLike, *, device: str = "cpu") -> tuple[Any, Any]:
    """Load ``(model, processor)`` saved by :func:`save_policy` (local files only).

    Raises :class:`PolicyError` naming the folder when it holds no saved policy.
    Example: ``model, proc = load_tiny_policy("runs/cpu/sft/seed0/final")``.
    """
    from transformers import Qwen3VLForConditionalGeneration

    path = Path(path)
    if not (path / "config.json").is_file():
        raise PolicyError(f"no saved policy in {path} (config.json missing): run the SFT notebook first")
    processor = ImageOnlyQwen3VLProcessor.from_pretrained(path, local_files_only=True)
    model = Qwen3VLForConditionalGeneration.from_pretrained(path, local_files_only=True).to(device)
    return model, processor


# --------------------------------------------------------------------------- GPU / Unsloth


def check_gpu_model(model_name_or_path: str) -> str:
    """Resolve a paper model to a local folder, or raise :class:`PolicyError` before any work.

    Accepts a folder holding ``config.json`` or a key/id of :data:`PAPER_MODELS` found in
    the user's Hugging Face cache (never downloads). Also requires a CUDA device.
    Example: ``check_gpu_model("qwen3-vl-2b")``.
    """
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - torch is a core dependency
        raise PolicyError("torch is not installed") from exc
    if not torch.cuda.is_available():
        raise PolicyError(
            f"the paper profile needs a CUDA GPU for {model_name_or_path!r} (Unsloth); none is visible. "
            "Use the 'cpu' profile (tiny Qwen3-VL) on this machine."
        )
    found = local_weights(model_name_or_path)
    if found is None:
        repo_id = PAPER_MODELS.get(model_name_or_path.lower(), model_name_or_path)
        raise PolicyError(
            f"model {model_name_or_path!r} is neither a folder with config.json nor in the Hugging Face cache "
            f"(looked for {repo_id!r}). Download it first, e.g. `hf download {repo_id}`, "
            "or set the profile's model path to a local folder."
        )
    return found


def local_weights(model_name_or_path: str) -> str | None:
    """The local folder of a paper model (a folder with ``config.json``, or a :data:`PAPER_MODELS` key / Hub id in
    the user's Hugging Face cache), or ``None``; never downloads, needs no GPU.
    Example: ``local_weights("qwen3-vl-2b")`` -> None on a machine without them."""
    p = Path(model_name_or_path).expanduser()
    if (p / "config.json").is_file():
        return str(p)
    repo_id = PAPER_MODELS.get(model_name_or_path.lower(), model_name_or_path)
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(repo_id, local_files_only=True)
    except Exception:
        return None


def load_unsloth_policy(
    model_name_or_path: str,
    *,
    lora_r: int = 16,
    lora_alpha: int = 16,
    lora_dropout: float = 0.0,
    load_in_4bit: bool = False,
    max_seq_length: int = 2048,
    finetune_vision_layers: bool = False,  # no LoRA on the vision layers: untrained (docs/paper_map.md, LoRA)
    seed: int = 0,
) -> tuple[Any, Any]:
    """Load a paper policy with Unsloth's ``FastVisionModel`` and attach LoRA adapters.

    The adapters go on the language layers (attention and MLP) only: with ``finetune_vision_layers=False``
    (the default, which :func:`sdrlib.training.policy.load_policy` keeps) the vision layers stay at their
    pretrained weights, untrained in SFT and GRPO.
    Checks the GPU and the weights first (:func:`check_gpu_model`); Unsloth is imported
    only here. Returns ``(model, processor)``. Example: ``load_unsloth_policy("qwen3-vl-2b")``.
    """
    path = check_gpu_model(model_name_or_path)
    try:
        from unsloth import FastVisionModel  # noqa: I001  (must be imported before transformers on GPU)
    except ImportError as exc:
        raise PolicyError("the GPU path needs Unsloth: pip install 'sdr[gpu]' (unsloth)") from exc
    model, processor = FastVisionModel.from_pretrained(
        path, load_in_4bit=load_in_4bit, max_seq_length=max_seq_length, local_files_only=True
    )
    processor = _own_processor(path) or processor
    if _is_peft(model):  # a saved LoRA run (e.g. the SFT policy): keep training its adapters
        FastVisionModel.for_training(model)
        return model, processor
    model = FastVisionModel.get_peft_model(
        model,
        finetune_vision_layers=finetune_vision_layers,
        finetune_language_layers=True,
        finetune_attention_modules=True,
        finetune_mlp_modules=True,
        r=lora_r,
        lora_alpha=lora_alpha,
        lora_dropout=lora_dropout,
        bias="none",
        random_state=seed,
    )
    return model, processor


def _is_peft(model) -> bool:
    return hasattr(model, "peft_config")


def _own_processor(path: str | os.PathLike):
    """Our image-only processor when ``path`` was saved with it (AutoProcessor would return the tokenizer)."""
    cfg = Path(path) / "processor_config.json"
    try:
        cls = json.loads(cfg.read_text(encoding="utf-8")).get("processor_class")
    except (OSError, ValueError):
        return None
    if cls == ImageOnlyQwen3VLProcessor.__name__:
        return ImageOnlyQwen3VLProcessor.from_pretrained(path, local_files_only=True)
    return None


def spec_from_dict(d: dict[str, Any] | None) -> TinyVLSpec:
    """Build a :class:`TinyVLSpec` from a plain dict (unknown keys rejected)."""
    d = dict(d or {})
    if "mrope_section" in d:
        d["mrope_section"] = tuple(d["mrope_section"])
    unknown = set(d) - set(TinyVLSpec.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown tiny-model keys {sorted(unknown)}; known: {sorted(TinyVLSpec.__dataclass_fields__)}")
    return TinyVLSpec(**d)


def describe(model) -> str:
    """One line: parameter count and shape of a policy. Example: ``describe(model)``."""
    n = sum(p.numel() for p in model.parameters())
    cfg = model.config
    tc = getattr(cfg, "text_config", cfg)
    return json.dumps(
        {"params": n, "layers": getattr(tc, "num_hidden_layers", None), "hidden": getattr(tc, "hidden_size", None)}
    )
