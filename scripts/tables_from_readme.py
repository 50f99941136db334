"""Rebuild a run's paired-test tables from the README block that quoted it, for a run whose result files are gone.

    python scripts/tables_from_readme.py README_AT_COMMIT OUT_DIR

Reads the ``<!-- results:begin -->`` block of a README (for instance ``git show 6cc3dd8:README.md``, the run of
``5b7f196`` on the box of 2026-12-01, whose CPU and kernel path were not recorded) and writes what its sentences
state, with the rounding they were written with, as ``OUT_DIR/grpo_significance.csv`` (configuration vs SFT / R_Cham:
``A, B, section, metric, diff, p_value, n_same_sign, n_seeds``; no ``seed_sd``, so no detectable effect) and
``OUT_DIR/sft_vs_baselines_significance.csv`` (SFT vs the image-blind baselines). ``scripts/readme_numbers.py
RESULTS --also OUT_DIR`` then states a conclusion only when that run agrees too (``sdrlib.experiments.conclusions``).
Only the Findings sentences the block wrote are recovered (the block quoted Findings macro F1 and BERTScore F1).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sdrlib.experiments import claims  # noqa: E402

_VS = re.compile(r"^- (?P<section>\w+) (?P<metric>\w+) against (?P<base>[\w\-]+) \(.*?\): (?P<body>.*)$", re.M)
_ITEM = re.compile(r"(?P<a>[\w\-]+(?: \(1 seed\))?) (?P<d>[+-]\d+\.\d+) \(p (?:=|<) (?P<p>\d+\.\d+); "
                   r"same sign in (?P<k>\d+) of (?P<n>\d+) seeds\)")
_BASE = re.compile(r"^- (?P<section>\w+) (?P<metric>\w+): SFT (?P<va>\d\.\d+) vs (?P<b>.+?) (?P<vb>\d\.\d+), \w+ it "
                   r"\(diff (?P<d>[+-]\d\.\d+), 95 % CI \[(?P<lo>[+-]\d\.\d+), (?P<hi>[+-]\d\.\d+)\], "
                   r"p = (?P<p>\d\.\d+)", re.M)


def tables(block: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(grpo_significance, sft_vs_baselines_significance)`` as the block states them."""
    sig = []
    for m in _VS.finditer(block):
        for it in _ITEM.finditer(m["body"]):
            sig.append(dict(A=it["a"].replace(" (1 seed)", ""), B=m["base"], section=m["section"].lower(),
                            metric=m["metric"], diff=float(it["d"]), p_value=float(it["p"]),
                            n_same_sign=int(it["k"]), n_seeds=int(it["n"])))
    base = [dict(section=m["section"].lower(), metric=m["metric"], value_a=float(m["va"]), value_b=float(m["vb"]),
                 diff=float(m["d"]), ci_low=float(m["lo"]), ci_high=float(m["hi"]), p_value=float(m["p"]), B=m["b"])
            for m in _BASE.finditer(block)]
    return pd.DataFrame(sig), pd.DataFrame(base)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("readme", type=Path)
    ap.add_argument("out", type=Path)
    a = ap.parse_args(argv)
    try:
        block = claims.marked_block(a.readme.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        print(f"tables_from_readme: {a.readme}: {e}", file=sys.stderr)
        return 2
    sig, base = tables(block)
    a.out.mkdir(parents=True, exist_ok=True)
    sig.to_csv(a.out / "grpo_significance.csv", index=False)
    base.to_csv(a.out / "sft_vs_baselines_significance.csv", index=False)
    print(f"tables_from_readme: {len(sig)} configuration comparisons, {len(base)} baseline comparisons -> {a.out}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
