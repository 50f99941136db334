"""Score the offline labeler on its hand-written sentence sets, old revision versus working tree.

Reads ``tests/fixtures/labeler_sentences.csv`` (columns ``set``, ``category``, ``text``, ``labels``,
``issue``) and prints, for the ``dev`` and ``heldout`` parts, for all rows, the rows of one issue and
the earlier rows (``issue`` empty):

- ``exact``: share of rows whose labels (No Finding derived by the CheXpert convention) all match;
- ``macroF1``: mean of the positive, negative and uncertain F1 over all 14 observations
  (``evaluate_labeler``'s ``micro (all)`` row), classes without gold or predicted support left out.

The old labeler is ``sdrlib/clinical/labeler.py`` at ``--old`` (a git revision, read with ``git show``,
so run it inside the repository), or the package ``sdrlib/clinical/labeler/`` at revisions where it is one
(``sdrlib`` of that revision extracted with ``git archive``); the new one is the working tree's. ``--time`` also measures both
labelers' speed (CPU time, every row labelled ``--repeat`` times, cache bypassed, median of seven
interleaved rounds).

Example::

    python scripts/labeler_scores.py --old 6cc3dd8 --issue 36 --time

Exit status 2 with one line when the revision or the sentence file cannot be read.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sdrlib.clinical import labeler as new_labeler  # noqa: E402
from sdrlib.vocabulary import apply_no_finding, parse_label_string  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "labeler_sentences.csv"


def _fail(msg: str) -> None:
    print(f"labeler_scores: {msg}", file=sys.stderr)
    raise SystemExit(2)


def _load_old_package(rev: str):
    """``sdrlib.clinical.labeler`` as a package at ``rev``: that revision's ``sdrlib`` imported from a temporary
    folder, the working tree's ``sdrlib`` modules set aside meanwhile and put back after."""
    tmp = tempfile.mkdtemp()
    try:
        tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "sdrlib"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=tar, check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        _fail(f"cannot read the labeler at {rev!r}: {getattr(exc, 'stderr', b'').decode() or exc}".strip())
    saved = {k: sys.modules.pop(k) for k in list(sys.modules) if k == "sdrlib" or k.startswith("sdrlib.")}
    sys.path.insert(0, tmp)
    try:
        return importlib.import_module("sdrlib.clinical.labeler")
    finally:
        sys.path.remove(tmp)
        for k in [k for k in sys.modules if k == "sdrlib" or k.startswith("sdrlib.")]:
            del sys.modules[k]
        sys.modules.update(saved)


def load_old(rev: str):
    """The labeler module as it was at git revision ``rev``."""
    try:
        src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:sdrlib/clinical/labeler.py"],
                             check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return _load_old_package(rev)
    path = Path(tempfile.mkdtemp()) / "labeler_old.py"
    path.write_text(src, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("labeler_old", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["labeler_old"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def read_rows(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        _fail(f"cannot read {path}: {exc}")
    if not rows or not {"set", "text", "labels"} <= set(rows[0]):
        _fail(f"{path}: expected columns set, text, labels (issue optional)")
    return rows


def score(mod, rows: list[dict[str, str]]) -> tuple[float, float, int]:
    """(exact, macro F1, n) of one labeler module on ``rows``."""
    texts = [r["text"] for r in rows]
    gold = [parse_label_string(r["labels"]) for r in rows]
    preds = [mod.label_report(t) for t in texts]
    exact = sum(p == apply_no_finding(g) for p, g in zip(preds, gold)) / len(rows)
    micro = new_labeler.evaluate_labeler(texts, gold, predictions=preds).loc["micro (all)"]
    f1s = [micro[f"f1_{c}"] for c in ("pos", "neg", "unc") if not math.isnan(micro[f"f1_{c}"])]
    return exact, sum(f1s) / len(f1s), len(rows)


def speed(mods: list, texts: list[str], repeat: int, rounds: int = 7) -> list[float]:
    """Milliseconds of CPU time per row for each module, median over ``rounds`` interleaved rounds.

    CPU time (``time.process_time``), not wall time, and old and new interleaved, so that other load on a
    shared machine moves both alike; ``lru_cache`` bypassed.
    """
    raws = [m._label_cached.__wrapped__ for m in mods]
    times: list[list[float]] = [[] for _ in mods]
    for _ in range(rounds):
        for raw, acc in zip(raws, times):
            t0 = time.process_time()
            for _ in range(repeat):
                for t in texts:
                    raw(t)
            acc.append(time.process_time() - t0)
    return [1000 * statistics.median(acc) / (repeat * len(texts)) for acc in times]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", default="6cc3dd8", help="git revision of the old labeler (default 6cc3dd8)")
    ap.add_argument("--issue", default="36", help="value of the 'issue' column to report separately")
    ap.add_argument("--fixture", type=Path, default=FIXTURE)
    ap.add_argument("--time", action="store_true", help="also time both labelers")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)

    rows = read_rows(args.fixture)
    old = load_old(args.old)
    print(f"| set | rows | n | exact old | exact new | macro F1 old | macro F1 new |")
    print("|---|---|---|---|---|---|---|")
    for which in ("dev", "heldout"):
        part = [r for r in rows if r["set"] == which]
        for name, sel in ((f"issue {args.issue}", [r for r in part if r.get("issue") == args.issue]),
                          ("earlier", [r for r in part if not r.get("issue")]), ("all", part)):
            if not sel:
                continue
            eo, fo, n = score(old, sel)
            en, fn, _ = score(new_labeler, sel)
            print(f"| {which} | {name} | {n} | {eo:.3f} | {en:.3f} | {fo:.3f} | {fn:.3f} |")
    if args.time:
        texts = [r["text"] for r in rows]
        to, tn = speed([old, new_labeler], texts, args.repeat)
        print(f"\nspeed, CPU ms per row ({len(texts)} rows x {args.repeat}, median of 7 interleaved rounds): "
              f"old {to:.3f}, new {tn:.3f} ({100 * (tn / to - 1):+.1f}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
