"""The check of a README's marked block: every number it quotes must be a value of the result files its paragraph
names (``python -m sdrlib.experiments.claims --check``).

:func:`marked_block` cuts the block out of a README, :func:`numbers_in` lists the numbers a sentence quotes,
:func:`sweeping_words` the quantifiers a reader must check by eye, :func:`check_block` matches the numbers against
the files (exact mode) and :func:`check_tolerant` does it for the machine-independent paragraphs only (another
kernel path or other library versions). Scope: reading and comparing; writing the block is :mod:`._section`'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from sdrlib import table_names
from sdrlib.experiments import conclusions as _conclusions
from sdrlib.results import ResultTableError

BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
_NUM = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_FILE = re.compile(r"`(results/)?([\w.\-*]+?)(\.csv|\.md)?`")
_CLAIM_NUM = re.compile(r"(?<![\w.\-])[-+\u2212]?(\d[\d,]*(?:\.\d+)?)(?![\w\-]|\.\d)")


def marked_block(text: str) -> str:
    """The text between :data:`BEGIN` and :data:`END` (ValueError when the markers are missing or out of order)."""
    i, j = text.find(BEGIN), text.find(END)
    if i < 0 or j < i:
        raise ValueError(f"no {BEGIN} ... {END} block")
    return text[i + len(BEGIN):j]


def numbers_in(text: str, *, min_int: int = 10) -> list[str]:
    """The numbers a sentence quotes, as written: decimals always, integers from ``min_int`` on (smaller ones
    are counts such as K = 5), nor either side of a count "k of n" ("2 of 3 seeds", "0 of 31 checked orderings":
    rows counted, no value of a table); inside backticks and HTML comments nothing, nor digits that are
    part of a name (``CheXpert-14``, ``R_Cham``, ``best-of-5``), nor an interval's level ("95 % CI") or the
    significance level and the floor ("p < 0.05", "p < 0.001").
    Thousands separators are dropped.
    Example: ``numbers_in("SFT 0.223, 1,006 words in 3 of `grpo_x1` CheXpert-14")`` -> ``["0.223", "1006"]``."""
    text = re.sub(r"`[^`]*`|<!--.*?-->|\b\d+ ?% (?:CI|confidence)|p < 0\.0(?:5|01)\b|(?<![\w.])\d+ of \d[\d,]*(?![\w.])",
                  " ", text, flags=re.S)
    out = []
    for m in _CLAIM_NUM.finditer(text):
        s = m.group(1).replace(",", "")
        if "." in s or int(s) >= min_int:
            out.append(s)
    return out


_SWEEP = re.compile(r"\b(every|all|most|always|never)\b(?!\s+(?:of\s+)?\d)(\s+\w+)?", re.I)


def sweeping_words(text: str) -> list[str]:
    """Quantifiers a table must back ("every configuration", "most", "all metrics"), not followed by a count:
    the check cannot verify them, so ``--check`` lists them for a reader. ``all 8`` / ``none of 8`` pass.
    Example: ``sweeping_words("every configuration moves; all 8 policies")`` -> ``["every configuration"]``."""
    text = re.sub(r"`[^`]*`|<!--.*?-->", " ", text, flags=re.S)
    return [(m.group(1) + (m.group(2) or "")).strip() for m in _SWEEP.finditer(text)]


def _pool(paths: Iterable[Path]) -> list[float]:
    vals = []
    for p in paths:
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise ResultTableError(f"{p}: not UTF-8 text (byte {e.start}); a result table is a UTF-8 CSV") from None
        vals += [float(x) for x in _NUM.findall(text)]
    return vals


def _found(num: str, pool: np.ndarray) -> bool:
    d = len(num.split(".")[1]) if "." in num else 0
    x = float(num)
    tol = 0.5 * 10 ** -d + 1e-9
    for scale in (1.0, 100.0):  # a share written as a percentage
        if np.any(np.abs(np.abs(pool * scale) - x) <= tol):
            return True
    return False


#: tables whose values include clock measurements of the run that wrote them (seconds, speed-ups, shares of time):
#: no two runs share them, so a time quoted from one is not compared (a note says so), its other numbers are
MEASURED = (table_names.RUN_SUMMARY, table_names.PRUNING_WALLCLOCK, table_names.GRPO_REWARD_COST,
            table_names.ENGINE_SPEED, table_names.EMBEDDING_CACHE)
#: a quoted number that is a measurement: followed by a time unit or a speed-up sign
_MEASURE = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s?(?:ms|s|min|h|x|×)(?![\w])")


def _measured(num: str, chunk: str, files: Sequence[Path]) -> bool:
    """``num`` is a clock measurement quoted from a :data:`MEASURED` table: not comparable across runs."""
    if not any(p.name.rsplit(".", 1)[0] in MEASURED for p in files):
        return False
    return any(m.group(1).replace(",", "") == num for m in _MEASURE.finditer(chunk))


def check_block(text: str, results_dir: str | Path, *, min_int: int = 10,
                notes: list[str] | None = None) -> list[str]:
    """Problems with a marked block (empty list = every number checked out).

    The block is split into paragraphs (blank lines) and bullets; each names its files in backticks
    (``results/<name>.csv``, ``<name>.md`` or ``<name>``; a paragraph naming none uses the files of the one
    before, so a table inherits its caption's). Every number of :func:`numbers_in` must be, up to its written
    rounding, a value in one of those files (their CSV and Markdown text, read as numbers; a share may be written
    as a percentage; signs are ignored, so a difference may be written "+0.019" or "by 0.019"). A file named but
    absent is a problem too. A clock measurement (a number with a time unit or a speed-up sign, quoted from a
    :data:`MEASURED` table) that the run does not hold is not compared: it goes to ``notes`` when given, since no two
    runs share their times. The conclusions paragraph (:data:`sdrlib.experiments.conclusions.TITLE`) is left out
    when the run holds no conclusions table: its numbers are derived (detectable effects, the power) and its
    verdicts are checked by recomputing them (:func:`sdrlib.experiments.conclusions.check_verdicts`).
    """
    results_dir = Path(results_dir)
    if not (results_dir / f"{_conclusions.TABLE}.csv").is_file():
        text = "".join(f"**{t}**{x}" if t else x for t, x in _conclusions.split_groups(text)
                       if t != _conclusions.TITLE)
    problems: list[str] = []
    chunks = [c for c in re.split(r"\n\s*\n|\n(?=\s*- )", text) if c.strip()]
    files: list[Path] = []
    for chunk in chunks:
        named = _FILE.findall(chunk)
        names = sorted({p.name.rsplit(".", 2)[0] for _, n, _ in named for p in results_dir.glob(n + ".csv")}
                       | {p.stem for _, n, _ in named for p in results_dir.glob(n + ".md")})
        for pre, n, ext in named:  # written as a result file (results/..., .csv, .md, a glob) but not there
            if (pre or ext or "*" in n) and not any(results_dir.glob(n + (ext or ".csv"))):
                problems.append(f"names {pre}{n}{ext}, which is not in {results_dir}")
        if names:
            files = [p for n in names for p in (results_dir / f"{n}.csv", results_dir / f"{n}.md") if p.is_file()]
        nums = numbers_in(chunk, min_int=min_int)
        if nums and not files:
            problems.append(f"numbers {nums[:5]} with no result file named: {chunk.strip()[:80]!r}")
            continue
        if not nums:
            continue
        pool = np.array(_pool(files))
        for num in nums:
            if _found(num, pool):
                continue
            if _measured(num, chunk, files):
                if notes is not None:
                    notes.append(f"{num} not compared: a clock measurement of the README's run "
                                 f"({', '.join(p.name for p in files)}): {chunk.strip()[:80]!r}")
                continue
            problems.append(f"{num} is in none of {[p.name for p in files]}: {chunk.strip()[:100]!r}")
    return problems


def check_tolerant(block: str, results_dir: str | Path, *, min_int: int = 10,
                   also: Sequence[str | Path] = ()) -> tuple[list[str], list[str]]:
    """``(problems, notes)`` of a README block against a run on another kernel path or other library versions:
    the paragraphs that do not depend on the machine (``conclusions.MACHINE_INDEPENDENT``: the corpus statistics)
    number by number (:func:`check_block`) and the conclusions by ``conclusions.check_verdicts``. Nothing else is
    compared: other numbers move with the kernel path. ``also``: other runs the conclusions must hold in too
    (``python -m sdrlib.experiments.claims --also``)."""
    problems: list[str] = []
    for title, text in _conclusions.split_groups(block):
        if title in _conclusions.MACHINE_INDEPENDENT:
            problems += check_block(text, results_dir, min_int=min_int)
    more, notes = _conclusions.check_verdicts(block, results_dir, also=also)
    return problems + more, notes
