"""Print the "Expected results" block (docs/results.md) written from a run's result files, or check a file's block.

The block lives in ``docs/results.md`` (the README links it); ``--check`` reads the marked block of any file.

    python -m sdrlib.experiments.claims RESULTS_DIR                    # print the block (Markdown, with markers)
    python -m sdrlib.experiments.claims RESULTS_DIR --also OTHER --label "this box, avx2" --label "aten default"
                                                                       # conclusions must hold in OTHER too
    python -m sdrlib.experiments.claims RESULTS_DIR --check docs/results.md  # check the block; exit 1 if not

The check has two modes (``sdrlib.experiments.conclusions``), chosen from the run's ``machine.json`` and the
machine the block records (``--mode`` forces one):

- **exact**, when the run has the block's run's CPU vendor and model, kernel path and library versions: every number
  between the markers must be in the files its paragraph names (quantifiers such as "every ..." are listed), and
  every conclusion must come out the same;
- **tolerant**, otherwise (another CPU vendor or model: MKL's pinned AVX2 branch holds on Intel CPUs only; another
  kernel path, other library versions, or a run without a machine record): the machine-independent paragraphs (the
  corpus statistics) number by number, and the conclusions by what they rest on
  (a stated difference keeps its direction and p < 0.05 across seeds and studies; a "no difference detected" is
  contradicted only by a significant difference larger than the detectable effect the block states).

In both modes a claim group of the block whose table the run lacks is a problem (one line: ``table X missing: group
"Y" not generated``; the printed block carries the same note in the group's place).

The block goes between ``<!-- results:begin -->`` and ``<!-- results:end -->`` (:mod:`sdrlib.experiments.claims`).
``python scripts/readme_numbers.py ...`` is the same command (a thin wrapper).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sdrlib import table_names
from sdrlib.experiments import claims, conclusions
from sdrlib.io import OneLineParser, one_line_errors
from sdrlib.results import read_result_table

#: the command a user types; every one-line error begins with it
PROG = "python -m sdrlib.experiments.claims"


@one_line_errors(PROG)  # a ResultTableError (an SDRError) or OSError: one line naming the file, exit 2
def main(argv: list[str] | None = None) -> int:
    """The command line; exit 0 (printed, or the check passed), 1 (problems found), 2 (bad usage or a file it
    cannot read: one line naming the file)."""
    return _main(argv)


def _main(argv: list[str] | None) -> int:
    ap = OneLineParser(prog=PROG, description=__doc__.split("\n\n")[0])  # a usage error: one line, exit 2
    ap.add_argument("results_dir", type=Path, help="a run's results/ folder")
    ap.add_argument("--check", type=Path, metavar="FILE",
                    help="check the marked block of this file (docs/results.md) instead of printing one")
    ap.add_argument("--also", type=Path, action="append", default=[], metavar="RESULTS",
                    help="another run of the same commit and profile (another kernel path): conclusions must hold "
                         "there too (printing and --check alike)")
    ap.add_argument("--label", action="append", default=None, help="a name per run, this one first (repeatable)")
    ap.add_argument("--only-here", action="append", default=[], metavar="LABEL",
                    help="a configuration whose reward changed since the --also runs: compared in this run only "
                         "(repeatable)")
    ap.add_argument("--mode", choices=("auto", "exact", "tolerant"), default="auto", help="check mode (auto)")
    ap.add_argument("--conclusions-csv", type=Path, metavar="CSV",
                    help="also write the conclusions table here (print mode; never into a results folder it reads)")
    ap.add_argument("--min-int", type=int, default=10, help="integers below this are counts and not checked")
    a = ap.parse_args(argv)
    for d in [a.results_dir, *a.also]:
        if not d.is_dir():
            ap.error(f"{d} is not a folder")
    if a.label is not None and len(a.label) != 1 + len(a.also):
        ap.error(f"--label: {len(a.label)} names for {1 + len(a.also)} runs")
    bad = _argument_problem(a)
    if bad:
        print(f"{PROG}: {bad}", file=sys.stderr)
        return 2
    if a.check is None:
        sys.stdout.write(claims.results_section(a.results_dir, also=a.also, labels=a.label,
                                                only_here=a.only_here, conclusions_csv=a.conclusions_csv))
        return 0
    try:
        block = claims.marked_block(a.check.read_text(encoding="utf-8"))
    except OSError as e:
        print(f"{PROG}: {a.check}: cannot read ({e.strerror or type(e).__name__})", file=sys.stderr)
        return 2
    except UnicodeDecodeError as e:
        print(f"{PROG}: {a.check}: not UTF-8 text (byte {e.start})", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"{a.check}: {e}", file=sys.stderr)
        return 1
    theirs, ours = conclusions.readme_profile(block), conclusions.run_profile(a.results_dir)
    if theirs and ours and theirs != ours:
        print(f"{PROG}: {a.results_dir} holds a run of profile {ours!r}, the README block comes from profile "
              f"{theirs!r}: their numbers differ by design; check a run of profile {theirs!r}", file=sys.stderr)
        return 2
    mode, reasons = conclusions.check_mode(block, a.results_dir)
    if a.mode != "auto":
        mode, reasons = a.mode, [f"--mode {a.mode}"]
    print(f"{a.check}: {mode} check" + (f" ({'; '.join(reasons)})" if reasons else
                                         " (the README run's CPU, kernel path and library versions)"), file=sys.stderr)
    if mode == "exact":
        has_table = (a.results_dir / f"{conclusions.TABLE}.csv").is_file()
        checked = "".join(f"**{t}**{x}" if t else x for t, x in conclusions.split_groups(block)
                          if has_table or t != conclusions.TITLE)
        measured: list[str] = []
        problems = claims.check_block(checked, a.results_dir, min_int=a.min_int, notes=measured)
        more, notes = conclusions.check_verdicts(block, a.results_dir, also=a.also)
        problems += more
        notes = measured + notes
        n = len(claims.numbers_in(checked, min_int=a.min_int))
        what = f"{n} numbers and the conclusions checked"
    else:
        problems, notes = claims.check_tolerant(block, a.results_dir, min_int=a.min_int, also=a.also)
        what = "the machine-independent numbers and the conclusions checked"
    problems = claims.missing_tables(a.results_dir, block=block) + problems  # a group of the block the run cannot write
    for p in problems:
        print(p)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    if mode == "exact":
        for w in claims.sweeping_words(block):
            print(f"note: '{w}': a quantifier the check cannot verify; make sure the table says so", file=sys.stderr)
    print(f"{a.check}: {what} against {a.results_dir}, {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


def _argument_problem(a: argparse.Namespace) -> str | None:
    """What is wrong with the arguments, before any work (one line), or None."""
    runs = [a.results_dir, *a.also]
    ours = conclusions.run_profile(a.results_dir)
    for d in a.also:
        theirs = conclusions.run_profile(d)
        if ours and theirs and theirs != ours:
            return (f"--also {d} holds a run of profile {theirs!r}, {a.results_dir} one of profile {ours!r}: their "
                    "numbers differ by design, so a disagreement would erase directions; give --also runs of profile "
                    f"{ours!r}")
    if a.conclusions_csv is not None:
        if a.check is not None:
            return "--conclusions-csv goes with print mode, not --check"
        target = a.conclusions_csv.resolve()
        inside = [d for d in runs if target.is_relative_to(d.resolve())]
        if inside:
            return (f"--conclusions-csv {a.conclusions_csv} is inside the results folder {inside[0]} it reads; "
                    "write it elsewhere")
    if a.only_here:
        known: set[str] = set()
        for d in runs:
            t = read_result_table(d, table_names.GRPO_SIGNIFICANCE)
            if t is not None and {"A", "B"} <= set(t.columns):
                known |= set(t.A.astype(str)) | set(t.B.astype(str))
        unknown = [x for x in a.only_here if x not in known]
        if unknown:
            return (f"--only-here {unknown[0]!r}: no run compares a configuration of that label; labels: "
                    f"{', '.join(sorted(known)) or 'none (no grpo_significance table)'}")
    return None
