"""Size a GRPO study from a run's comparison table: the seeds and test studies at which every comparison the study
reports could detect an effect of the paper's size (sdrlib.experiments.study_size).

    python scripts/size_study.py RESULTS_DIR [--n-studies N] [--m M] [--pairs A:B ...]

RESULTS_DIR holds ``grpo_significance.csv`` (notebook 04); ``--n-studies`` the test studies its intervals come from
(default: the run's ``n`` column, else required); ``--pairs`` the comparisons the study reports (default: the paper's
systems against SFT and against R_exact); ``--m`` the family size for Holm (default: the comparisons sized). Prints
the per-comparison table and the plan. One line and exit 2 for a bad argument or an unreadable table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402

from sdrlib import table_names  # noqa: E402
from sdrlib.experiments.study_size import size_study, study_plan  # noqa: E402
from sdrlib.io import OneLineParser, one_line_errors, positive_int  # noqa: E402
from sdrlib.results import read_result_table  # noqa: E402

DEFAULT_PAIRS = ("R_exact:SFT", "R_Cham:SFT", "R_Haus:SFT", "R_Cham:R_exact", "R_Haus:R_exact")


def _pair(text: str) -> tuple[str, str]:
    a, sep, b = text.partition(":")
    if not sep or not a or not b:
        raise argparse.ArgumentTypeError(f"{text!r}: a pair is A:B (e.g. R_Cham:SFT)")
    return a, b


@one_line_errors("size_study")
def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("results_dir", type=Path)
    ap.add_argument("--n-studies", type=positive_int, default=None)
    ap.add_argument("--m", type=positive_int, default=None)
    ap.add_argument("--pairs", type=_pair, nargs="+", default=[_pair(p) for p in DEFAULT_PAIRS])
    args = ap.parse_args(argv)
    if not args.results_dir.is_dir():
        ap.error(f"{args.results_dir}: not a folder")
    t = read_result_table(args.results_dir, table_names.GRPO_SIGNIFICANCE)
    if t is None:
        ap.error(f"{args.results_dir}: no {table_names.GRPO_SIGNIFICANCE}.csv (run notebook 04 first)")
    t = t[t.section == "findings"] if "section" in t.columns else t
    keep = pd.Series([(a, b) in set(args.pairs) for a, b in zip(t.A, t.B)], index=t.index)
    n = args.n_studies or (int(t.n.iloc[0]) if "n" in t.columns and len(t) else None)
    if n is None:
        ap.error("the table has no n column: give --n-studies")
    sized = size_study(t[keep], n_studies=n, m=args.m)
    pd.set_option("display.width", 160)
    print(sized.round(4).to_string(index=False))
    print("plan:", study_plan(sized))
    return 0


if __name__ == "__main__":
    sys.exit(main())
