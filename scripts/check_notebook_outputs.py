"""Check the executed notebooks of a run: every cell's output short enough to read, no raw progress bars.

    python scripts/check_notebook_outputs.py runs/cpu/notebooks          # every notebook's largest cell
    python scripts/check_notebook_outputs.py runs/smoke/notebooks --all  # and every cell over the limits

Prints one line per notebook (its largest cell by characters: index, characters, lines) and the cells over
:data:`sdrlib.utils.MAX_OUTPUT_LINES` lines or :data:`sdrlib.utils.MAX_OUTPUT_CHARS` characters or holding a
raw progress bar. Exit code 1 when any cell is, 0 when none is, 2 for a folder without notebooks.
The rule is :func:`sdrlib.utils.output_problems`; tests/notebooks/test_notebooks_smoke.py applies it to the
smoke run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sdrlib.utils import output_problems, output_sizes  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="folder of executed notebooks (runs/<profile>/notebooks)")
    ap.add_argument("--all", action="store_true", help="list every cell over the limits, not only the count")
    args = ap.parse_args(argv)
    paths = sorted(args.folder.glob("[0-9][0-9]_*.ipynb"))
    if not paths:
        print(f"no executed notebooks in {args.folder}", file=sys.stderr)
        return 2
    bad = 0
    print(f"{'notebook':<22} {'largest cell':>12} {'chars':>7} {'lines':>6}  problems")
    for p in paths:
        nb = json.loads(p.read_text(encoding="utf-8"))
        sizes = output_sizes(nb)
        top = max(sizes, key=lambda r: (r["chars"], r["lines"]), default={"cell": "-", "chars": 0, "lines": 0})
        probs = output_problems(nb)
        bad += len(probs)
        print(f"{p.name:<22} {str(top['cell']):>12} {top['chars']:>7,} {top['lines']:>6}  {len(probs)}")
        if args.all:
            for msg in probs:
                print(f"    {msg}")
    print(f"{bad} cell(s) over the limits or with a progress bar" if bad else "every cell's output is readable")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
