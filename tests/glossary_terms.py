"""Which names docs/glossary.md defines, and which names the README (with the docs pages it moved its sections
to), the notebooks and a run's tables print.

Used by ``tests/project/test_glossary.py`` (the README and notebooks' Markdown, the names known without a run)
and by ``tests/notebooks/test_notebooks_smoke.py`` (the column headers of every table the smoke run wrote).

**What the glossary defines.** Every row of a Markdown table in docs/glossary.md names its terms in its first cell,
each in **bold** or in `backticks`; text outside those is read as a comma-separated list of plain names.
A name may be a *pattern*: ``<x>`` stands for a number or for another defined name (``<metric> pruning``,
``R_Cham_rec<alpha>_bal<w>``), ``[...]`` for an optional part (``chamfer_recall_<alpha>[_bal<w>]``), ``*`` for any
text (``bad_*``). A term is defined when it equals a name or matches a pattern (:func:`undefined`).

**What counts as a term** (:func:`text_terms`), in the README, the pages of :data:`README_PAGES` and the notebooks'
Markdown cells, outside fenced code blocks and link targets:

1. a backticked span that is one label-like token (letters, digits, ``_ - . % + * < > [ ]``) and is not code:
   not a file name or path (an extension or a ``/``), not a dotted Python or profile name (``sdrlib.x``,
   ``grpo.loss_type``), not a number, version or commit hash, not an environment variable or constant
   (``SDR_PYTHON``), not a name the code defines (:func:`code_names`: an ``sdrlib`` module, function, class,
   constant, dataclass field or parameter, a notebook's parameter or variable, a teaching exercise), not a
   result-table file name (:data:`sdrlib.results.FIGURE_INDEX`), not in :data:`NOT_TERMS`. Backticked spans with
   spaces are commands, formulas or table headers: the headers are checked against the run itself (the smoke test);
2. a word with a run of two or more capital letters (``CXB-14``, ``GRPO``, ``MIMIC-CXR``, ``KL``; a plural such as
   ``NLLs`` read as ``NLL``), unless it is an environment variable or :data:`NOT_TERMS` lists it (general computing
   words such as CPU or JSON, other packages' code);
3. a reward label written in prose, ``R_<name>`` (``R_Cham_rec1_bal2``);
4. the terms of :data:`PHRASES` (``C-noise``, ``Dr. GRPO``, "drift control"), each of which must still occur.

A name that is code in one place and a table header in another is still checked as a header (smoke test).
"""

from __future__ import annotations

import ast
import csv
import functools
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY_PATH = ROOT / "docs" / "glossary.md"

#: the docs pages that hold what the README said before it was cut to a short read; their terms are the README's
README_PAGES = ("install.md", "results.md", "running.md", "speed.md", "extending.md", "real_data.md",
                "reproducibility.md", "gpu.md")

#: terms the rules above miss (phrases, lower-case words with a meaning of their own here); each must occur in the
#: README, a page of README_PAGES or a notebook
PHRASES = ("C-noise", "drift control", "Dr. GRPO", "paired bootstrap", "offline labeler", "kernel path", "stand-in",
           "strata", "oracle", "best-of-K", "pruning", "warm-up")

#: tokens the rules above would collect that are not terms a reader needs defined here, with the reason
NOT_TERMS = {
    # general computing, hardware, file-format and tool words (looked up anywhere, not this project's labels)
    **dict.fromkeys(("AMD", "AuthenticAMD", "API", "AVX-512", "AVX2", "BLAS", "CI", "CPU", "CUDA", "EPYC", "FMA", "GB", "GIL", "GPU",
                     "JSONL", "MFLOP", "FLOP", "GFLOP", "ONNX", "onnx", "onnxruntime", "NVIDIA", "MKL", "NVVM", "PNG", "README", "SHA-256", "SSE4", "XPU", "YAML", "KV",
                     "CSV", "CPython", "IProgress", "Multi-GPU", "OpenBLAS", "OpenMP", "oneDNN", "PyPI",
                     "PyYAML", "SQLite", "OpenAI-compatible", "avx2", "avx512", "cpu", "gpu", "auto",
                     "python3.11", "python3.12", "python3.13", "nvidia-*"), "computing"),
    # names in other packages' code (TRL, transformers, POT, radgraph, NLTK, numba, the kernel), shown as code
    **dict.fromkeys(("GRPOTrainer", "ImagePath", "Qwen3VLForConditionalGeneration", "RepeatSampler", "VLLMClient",
                     "_torch_transform", "_use_triton", "add_fused_lm_head", "build_inputs_with_special_tokens",
                     "emd2", "encode_plus", "log_metric", "omp_set_num_threads", "partial_wasserstein2",
                     "sinkhorn_knopp_unbalanced", "wordnet-base", "sdr",
                     "sdr-distance-pot", "export", "parameters"), "code"),
    # profile names and a dataset's download name: README "Profiles" and "Datasets" say what they are
    **dict.fromkeys(("smoke", "MIMIC-CXR-JPG"), "profile or dataset download"),
}


