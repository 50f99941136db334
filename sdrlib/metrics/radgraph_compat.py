"""radgraph 0.1.18's bundled allennlp under transformers 5: a narrow, version-checked compatibility layer.

``radgraph.F1RadGraph`` (package ``radgraph`` 0.1.18) builds its annotator from a copy of allennlp bundled
inside the package. That copy calls two tokenizer methods that transformers 5 no longer has:

- ``tokenizer.encode_plus(text, text_pair, **kw)``: four calls in
  ``radgraph/allennlp/data/tokenizers/pretrained_transformer_tokenizer.py`` (the special-token
  reverse-engineering for a pair and for one sequence, ``tokenize`` and ``_intra_word_tokenize``, the last
  being the path RadGraph's mismatched indexer uses);
- ``tokenizer.build_inputs_with_special_tokens(ids)``: in
  ``radgraph/allennlp/data/token_indexers/pretrained_transformer_indexer.py``, whenever ``max_length`` is
  set (RadGraph's configs set it).

:func:`install` wraps ``radgraph.allennlp.common.cached_transformers.get_tokenizer`` (the one place that
bundled allennlp obtains a tokenizer) so that each tokenizer it returns passes through
:func:`adapt_tokenizer`, which, **only when the tokenizer lacks the method**, gives that one tokenizer
object (not its class, not transformers) the missing method:

- ``encode_plus`` = ``tokenizer.__call__`` with the same arguments (``encode_plus`` was the single-text
  form of ``__call__``); when ``return_token_type_ids=True`` was asked and a tokenizer leaves
  ``token_type_ids`` out (a ModernBERT backbone, ``modern-radgraph-xl``, does not use them) it is filled
  with zeros, as RadEval 2.2.1's vendored copy does. Zeros are what the embedder drops anyway (all-zero
  type ids are not passed to the transformer).
- ``build_inputs_with_special_tokens(ids)`` = the tokenizer's single-sequence prefix + ``ids`` + suffix,
  the special-token ids found by encoding ``"a"`` with and without special tokens (BERT: ``[CLS] ids
  [SEP]``). A sequence pair is refused (``NotImplementedError``): the indexer only builds single segments.

The layer patches only a radgraph release it was tested with (:data:`TESTED_RADGRAPH`); any other
release raises :class:`RadGraphVersionError` rather than being patched blindly. Under a transformers that
still has ``encode_plus`` (4.x) :func:`install` changes nothing and checks nothing. It is idempotent.
Tested end to end (tests/metrics/test_radgraph_compat.py) through radgraph's real annotator (its DyGIE
model, tokenizer, indexer, embedder, span and relation heads, pre- and post-processing) around a small
randomly initialised BERT (tests/radgraph_tiny.py writes its model folder), with transformers 5.24.0 and 5.17.0.

Example::

    from sdrlib.metrics import radgraph_compat
    radgraph_compat.install()            # before radgraph builds a tokenizer; a no-op when not needed
    from radgraph import F1RadGraph
    F1RadGraph(reward_level="all", model_type="radgraph")
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

from sdrlib.errors import SDRError

__all__ = ["TESTED_RADGRAPH", "RadGraphVersionError", "TokenizerObjectError", "needs_layer", "adapt_tokenizer", "install",
           "installed"]

TESTED_RADGRAPH = ("0.1.18",)
"""radgraph releases whose bundled allennlp this layer was read against and tested with."""

_MARK = "_sdr_radgraph_compat"


class RadGraphVersionError(SDRError, RuntimeError):
    """The installed radgraph is a release this layer was not tested with; nothing was patched."""


def needs_layer() -> bool:
    """True when the installed transformers' tokenizers lack ``encode_plus`` (transformers 5)."""
    from transformers import PreTrainedTokenizerBase

    return not hasattr(PreTrainedTokenizerBase, "encode_plus")


