#!/usr/bin/env python
"""Hash what a run produced, to show that a behaviour-preserving change kept every value.

Hashes, under an output root (``./run_all.sh --out ROOT``): every results table (``results/*.csv``,
``results/*.md``; not ``*.meta.json``, which records commit, times and versions) and every final model
file (``runs/**/final/*``: weights, tokenizer, config). A table whose only differences are run times
would never match twice, so each CSV also gets a second hash with its timing columns dropped (headers
with a timing word, :func:`is_timing`: seconds, speeds, the reward's share of time, the commit and start time; a value
column such as ``normal_share`` is kept), and Markdown tables are
compared through their CSV twins (``headline.md``, assembled from the other tables, through them).

Usage::

    python scripts/hash_outputs.py ROOT > before.json              # write the hashes
    python scripts/hash_outputs.py ROOT --compare before.json      # compare another run with them

``--compare`` prints one line per file that differs, is missing or is new, and exits 1 when any
value-bearing file differs (a table's timing-free hash or a model file), 0 otherwise, 2 with one line naming a file
it cannot read (a table that is not UTF-8, a `--compare` file that is not its JSON object, no results/ folder).

Left out: figures (PNG bytes depend on the matplotlib build and fonts) and executed notebooks (they
carry times and paths); run keys (``run_key.json``) change by design when the code moves.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sdrlib.errors import SDRError  # noqa: E402
from sdrlib.io import one_line_errors  # noqa: E402

#: the words of a column header (split at every character that is not a letter or digit, lower-cased) that mark it
#: as a run time or speed: "seconds", "first s", "step_s_per_step", "ref_us", "speedup", "sweep_ref_h",
#: "gflops_matmul", "first/warm", "wall-clock ratio ...", "git_commit", "executed". A whole word only: "share"
#: is no timing word ("normal_share", "share_broken" hold values), nor is "at" or "time" inside another word.
TIMING_WORDS = frozenset({"seconds", "s", "ms", "us", "h", "time", "speed", "speedup", "wall", "clock", "gflops",
                          "warm", "commit", "executed"})
#: timing columns no word marks: the share of training time spent in the reward (``sdrlib.training.grpo``)
TIMING_NAMES = frozenset({"reward_share"})
#: tables that are timing traces as a whole (their row count is the run's length): the cores busy every 2 s of the
#: run (``run_all.sh``, :mod:`sdrlib.cpuload`); their ``values`` hash is that of no values
TIMING_TABLES = frozenset({"run_cpu.csv"})


def is_timing(header: str) -> bool:
    """Whether a results column holds a run time, a speed or a run stamp (dropped from the ``values`` hash).

    Exact by words: a header is timing when one of its words is in :data:`TIMING_WORDS`, it is one of
    :data:`TIMING_NAMES`, or it ends in ``_at`` (a start stamp). Examples: ``is_timing("step_seconds")`` -> True,
    ``is_timing("normal_share")`` -> False, ``is_timing("share of pairs stopped at max_iter")`` -> False.
    """
    h = header.strip().lower()
    return bool(set(re.split(r"[^a-z0-9]+", h)) & TIMING_WORDS) or h in TIMING_NAMES or h.endswith("_at")


#: assembled from the tables compared one by one (headline.md prints the reward-time table too)
ASSEMBLED = ("headline.md",)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Unreadable(SDRError):
    """A file this script reads is not what it should be; the message names it (exit 2, one line)."""


def csv_without_timing(data: bytes, name: str = "the table") -> bytes:
    """The CSV ``data`` with every timing column (:func:`is_timing`) dropped; a table that is
    not UTF-8 text raises :class:`Unreadable` naming ``name``.

    Example: ``b"name,seconds\\nchamfer,1.2\\n"`` -> ``b"name\\r\\nchamfer\\r\\n"``.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Unreadable(f"{name}: not UTF-8 text (byte {e.start}); a result table is a UTF-8 CSV") from None
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as e:
        raise Unreadable(f"{name}: not a CSV table ({e})") from None
    if not rows:
        return data
    keep = [i for i, h in enumerate(rows[0]) if not is_timing(h)]
    out = io.StringIO()
    w = csv.writer(out)
    for r in rows:
        w.writerow([r[i] for i in keep if i < len(r)])
    return out.getvalue().encode("utf-8")