# --------------------------------------------------------------------------------------------------
# the glossary


def glossary_names(text: str | None = None) -> set[str]:
    """The names the first cells of docs/glossary.md's tables define (module doc)."""
    text = GLOSSARY_PATH.read_text(encoding="utf-8") if text is None else text
    names: set[str] = set()
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("|") or re.match(r"^\|[\s:|-]+\|$", line):
            continue
        if i + 1 < len(lines) and re.match(r"^\|[\s:|-]+\|$", lines[i + 1]):
            continue  # a header row
        cell = _cells(line)[0]
        marked = re.findall(r"\*\*(.+?)\*\*", cell) + re.findall(r"`([^`]+)`", cell)
        names.update(m.strip().strip("`") for m in marked)
        plain = re.sub(r"\*\*.+?\*\*|`[^`]+`", ",", cell)
        names.update(p.strip().strip('"') for p in re.split(r",|;", plain) if p.strip().strip('"'))
    return {n.replace("\\|", "|") for n in names}


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row (``\\|`` inside a cell kept)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _segments(pattern: str) -> list[list]:
    """A pattern as alternatives (one per choice of its optional ``[...]`` parts), each a list of segments:
    ``("lit", text)``, ``("hole", name)``, ``("star", "")``."""
    m = re.search(r"\[([^\[\]]*)\]", pattern)
    if m:
        return (_segments(pattern[:m.start()] + m.group(1) + pattern[m.end():])
                + _segments(pattern[:m.start()] + pattern[m.end():]))
    out, pos = [], 0
    for h in re.finditer(r"<[^<>]+>|\*", pattern):
        if h.start() > pos:
            out.append(("lit", pattern[pos:h.start()]))
        out.append(("star", "") if h.group() == "*" else ("hole", h.group()))
        pos = h.end()
    if pos < len(pattern):
        out.append(("lit", pattern[pos:]))
    return [out]


class Glossary:
    """The defined names and patterns; :meth:`defines` says whether a term is among them."""

    def __init__(self, names: set[str]):
        self.written = set(names)  # a pattern quoted as written (`chamfer_recall_<alpha>`) is defined too
        self.names = {n for n in names if not re.search(r"<[^<>]+>|\*|\[[^\]]*\]", n)}
        self.patterns = [alt for n in names - self.names for alt in _segments(n)
                         if any(k == "lit" for k, _ in alt)]  # a bare <x> would define everything
        self._seen: dict[tuple[str, int], bool] = {}

    def defines(self, term: str, depth: int = 0) -> bool:
        """Whether ``term`` is a name, or matches a pattern (a placeholder: a number or a defined name)."""
        if term in self.names or term in self.written:
            return True
        key = (term, depth)
        if key not in self._seen:
            self._seen[key] = depth < 3 and any(self._match(p, term, depth) for p in self.patterns)
        return self._seen[key]

    def _match(self, segs: list, text: str, depth: int) -> bool:
        if not segs:
            return not text
        kind, val = segs[0]
        if kind == "lit":
            return text.startswith(val) and self._match(segs[1:], text[len(val):], depth)
        for cut in range(len(text), 0 if kind == "hole" else -1, -1):
            piece = text[:cut]
            if kind == "hole" and not (_NUMBER.fullmatch(piece) or self.defines(piece, depth + 1)):
                continue
            if self._match(segs[1:], text[cut:], depth):
                return True
        return False


def glossary() -> Glossary:
    return Glossary(glossary_names())


def undefined(terms, gloss: Glossary | None = None) -> list[str]:
    """The terms (an iterable of names) the glossary does not define, sorted."""
    gloss = gloss or glossary()
    return sorted({t for t in terms if not gloss.defines(t)})


# --------------------------------------------------------------------------------------------------
# the text: README and the notebooks' Markdown cells


def texts() -> dict[str, str]:
    """``{source name: text}``: README.md, the docs pages of :data:`README_PAGES` and the Markdown cells of each
    numbered notebook."""
    out = {"README.md": (ROOT / "README.md").read_text(encoding="utf-8")}
    for name in README_PAGES:
        out[f"docs/{name}"] = (ROOT / "docs" / name).read_text(encoding="utf-8")
    for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(p.read_text(encoding="utf-8"))["cells"]
        out[p.name] = "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return out


