"""No notebook's Markdown states a number that a run produces: such numbers are printed by code from the run.

A Markdown cell is written once; the outputs beside it change with every run (another profile, another machine,
another commit). A result typed into Markdown ("the most common Findings set covers 0.1 % of reports", "R_Cham
scores 0.251", "3 of 8 configurations") drifts from the output next to it at the next run. So every number a run
produces is printed by a code cell (a generated sentence, a table, ``display(Markdown(f"..."))``), and Markdown
either words it without a number ("the SFT column", "higher mean, not tested") or points to the output.

This test scans every Markdown cell of ``notebooks/NN_*.py`` for **numeric claims** (:func:`numeric_claims`):

- a decimal number (``0.251``, ``-3.5``) or a percentage (``0.1 %``, ``50%``);
- an integer of two or more digits (``768``, ``2,000``): a one-digit integer is a formula constant, a label code,
  an ordinal or a small setting almost everywhere (``(1 - a.b) / 2``, ``-1`` uncertain, ``K = 5``) and is not
  scanned, a known blind spot;
- a count ``<k> of <n>`` (``3 of 8``), whatever its digits.

Not claims: a number inside a name (``CXB-14``, ``sinkhorn_0.1``, ``Qwen3-VL-2B``, a commit hash), a reference to
an item (``sec. 3.2``, ``Tab. 4``, ``Figs. 3-5``, ``Tables 1-6 and 3 / 23``, ``notebooks 02, 05 and 06``, ``eq. 12``,
a citation year after ``et al.``) and a heading's section number (``## 10.``).

Each claim must be a constant listed in :data:`ALLOWED` with what it is: a paper value with its citation, a
profile setting, the project's rule (its level 0.05, 95 % intervals, 80 % power), a definition ("1.0 would mean
...") or a literal of the code cell it describes. Where the constant lives in code or a profile, its entry reads it
(``value``) or names the file that holds it (``source``), and :func:`test_every_allowed_constant_is_what_it_says`
checks that the Markdown still says what the code does. An entry no Markdown uses any more fails too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))

# --------------------------------------------------------------------------------------------------- the rule
_ITEM = r"(?:\d+[a-z]?(?:\.\d+)*|[A-H](?:\.\d+)*)"
#: a reference to a paper or repository item, with the list or range of items it names
_REFERENCE = re.compile(
    r"(?:\b(?:secs?|apps?|eqs?|Figs?|Tabs?|Alg)\.\s*|\b(?:[Ss]ections?|[Tt]ables?|[Ff]igures?|[Aa]lgorithm|"
    r"[Nn]otebooks?|[Aa]ppendix|[Ee]quations?|[Cc]ells?|issues?)\s+)"
    rf"{_ITEM}(?:\s*(?:,|-|–|/|\band\b|\bor\b)\s*{_ITEM})*|\bet al\.\s+\d{{4}}")
#: a hyphenated name that starts with a letter (``CXB-14``, ``micro-F1-14``, ``Qwen3-VL-2B``, ``all-mpnet-base-v2``)
_NAME = re.compile(r"\b[A-Za-z][\w.]*(?:-[\w.]*\w)+")
_HEADING_NUMBER = re.compile(r"^(#+\s*)\d+[a-z]?(?=\.|\s·)", re.M)
_COUNT = re.compile(r"(?<![\w.\-])\d[\d,]* of \d[\d,]*(?![\w\-])")
_NUMBER = re.compile(r"(?<![\w.+/`'])(?<![A-Za-z]-)(?:-\s?)?\d+(?:,\d{3})*(?:\.\d+)?(?:\s?%)?(?![\w/]|-[A-Za-z]|\.\d)|"
                     r"(?<=`)(?:-\s?)?\d+(?:,\d{3})*(?:\.\d+)?(?:\s?%)?(?=`)")


def _is_claim(token: str) -> bool:
    """A decimal, a percentage or an integer of two or more digits (module doc)."""
    digits = token.lstrip("-").strip()
    return "%" in digits or "." in digits or len(digits.replace(",", "")) >= 2


def _blank(m: re.Match) -> str:
    return " " * len(m.group())


def claim_spans(text: str) -> list[tuple[int, str]]:
    """``(offset, claim)`` for each numeric claim of one Markdown text, in order (module doc); the offsets index
    ``text`` itself (what is not a claim is blanked, never cut out)."""
    text = _HEADING_NUMBER.sub(lambda m: m.group(1) + " " * (len(m.group()) - len(m.group(1))), text)
    for pattern in (_REFERENCE, _NAME):
        text = pattern.sub(_blank, text)
    found = [(m.start(), m.group()) for m in _COUNT.finditer(text)]
    text = _COUNT.sub(_blank, text)
    found += [(m.start(), m.group()) for m in _NUMBER.finditer(text) if _is_claim(m.group())]
    return sorted(found)


def numeric_claims(text: str) -> list[str]:
    """The numeric claims of one Markdown text, as written (module doc).

    Example: ``numeric_claims("Chamfer (sec. 3.2) covers 0.1 % of reports in 3 of 8 runs (CXB-14)")`` ->
    ``["0.1 %", "3 of 8"]``."""
    return [claim for _, claim in claim_spans(text)]


def _norm(token: str) -> str:
    """One spelling per claim: ``95%`` and ``95 %`` are the same claim."""
    return re.sub(r"\s+", " ", token.replace("%", " %")).replace("  ", " ").strip()


def markdown_claims(paths: list[Path]) -> list[tuple[str, int, str, str]]:
    """``(notebook, cell, claim, context)`` for every numeric claim in the Markdown cells of ``paths`` (percent
    scripts or notebooks, read by jupytext); ``notebook`` is the two-digit prefix of the file name."""
    out = []
    for path in paths:
        for i, cell in enumerate(jupytext.read(path).cells):
            if cell.cell_type != "markdown":
                continue
            for at, claim in claim_spans(cell.source):
                context = cell.source[max(0, at - 60): at + len(claim) + 40].replace("\n", " ")
                out.append((path.name[:2], i, _norm(claim), context))
    return out


# --------------------------------------------------------------------------------------------------- the allow-list
def _cpu():
    from sdrlib.config import load_profile

    return load_profile("cpu")


def _code_of(nb: str) -> str:
    """The code cells of notebook ``nb`` (two-digit prefix), joined."""
    path = next(p for p in NOTEBOOKS if p.name.startswith(nb))
    return "\n".join(c.source for c in jupytext.read(path).cells if c.cell_type == "code")


@dataclass(frozen=True)
class Allowed:
    """A number that may stand in Markdown: ``claim`` as :func:`_norm` writes it, the notebooks (two-digit
    prefixes, ``"*"`` any) where it means ``what``; ``value``: reads the number from the code or a profile (it must
    equal the claim's; several values: all must); ``source``: ``(file, text)``, a file of the repository that must
    hold ``text``; ``in_code``: the number is a literal of the notebook's own code cells (written as ``in_code``)."""

    claim: str
    notebooks: str
    what: str
    value: Callable[[], float | tuple[float, ...]] | None = None
    source: tuple[str, str] | None = None
    in_code: str = ""

    def covers(self, notebook: str, claim: str) -> bool:
        return claim == self.claim and (self.notebooks == "*" or notebook in self.notebooks.split(","))


def _alpha() -> float:
    from sdrlib.metrics.verdict import ALPHA

    return ALPHA


def _interval_pct() -> float:
    import inspect

    from sdrlib.metrics.significance import paired_bootstrap

    return 100 * inspect.signature(paired_bootstrap).parameters["ci"].default


def _power_pct() -> float:
    from sdrlib.metrics.verdict import POWER

    return 100 * POWER


def _n_chexpert() -> int:
    from sdrlib.vocabulary import CHEXPERT_14

    return len(CHEXPERT_14)


def _n_pathologies() -> int:
    from sdrlib.vocabulary import PATHOLOGIES

    return len(PATHOLOGIES)


def _n_paper_settings() -> int:
    from sdrlib.distances import PAPER_SETTINGS

    return len(PAPER_SETTINGS)


def _n_battery_cases() -> int:
    from sdrlib.experiments.battery import CASES

    return len(CASES)


def _paper_eps() -> float:
    from sdrlib.distances import PAPER_SETTINGS

    assert "sinkhorn_0.01" in {spec.name for spec in PAPER_SETTINGS}
    return 0.01


def _palette_line_pct() -> float:
    import inspect

    from sdrlib.experiments.figures import figure_conclusions

    return 100 * inspect.signature(figure_conclusions).parameters["threshold"].default


def _paper_bank() -> int:
    from sdrlib.config import load_profile

    return load_profile("paper").embedding.bank_size


#: every number a notebook's Markdown may state, with what it is (class doc); anything else is printed by code
ALLOWED: tuple[Allowed, ...] = (
    # the project's rule (sdrlib.metrics.verdict) and its intervals
    Allowed("0.05", "02,03,04,05,06", "the rule's level alpha (Holm-corrected p below it)", value=_alpha),
    Allowed("95 %", "*", "the level of every bootstrap interval", value=_interval_pct),
    Allowed("80 %", "04", "the power at which the detectable difference is sized", value=_power_pct),
    # definitions and scale anchors (what a value would mean, not what a run measured)
    Allowed("0.5", "00", "AUROC of a probe with no signal (chance)"),
    Allowed("1.0", "00,01,05", "the top of a share or score's scale, in a definition (\"1.0 would mean ...\")"),
    Allowed("15.5", "01", "an example of a decimal the sentence splitter keeps inside its sentence"),
    # vocabulary and code constants
    Allowed("14", "00,01,02,05", "the CheXpert observations", value=_n_chexpert),
    Allowed("12", "00,03", "the pathologies the strata and the SFT samples' labels count (CheXpert-14 less No "
            "Finding and Support Devices)", value=_n_pathologies),
    Allowed("15", "02", "the paper's distance settings (app. A)", value=_n_paper_settings),
    Allowed("23", "02", "the real-language battery's report pairs", value=_n_battery_cases),
    Allowed("2,000", "00", "the IU-Xray reports behind the language reference",
            source=("sdrlib/data/stats.py", "2,000 IU-Xray reports")),
    Allowed("768", "01,02", "all-mpnet-base-v2's embedding dimension (the paper's encoder)",
            source=("docs/glossary.md", "all-mpnet-base-v2 (768-d)")),
    Allowed("1000", "02", "POT's iteration cap (its default numItermax), named in the code comment",
            source=("notebooks/02_distances.py", "POT's defaults (1000 iterations")),
    Allowed("0.001", "02", "the floor above which the identical-floor table keeps a setting", in_code="1e-3"),
    Allowed("0.05", "02", "eps of the unregistered Sinkhorn the cell builds as an example", in_code="0.05"),
    Allowed("0.01", "02", "the paper's smallest Sinkhorn eps (app. A)", value=_paper_eps),
    Allowed("0.01", "06", "the rounding of the wall-clock table (seconds and ratios)", in_code="wall.round(2)"),
    Allowed("50 %", "07", "the palette share above which the conclusion calls a figure mostly Okabe-Ito",
            value=_palette_line_pct),
    Allowed("5000", "02", "the paper's bank size N (app. C.4), the paper profile's", value=_paper_bank),
    Allowed("400", "01", "bank sentences drawn in Fig. 1's panel (c)", in_code="400"),
    Allowed("300", "01", "bank Findings sentences sampled for the nearest-neighbour panel", in_code="300"),
    Allowed("80", "04", "characters of each sample report shown", in_code="80"),
    # profile settings (cpu profile, read from configs/)
    Allowed("4,000", "01", "grpo.max_chars", value=lambda: _cpu().grpo.max_chars),
    Allowed("0.3", "04", "G-CARL's format and checklist weights (grpo.gcarl)",
            value=lambda: (_cpu().grpo.gcarl.lambda_fmt, _cpu().grpo.gcarl.lambda_check)),
    Allowed("0.4", "04", "G-CARL's claim weight (grpo.gcarl.lambda_fact)", value=lambda: _cpu().grpo.gcarl.lambda_fact),
    Allowed("0.5", "06", "pruning.min_template_share and the paper's pruning fraction p (pruning.p, sec. 5.1)",
            value=lambda: (_cpu().pruning.min_template_share, _cpu().pruning.p)),
)


def _allowed(notebook: str, claim: str) -> Allowed | None:
    return next((a for a in ALLOWED if a.covers(notebook, claim)), None)


# --------------------------------------------------------------------------------------------------- the tests
def test_markdown_states_no_number_a_run_produces():
    claims = markdown_claims(NOTEBOOKS)
    assert NOTEBOOKS and claims, "no notebooks, or the scan finds nothing at all (the rule is broken)"
    bad = [f"{nb} Markdown cell {i}: {claim!r} in '...{ctx}...'" for nb, i, claim, ctx in claims
           if _allowed(nb, claim) is None]
    assert not bad, ("numbers in notebook Markdown that are not constants of tests/notebooks/test_markdown_numbers."
                     "ALLOWED: print a run's number from a code cell (or word it without a number), or list a "
                     "constant there with what it is:\n" + "\n".join(bad))


def test_every_allowed_constant_is_what_it_says():
    claims = markdown_claims(NOTEBOOKS)
    for a in ALLOWED:
        number = float(a.claim.replace(",", "").replace("%", ""))
        if a.value is not None:
            got = a.value()
            got = got if isinstance(got, tuple) else (got,)
            assert all(abs(float(v) - number) < 1e-12 for v in got), f"{a.claim} ({a.what}): the code says {got}"
        if a.source is not None:
            assert a.source[1] in (ROOT / a.source[0]).read_text(encoding="utf-8"), (a.claim, a.source)
        if a.in_code:
            notebooks = [nb for nb, _, c, _ in claims if a.covers(nb, c)]
            assert notebooks and all(a.in_code in _code_of(nb) for nb in notebooks), (a.claim, a.in_code)
    used = {a for nb, _, c, _ in claims for a in ALLOWED if a.covers(nb, c)}
    stale = [f"{a.claim} ({a.notebooks})" for a in ALLOWED if a not in used]
    assert not stale, f"ALLOWED entries no Markdown uses any more: {stale}"


@pytest.mark.parametrize("text, claims", [
    ("the most common Findings set covers 0.1 % of reports here", ["0.1 %"]),
    ("SFT scores 0.251 in 03 and 0.222 in 04", ["0.251", "03", "0.222", "04"]),
    ("a step's share can read 4.5 or -3.5", ["4.5", "-3.5"]),
    ("3 of 8 configurations lower it; 58 min in all; dimension 768; 12,514 studies", ["3 of 8", "58", "768",
                                                                                        "12,514"]),
    ("a figure fully in the palette reads about 0.8 to 1; the 50% line", ["0.8", "50%"]),
    ("the value `0.050` in the table", ["0.050"]),
    ("detectable at this size: 0.023-0.171, 48-53 % fewer tokens", ["0.023", "0.171", "48", "53 %"]),
])
def test_the_rule_catches_a_number_a_run_writes(text, claims):
    assert numeric_claims(text) == claims
    assert all(text[at:at + len(c)] == c for at, c in claim_spans(text))  # offsets point into the text


@pytest.mark.parametrize("text", [
    "CXB-14, micro-F1-14 and RG-F1 on Qwen3-VL-2B with all-mpnet-base-v2, `sinkhorn_0.1`, R_Cham_rec1 and `chamfer_recall_1`",
    "paper sec. 3.1-3.3, app. C.4, eq. 12, Tab. 4 / 29, Figs. 3-5, Fig. 1, 2a, 2b, 3-5, Tables 1-6 and 3 / 23",
    "notebooks 02, 05 and 06; sections 2 and 5; Table 23; Tables 25-28; Algorithm 1; Liu et al. 2025",
    "## 10. Does bank selection pick normal reports?",
    "# 04 · GRPO with set-distance rewards",
    "the cosine cost `(1 - a.b) / 2`, labels 1, 0, -1, K = 5, the first 4 steps, 2-D, commit `ef27b0d`",
])
def test_the_rule_leaves_names_references_and_small_constants_alone(text):
    assert numeric_claims(text) == []


def test_the_allow_list_is_per_notebook():
    """``0.05`` is the rule's level in 03 but is no constant of 00: there it would be a result (the table's 0.050)."""
    assert _allowed("03", "0.05") is not None and _allowed("00", "0.05") is None
    assert _allowed("07", "95 %") is not None and _allowed("04", "4.5") is None