def hash_outputs(root: Path) -> dict[str, dict[str, str]]:
    """``{relative path: {"sha256": ..., ["values": ...]}}`` for the tables and final model files under ``root``."""
    root = Path(root)
    if not (root / "results").is_dir():
        raise Unreadable(f"{root} has no results/ folder (pass the root a run wrote, e.g. --out)")
    files = sorted(p for p in (root / "results").iterdir()
                   if p.is_file() and p.suffix in (".csv", ".md") and not p.name.endswith(".meta.json"))
    files += sorted(p for p in (root / "runs").glob("**/final/*") if p.is_file()) if (root / "runs").is_dir() else []
    out: dict[str, dict[str, str]] = {}
    for p in files:
        data = p.read_bytes()
        entry = {"sha256": _sha(data)}
        if p.suffix == ".csv":
            entry["values"] = _sha(b"" if p.name in TIMING_TABLES else csv_without_timing(data, str(p)))
        out[p.relative_to(root).as_posix()] = entry
    return out


def compare(now: dict[str, dict[str, str]], before: dict[str, dict[str, str]]) -> tuple[list[str], bool]:
    """Lines describing every difference, and whether any value-bearing file differs."""
    lines, bad = [], False
    for k in sorted(set(now) | set(before)):
        a, b = before.get(k), now.get(k)
        if a is None or b is None:
            lines.append(f"{'new' if a is None else 'missing'}: {k}")
            bad = True
            continue
        if a["sha256"] == b["sha256"]:
            continue
        if k.endswith(".md") and (k[:-3] + ".csv" in now or k.rsplit("/", 1)[-1] in ASSEMBLED):
            # a Markdown table is judged through its CSV twin (it may print a timing column too)
            continue
        if "values" in a and a["values"] == b.get("values"):
            lines.append(f"timing only: {k}")
            continue
        lines.append(f"DIFFERS: {k}")
        bad = True
    return lines, bad


def read_hashes(path: Path) -> dict[str, dict[str, str]]:
    """Hashes written earlier by this script (``--compare``): a JSON object of path -> {"sha256": ...,
    ["values": ...]}; anything else raises :class:`Unreadable` naming the file and what is wrong."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise Unreadable(f"{path}: cannot read ({e.strerror or type(e).__name__})") from None
    except UnicodeDecodeError as e:
        raise Unreadable(f"{path}: not UTF-8 text (byte {e.start}); expected this script's JSON output") from None
    except json.JSONDecodeError as e:
        raise Unreadable(f"{path}: not JSON (line {e.lineno}: {e.msg}); expected this script's output") from None
    if not isinstance(data, dict):
        raise Unreadable(f"{path}: a JSON {type(data).__name__}, not the object of path -> hashes this script writes")
    for k, v in data.items():
        if not (isinstance(v, dict) and isinstance(v.get("sha256"), str)):
            raise Unreadable(f"{path}: entry {k!r} is not {{\"sha256\": ...}} (not this script's output)")
    return data


@one_line_errors("hash_outputs")  # Unreadable (an SDRError): one line naming the file, exit 2
def main(argv: list[str] | None = None) -> int:
    """Exit 0 (hashes printed, or every value identical), 1 (values differ), 2 (a file it cannot read)."""
    return _main(argv)


def _main(argv: list[str] | None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path, help="output root of a run (the --out of run_all.sh)")
    ap.add_argument("--compare", type=Path, metavar="JSON", help="hashes written earlier by this script")
    a = ap.parse_args(argv)
    now = hash_outputs(a.root)
    if a.compare is None:
        json.dump(now, sys.stdout, indent=1, sort_keys=True)
        print()
        return 0
    lines, bad = compare(now, read_hashes(a.compare))
    for line in lines:
        print(line)
    n_model = sum(1 for k in now if "/final/" in k)
    print(f"hash_outputs: {len(now)} files ({n_model} model files); "
          f"{'values DIFFER' if bad else 'every value identical'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
