"""Seeding, quiet notebooks and the check of executed notebooks' outputs.

- :func:`set_seed`: ``set_seed(0)`` seeds Python's ``random``, NumPy and (if installed) torch, so the
  same profile and seed give the same tables.
- :func:`quiet`: no raw progress bars from the Hugging Face stack (every notebook's setup cell calls it).
- :func:`folded_warnings`: a long step's warnings as one counted line per category, not one block each.
- :func:`output_problems` / :func:`output_sizes`: cells of an executed notebook whose output is too long
  for a learner or holds a raw progress bar (``scripts/check_notebook_outputs.py``, the smoke test).
- :func:`one_line`: a generated report as one printable line (its carriage returns and line breaks as spaces).

Leaves out logging configuration: library log messages (not progress bars) still show.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import sys
import warnings
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

__all__ = ["set_seed", "quiet", "folded_warnings", "MAX_OUTPUT_LINES", "MAX_OUTPUT_CHARS", "cell_output_text",
           "output_sizes", "output_problems", "one_line"]


def set_seed(seed: int) -> None:
    """Seed ``random``, ``numpy`` and ``torch`` (when importable) with ``seed``."""
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {seed!r}")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    os.environ["PYTHONHASHSEED"] = str(seed)
    try:
        import torch
    except ImportError:  # torch is optional for the text-only parts
        return
    torch.manual_seed(seed)


# ---------------------------------------------------------------- quiet notebooks

#: Environment switches for the progress bars of the Hugging Face stack (read at import, and inherited by
#: the training subprocesses): huggingface_hub downloads, transformers' "Loading weights" bar, datasets' map/cast.
_QUIET_ENV = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
              "TOKENIZERS_PARALLELISM": "false"}


def quiet() -> None:
    """Switch off the raw progress bars of huggingface_hub, transformers, datasets and tqdm in this process.

    Call it once, first thing in a notebook's setup cell. It sets :data:`_QUIET_ENV` (for libraries imported
    later and for subprocesses) and calls the libraries' own switches for those already imported:
    ``huggingface_hub.utils.disable_progress_bars``, ``transformers.utils.logging.disable_progress_bar``
    (transformers 5.x draws "Loading weights 0%...100%" through it) and
    ``datasets.utils.disable_progress_bars``. Warnings and log messages are left alone: fold the warnings
    of a long step with :func:`folded_warnings`. Safe to call twice; a library that is not installed is skipped.
    """
    for k, v in _QUIET_ENV.items():
        os.environ.setdefault(k, v)
    try:
        from huggingface_hub.utils import disable_progress_bars as _hub_off
        _hub_off()
    except ImportError:  # pragma: no cover - the text-only parts run without it
        pass
    if "transformers" in sys.modules:
        from transformers.utils import logging as _tf_logging
        _tf_logging.disable_progress_bar()
    if "datasets" in sys.modules:
        from datasets.utils import disable_progress_bars as _ds_off
        _ds_off()


@contextlib.contextmanager
def folded_warnings(*, show: Callable[[str], None] = print, examples: int = 1) -> Iterator[list]:
    """Record the warnings raised inside the block and print one counted line per category instead.

    Nothing is hidden: each category gets a line with its count, the module that raised it and its
    first message (``examples`` distinct messages), e.g.
    ``folded 9 ConvergenceWarning (sdrlib.selection.scoring), first: solver stopped at its iteration cap ...``.
    Yields the list of recorded :class:`warnings.WarningMessage` for code that wants to look closer.

    Example::

        with folded_warnings():
            scores = sel.bank_distances(...)
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught
    by_cat: dict[str, list[warnings.WarningMessage]] = {}
    for w in caught:
        by_cat.setdefault(w.category.__name__, []).append(w)
    for cat, ws in by_cat.items():
        mods = sorted({_module_of(w.filename) for w in ws})
        firsts = list(dict.fromkeys(_one_line(str(w.message)) for w in ws))[:max(1, examples)]
        show(f"folded {len(ws)} {cat} ({', '.join(mods)}), first: " + " | ".join(firsts))


def one_line(text: str) -> str:
    """``text`` as one printable line: each run of white space (line breaks and carriage returns included) becomes
    one space. Notebooks print a policy's generated reports through it: a tiny policy can sample a ``\\r``, which
    redraws the line in a terminal and which :func:`output_problems` reads as a raw progress bar.

    Example: ``one_line("Heart normal.\\r  No effusion.\\n")`` -> ``"Heart normal. No effusion."``.
    """
    return " ".join(str(text).split())


def _one_line(msg: str, width: int = 160) -> str:
    msg = one_line(msg)
    return msg if len(msg) <= width else msg[:width - 3] + "..."


def _module_of(filename: str) -> str:
    """``/x/sdrlib/selection/scoring.py`` -> ``sdrlib.selection.scoring``; a notebook cell -> ``notebook``."""
    p = Path(filename)
    parts = p.with_suffix("").parts
    for root in ("sdrlib", "sklearn", "transformers", "trl", "torch", "datasets", "ot", "evaluate", "nltk"):
        if root in parts:
            return ".".join(parts[parts.index(root):])
    return "notebook" if "ipykernel" in filename or filename.startswith("<") else p.stem


