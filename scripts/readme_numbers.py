"""Print the README's "Expected results" block written from a run's result files, or check a README against them.

    python scripts/readme_numbers.py RESULTS_DIR                    # print the block (Markdown, with markers)
    python scripts/readme_numbers.py RESULTS_DIR --check README.md  # every number between the markers must be
                                                                    # in the files its paragraph names; exit 1 if not
                                                                    # (quantifiers such as "every ..." are listed)

The block goes between ``<!-- results:begin -->`` and ``<!-- results:end -->`` (sdrlib.experiments.claims).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sdrlib.experiments import claims  # noqa: E402
from sdrlib.io import decode_text, one_line_errors  # noqa: E402


@one_line_errors("readme_numbers")  # a file it cannot read: one line naming it, exit 2
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results_dir", type=Path, help="a run's results/ folder")
    ap.add_argument("--check", type=Path, metavar="README", help="check the marked block of this file instead")
    ap.add_argument("--min-int", type=int, default=10, help="integers below this are counts and not checked")
    a = ap.parse_args(argv)
    if not a.results_dir.is_dir():
        ap.error(f"{a.results_dir} is not a folder")
    if a.check is None:
        sys.stdout.write(claims.results_section(a.results_dir))
        return 0
    text = decode_text(a.check.read_bytes(), str(a.check), lenient=False).text  # not UTF-8: exit 2 naming it
    try:
        block = claims.marked_block(text)
    except ValueError as e:
        print(f"{a.check}: {e}", file=sys.stderr)
        return 1
    problems = claims.check_block(block, a.results_dir, min_int=a.min_int)
    for p in problems:
        print(p)
    for w in claims.sweeping_words(block):
        print(f"note: '{w}': a quantifier the check cannot verify; make sure the table says so", file=sys.stderr)
    n = len(claims.numbers_in(block, min_int=a.min_int))
    print(f"{a.check}: {n} numbers checked against {a.results_dir}, {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
