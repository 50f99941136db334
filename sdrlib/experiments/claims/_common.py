"""What every claim group shares: reading a table as missing when it has no rows, naming files, and the words
that state a direction or a count (to the precision the tables show).

Scope: helpers of the claim groups of this package; no group, no check here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from sdrlib.results import read_result_table


def _rows(results_dir: str | Path, name: str) -> pd.DataFrame | None:
    """:func:`sdrlib.results.read_result_table`, with a table that has no rows read as missing too (the lines it
    would give are left out)."""
    t = read_result_table(results_dir, name)
    return t if t is not None and len(t) else None


def _src(*names: str) -> str:
    return ", ".join(f"`results/{n}.csv`" for n in names)


def _shown(x: object, digits: int = 3) -> float:
    """A table's number at the precision the tables show it (``digits`` decimals): sentences compare what a reader
    sees, so two configurations that print the same mean are neither above nor below each other. NaN stays NaN."""
    x = float(x)
    return round(x, digits) if np.isfinite(x) else float("nan")


def _direction(diff: float, digits: int = 3) -> str:
    """"above" / "below" / "equal (to 3 decimals) to". Example: ``_direction(-1e-4)`` -> "equal (to 3 decimals) to"."""
    return "equal (to 3 decimals) to" if round(diff, digits) == 0 else "above" if diff > 0 else "below"


def _name(r: pd.Series) -> str:
    """A table row's configuration, ``(1 seed)`` added when its ``seeds`` column says so."""
    one = "seeds" in r.index and pd.notna(r["seeds"]) and int(r["seeds"]) == 1
    return f"{r['config']} (1 seed)" if one else str(r["config"])


def _count_words(k: int, n: int) -> str:
    """Example: ``_count_words(8, 8)`` -> "all 8", ``_count_words(0, 8)`` -> "none of 8", else "k of n"."""
    return f"all {n}" if k == n and n > 1 else f"none of {n}" if k == 0 else f"{k} of {n}"


def _join(items: Sequence[str]) -> str:
    return ", ".join(items) if items else "none"


def _meta_field(results_dir: str | Path, name: str, key: str) -> str | None:
    """One field of ``<results_dir>/<name>.meta.json`` (:func:`sdrlib.results.save_table`'s extras), or None."""
    p = Path(results_dir) / f"{name}.meta.json"
    try:
        return json.loads(p.read_text(encoding="utf-8")).get(key)
    except (OSError, ValueError):
        return None