# ---------------------------------------------------------------- executed-notebook output check

#: Limits of one code cell's output in an executed notebook (issue 26): beyond them a learner stops reading.
MAX_OUTPUT_LINES, MAX_OUTPUT_CHARS = 40, 4000
_NUMPY_REPR = re.compile(r"\bnp\.(?:float|int|bool_|str_)\w*\(")
_BAR = re.compile(r"\d+it/s|it/s\]|s/it\]|\d%\||Loading weights|examples/s\]")


def cell_output_text(cell: dict) -> str:
    """The text a reader sees below code cell ``cell`` (nbformat JSON): streams, tracebacks, and for rich
    outputs their Markdown, else their plain text (images count as nothing).

    Example: a cell printing ``"a\\nb\\n"`` -> ``"a\\nb\\n"``.
    """
    return "".join(text for text, _ in _outputs(cell))


def _outputs(cell: dict) -> Iterator[tuple[str, int | None]]:
    """``(text, rows)`` per output of ``cell``: ``rows`` is the number of table rows a rendered HTML table
    shows (``None`` when the output is not one)."""
    for o in cell.get("outputs", []):
        kind = o.get("output_type")
        if kind == "stream":
            yield _joined(o.get("text", "")), None
        elif kind == "error":
            yield "\n".join(o.get("traceback", [])) + "\n", None
        elif kind in ("display_data", "execute_result"):
            data = o.get("data", {})
            if any(k.startswith("image/") for k in data):
                continue
            html = _joined(data.get("text/html", ""))
            rows = html.count("<tr") if "<table" in html else None
            for mime in ("text/markdown", "text/plain"):
                if mime in data:
                    yield _joined(data[mime]).rstrip("\n") + "\n", rows
                    break


def _joined(text: str | list[str]) -> str:
    return "".join(text) if isinstance(text, list) else str(text)


_CUT_TABLE = re.compile(r"^\[(\d+) rows x (\d+) columns\]$", re.M)


def output_sizes(nb: dict) -> list[dict]:
    """One row per code cell of executed notebook ``nb``: ``cell`` (index), ``chars``, ``lines``, ``bar``
    (a raw progress bar: a ``\\r``-redrawn line, ``it/s``, ``%|``, "Loading weights") and ``cut`` (rows of a
    table pandas cut to its head and tail or left and right columns, as ``"144 rows x 12 columns"``; ``""`` if none)
    and ``numpy`` (a raw numpy repr such as ``np.float64(0.99)``, what printing a dict of numpy values gives).

    A DataFrame counts as its plain text for ``chars`` and as the rows of its rendered HTML table for
    ``lines`` (the plain text wraps wide tables into blocks a notebook reader never sees).
    """
    rows = []
    for i, c in enumerate(nb.get("cells", [])):
        if c.get("cell_type") != "code":
            continue
        chars = lines = 0
        cut, numpy_repr = "", False
        bar = False
        for text, table_rows in _outputs(c):
            chars += len(text)
            lines += table_rows if table_rows is not None else text.count("\n") + (not text.endswith("\n"))
            bar = bar or "\r" in text.replace("\r\n", "\n") or bool(_BAR.search(text))
            numpy_repr = numpy_repr or bool(_NUMPY_REPR.search(text))
            m = _CUT_TABLE.search(text)
            if m and "..." in text:
                cut = cut or f"{m.group(1)} rows x {m.group(2)} columns"
        rows.append({"cell": i, "chars": chars, "lines": lines, "bar": bar, "cut": cut, "numpy": numpy_repr})
    return rows


def output_problems(nb: dict, *, max_lines: int = MAX_OUTPUT_LINES, max_chars: int = MAX_OUTPUT_CHARS) -> list[str]:
    """What makes executed notebook ``nb`` hard to read: one message per cell over the limits, with a raw
    progress bar or with a table pandas cut to head and tail (empty list: every cell's output is readable).

    Example: a cell printing 50 lines -> ``["cell 4: 50 lines of output (> 40)"]``.
    """
    out = []
    for r in output_sizes(nb):
        why = []
        if r["lines"] > max_lines:
            why.append(f"{r['lines']} lines of output (> {max_lines})")
        if r["chars"] > max_chars:
            why.append(f"{r['chars']:,} characters of output (> {max_chars:,})")
        if r["bar"]:
            why.append("a raw progress bar (call sdrlib.utils.quiet() in the setup cell)")
        if r["numpy"]:
            why.append("raw numpy values such as np.float64(...) (print rounded numbers)")
        if r["cut"]:
            why.append(f"a table of {r['cut']} cut by pandas (show the rows and columns that matter)")
        if why:
            out.append(f"cell {r['cell']}: " + "; ".join(why))
    return out