def _check_radgraph_version() -> str:
    """The installed radgraph version; :class:`RadGraphVersionError` unless it is in :data:`TESTED_RADGRAPH`."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("radgraph")
    except PackageNotFoundError as e:
        raise RadGraphVersionError("package radgraph is not installed (pip install radgraph==0.1.18)") from e
    if v not in TESTED_RADGRAPH:
        raise RadGraphVersionError(
            f"radgraph {v} is not a release the transformers-5 compatibility layer was tested with "
            f"({', '.join(TESTED_RADGRAPH)}); it is not patched blindly: install radgraph=={TESTED_RADGRAPH[-1]} "
            f"or check its bundled allennlp against sdrlib/metrics/radgraph_compat.py and add the release")
    return v


def _encode_plus(self: Any, text: Any, text_pair: Any = None, **kwargs: Any) -> Any:
    """``encode_plus`` as transformers 4 had it: ``__call__`` with the same arguments (one text or one pair)."""
    out = self(text, text_pair, **kwargs)
    if kwargs.get("return_token_type_ids") and out.get("token_type_ids") is None:
        out["token_type_ids"] = [0] * len(out["input_ids"])  # a backbone without type ids (ModernBERT)
    return out


def _special_ids(tokenizer: Any) -> tuple[list[int], list[int]]:
    """Single-sequence special-token ids ``(prefix, suffix)``: ``"a"`` encoded with and without them."""
    with_sp = list(tokenizer("a", add_special_tokens=True)["input_ids"])
    bare = list(tokenizer("a", add_special_tokens=False)["input_ids"])
    for i in range(len(with_sp) - len(bare) + 1):
        if bare and with_sp[i:i + len(bare)] == bare:
            return with_sp[:i], with_sp[i + len(bare):]
    raise ValueError(f"cannot find the special tokens of {type(tokenizer).__name__}: 'a' encodes to {bare} "
                     f"alone and to {with_sp} with special tokens")


def _build_inputs_with_special_tokens(self: Any, token_ids_0: list[int], token_ids_1: list[int] | None = None
                                      ) -> list[int]:
    """``prefix + token_ids_0 + suffix``; a pair is refused (radgraph's indexer only builds single segments)."""
    if token_ids_1 is not None:
        raise NotImplementedError("radgraph_compat builds single sequences only (radgraph's indexer never "
                                  "passes a pair)")
    prefix, suffix = getattr(self, _MARK)
    return prefix + list(token_ids_0) + suffix


class TokenizerObjectError(SDRError, TypeError):
    """:func:`adapt_tokenizer` was given something other than a tokenizer object it can extend."""


def _check_tokenizer_object(tokenizer: Any) -> None:
    if isinstance(tokenizer, (str, bytes, Path)):
        raise TokenizerObjectError(f"adapt_tokenizer needs a tokenizer object, not the name {str(tokenizer)!r}: "
                                   "load it first (transformers.AutoTokenizer.from_pretrained(name))")
    if tokenizer is None or not callable(tokenizer):
        raise TokenizerObjectError(f"adapt_tokenizer needs a tokenizer object (callable on text, as transformers' "
                                   f"tokenizers are), not {type(tokenizer).__name__}")
    if not hasattr(tokenizer, "__dict__"):
        raise TokenizerObjectError(f"adapt_tokenizer needs a tokenizer object that can take new attributes; "
                                   f"{type(tokenizer).__name__} declares __slots__ (wrap it in a plain class)")


def adapt_tokenizer(tokenizer: Any) -> Any:
    """Give this tokenizer object ``encode_plus`` / ``build_inputs_with_special_tokens`` where it lacks them.

    Idempotent; a tokenizer that has both is returned untouched. Returns the same object. Anything that is not a
    callable tokenizer object able to take new attributes (``None``, a model name string, an object with
    ``__slots__``) raises :class:`TokenizerObjectError` saying what to pass.
    """
    _check_tokenizer_object(tokenizer)
    if getattr(tokenizer, _MARK, None) is not None:
        return tokenizer
    if not hasattr(tokenizer, "encode_plus"):
        object.__setattr__(tokenizer, "encode_plus", types.MethodType(_encode_plus, tokenizer))
    if not hasattr(tokenizer, "build_inputs_with_special_tokens"):
        object.__setattr__(tokenizer, _MARK, _special_ids(tokenizer))
        object.__setattr__(tokenizer, "build_inputs_with_special_tokens",
                           types.MethodType(_build_inputs_with_special_tokens, tokenizer))
    elif getattr(tokenizer, _MARK, None) is None:
        object.__setattr__(tokenizer, _MARK, ())
    return tokenizer


def installed() -> bool:
    """True when :func:`install` has wrapped radgraph's ``get_tokenizer`` in this process."""
    import radgraph.allennlp.common.cached_transformers as ct

    return getattr(ct.get_tokenizer, _MARK, False)


def install() -> bool:
    """Wrap radgraph's ``cached_transformers.get_tokenizer`` when transformers lacks ``encode_plus``.

    Returns True when the layer is in place (now or already), False when it is not needed (transformers
    4). Raises :class:`RadGraphVersionError` for a radgraph release not in :data:`TESTED_RADGRAPH`
    (before touching anything). Tokenizers radgraph cached before the call are adapted too.
    """
    if not needs_layer():
        return False
    _check_radgraph_version()
    import radgraph.allennlp.common.cached_transformers as ct

    if installed():
        return True
    original = ct.get_tokenizer

    def get_tokenizer(model_name: str, **kwargs: Any) -> Any:
        return adapt_tokenizer(original(model_name, **kwargs))

    get_tokenizer.__doc__ = f"{original.__doc__ or ''}\n(wrapped by sdrlib.metrics.radgraph_compat)"
    setattr(get_tokenizer, _MARK, True)
    for tok in ct._tokenizer_cache.values():
        adapt_tokenizer(tok)
    ct.get_tokenizer = get_tokenizer
    return True
