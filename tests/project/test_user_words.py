"""What users read says what the project does and why, never how it was built.

README, docs, notebooks, profiles (``configs/``), the docstrings of ``sdrlib`` and the names of the tests are read
by users; none of them may carry words of the project's own making: issue numbers, planners,
lent machines or GPUs, leases, waves or rounds of work, working sessions. A changelog (a file named
``CHANGELOG*`` / ``HISTORY*``) is where such history belongs and is not scanned. A hit is reported as
``path:line: 'words'``; rewrite the sentence as what the project does (the measurement, the rule, the command).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: words of how the project was built (case-insensitive). "session" and "round" alone are ordinary words (a
#: JupyterLab session, rounded values); only their build senses are listed.
BUILD_WORDS = re.compile(
    r"\bissues? #?[0-9]+|\bplanners?\b|\bthe planners'|\blent\b|\blend(?:s|ing)? (?:a |the )?(?:machine|GPU)|"
    r"\bleases?\b|\bwaves? of (?:work|changes)|\b(?:this|that|the next|the last|an earlier|earlier) wave\b|"
    r"\brounds? of (?:work|changes)|\b(?:an earlier|earlier|a later|another|a previous) round\b|"
    r"\bthe issue's\b|"
    r"\b(?:working|this|that|two|three|earlier|next|previous|later|several|one) sessions?\b|"
    r"\bno GPU was\b|\bhelpers? (?:session|clone)\b", re.I)

CHANGELOG = re.compile(r"^(CHANGELOG|CHANGES|HISTORY)", re.I)


def _text_files() -> list[Path]:
    files = [ROOT / "README.md"]
    files += sorted((ROOT / "docs").rglob("*.md"))
    files += sorted((ROOT / "notebooks").glob("*.py"))
    files += sorted((ROOT / "configs").rglob("*.yaml"))
    return [f for f in files if f.is_file() and not CHANGELOG.match(f.name)]


def _docstrings(path: Path) -> list[tuple[int, str]]:
    """``[(first line, text), ...]`` of a module's, its classes' and its functions' docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                out.append((node.body[0].lineno, doc))
    return out


def build_word_hits() -> list[str]:
    """Every hit, as ``path:line: 'words'`` (line of the text file, or of the docstring's start)."""
    hits = []
    for f in _text_files():
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            for m in BUILD_WORDS.finditer(line):
                hits.append(f"{f.relative_to(ROOT)}:{i}: {m.group(0)!r}")
    for f in sorted((ROOT / "sdrlib").rglob("*.py")):
        for start, doc in _docstrings(f):
            for k, line in enumerate(doc.splitlines()):
                for m in BUILD_WORDS.finditer(line):
                    hits.append(f"{f.relative_to(ROOT)}:{start + k}: {m.group(0)!r}")
    for f in sorted((ROOT / "tests").rglob("*.py")):
        names = [f.stem] + [n.name for n in ast.walk(ast.parse(f.read_text(encoding="utf-8")))
                            if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name.startswith(("test", "Test"))]
        for n in names:
            words = n.replace("_", " ")
            for m in BUILD_WORDS.finditer(words):
                hits.append(f"{f.relative_to(ROOT)}: test name {n}: {m.group(0)!r}")
    return hits


@pytest.mark.parametrize("text", [
    "as issue 50 asked", "the planners' call", "on a lent machine", "in one short lease", "no GPU was lent",
    "measured over two sessions", "an earlier round found", "this wave of changes", "in a working session",
    "A later round taught", "twice the issue's budget",
])
def test_the_pattern_catches_build_words(text):
    assert BUILD_WORDS.search(text) is not None


@pytest.mark.parametrize("text", [
    "start a JupyterLab session pinned", "values rounded to 0.1", "a round trip", "the lead time", "round-off",
    "a GPU session of the paper profile", "issues a warning", "candidates judged this round",
    "judged in every later round",
])
def test_the_pattern_leaves_ordinary_words(text):
    assert BUILD_WORDS.search(text) is None


def test_users_read_no_words_of_how_the_project_was_built():
    hits = build_word_hits()
    assert not hits, ("words of how the project was built, where users read them (say what the project does):\n"
                      + "\n".join(hits))