@functools.lru_cache(maxsize=1)
def code_names() -> frozenset[str]:
    """Every name the ``sdrlib`` package defines: modules, functions, classes, module constants, class fields
    and function parameters (a backticked one in the text is code, not a printed label)."""
    names: set[str] = set()
    for p in (ROOT / "sdrlib").rglob("*.py"):
        names.update(p.relative_to(ROOT).with_suffix("").parts)
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                names.update(x.arg for x in a.posonlyargs + a.args + a.kwonlyargs)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.Assign):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name) and t.id.isupper())
    for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.py"):  # the notebooks' parameters and variables
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(t.id for t in targets if isinstance(t, ast.Name))
    teaching = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    names.update(re.findall(r"\*\*Exercise `(\w+)`", teaching))  # exercise names, defined there
    import builtins
    return frozenset(names | set(dir(builtins)))


@functools.lru_cache(maxsize=1)
def table_file_names() -> frozenset[str]:
    from sdrlib.results import FIGURE_INDEX

    return frozenset(n for e in FIGURE_INDEX for n in e.name.split("|"))


_TOKEN = re.compile(r"[A-Za-z_][\w.%+*<>\[\]-]*")
_FILE = re.compile(r"\.(py|csv|md|json|jsonl|sh|yaml|yml|txt|gz|tar|png|jpg|ipynb|whl|toml|parquet)$")


def is_code(tok: str) -> bool:
    """Whether a backticked token is code rather than a printed label (module doc, rule 1)."""
    if not _TOKEN.fullmatch(tok) or _FILE.search(tok) or "/" in tok:
        return True
    if re.search(r"\.(?!\d)|(?<!\d)\.", tok):  # sdrlib.x, grpo.loss_type, grpo.<method>.*, approx.
        return True
    if re.fullmatch(r"[0-9a-f]{7,40}", tok):  # a commit
        return True
    if re.fullmatch(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)+", tok):  # an environment variable or a Python constant
        return True
    if tok in code_names() or tok.rstrip("()") in code_names():
        return True
    from fnmatch import fnmatch
    return any(fnmatch(tok, n) for n in table_file_names())


def _prose(text: str) -> str:
    """``text`` without fenced code blocks, link targets, URLs and HTML comments."""
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return re.sub(r"https?://\S+", " ", text)


def text_terms(sources: dict[str, str] | None = None, *, keep_not_terms: bool = False) -> dict[str, set[str]]:
    """``{term: sources it occurs in}`` by the rules of the module doc (:data:`NOT_TERMS` left out unless
    ``keep_not_terms``); ``sources`` defaults to :func:`texts`."""
    sources = texts() if sources is None else sources
    found: dict[str, set[str]] = {}

    def add(term: str, src: str) -> None:
        if keep_not_terms or term not in NOT_TERMS:
            found.setdefault(term, set()).add(src)

    for src, raw in sources.items():
        text = _prose(raw)
        for tok in re.findall(r"`([^`\n]+)`", text):
            if not is_code(tok):
                add(tok, src)
        plain = re.sub(r"`[^`\n]+`", " ", text)
        plain = re.sub(r"(?<!\w)[\w.~-]*/[\w./*<>{}-]*", " ", plain)  # paths
        for word in re.findall(r"[A-Za-z0-9][\w-]*[A-Za-z0-9]|[A-Za-z]", plain):
            if re.fullmatch(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)+", word):
                continue  # an environment variable or a Python constant: code
            if re.fullmatch(r"[A-Z0-9-]*[A-Z]{2}[A-Z0-9-]*s", word):
                word = word[:-1]  # CPUs, NLLs: the plural of an abbreviation
            if re.search(r"[A-Z]{2}", word) or re.fullmatch(r"R_[A-Za-z]\w*", word):
                add(word, src)
        for phrase in PHRASES:
            if re.search(rf"(?<![\w-]){re.escape(phrase)}(?![\w-])", plain):
                add(phrase, src)
    return found


# --------------------------------------------------------------------------------------------------
# a run's tables


def table_headers(results_dir: str | Path) -> dict[str, set[str]]:
    """``{column header: files}`` over every ``*.csv`` (its first row) and every Markdown table in ``*.md``
    (the header row) under ``results_dir``: the names a run's tables print."""
    out: dict[str, set[str]] = {}
    for p in sorted(Path(results_dir).glob("*.csv")):
        with open(p, encoding="utf-8", newline="") as f:
            for h in next(csv.reader(f), []):
                out.setdefault(h.strip(), set()).add(p.name)
    for p in sorted(Path(results_dir).glob("*.md")):
        lines = p.read_text(encoding="utf-8").splitlines()
        for line, nxt in zip(lines, lines[1:]):
            if line.startswith("|") and re.match(r"^\|[\s:|-]+\|$", nxt):
                for h in _cells(line):
                    out.setdefault(h, set()).add(p.name)
    out.pop("", None)  # an unnamed index column
    return out


def report(missing: list[str], where: dict[str, set[str]]) -> str:
    """One line per undefined term, with (up to three of) the files or notebooks it occurs in."""
    return "\n".join(f"  {t!r}: {', '.join(sorted(where.get(t, ()))[:3])}" for t in missing)
