"""Report text: sections, sentences and the ``<think>/<answer>`` template (paper sec. 3.1-3.2).

Three jobs, each a pure function of the text:

- :func:`split_report` finds the Findings and Impression sections of a free-text
  report in the common published layouts (MIMIC-CXR's ``FINDINGS:`` /
  ``IMPRESSION:`` headers in any case, on their own line or inline after a
  sentence end, other headers such as ``INDICATION:`` ending a section; a
  missing section is ``""``). A header word inside a sentence (``No change
  from history: stable``) is text, not a header.
- :func:`split_sentences` segments a section into sentences with pysbd (a
  rule-based segmenter with abbreviation handling), protecting radiology
  abbreviations pysbd does not know (``approx.``), stripping numbered-list
  markers (``1.``) and dropping fragments without a letter (a lone ``.``).
  De-identification placeholders (``XXXX``, ``___``) stay inside their sentence.
  Cost is linear in the text length: pysbd (superlinear) only ever sees pieces
  of at most ``_CHUNK`` characters.
- :func:`build_template` and :func:`parse_template` implement the template
  ``<think> F </think> <answer> I </answer>`` and the paper's validity rule: each of the four tags exactly once, in that order, each
  pair enclosing visible content (:func:`is_blank`: white space, zero-width and
  other invisible characters do not count), and nothing visible outside them
  (R_fmt under either rule is :func:`sdrlib.rewards.format_reward`).
  This is the one template reader of the package: :func:`split_template` (the tag
  scan), ``parse_template(mode="loose")`` (an API answer with text around the
  template), :func:`parse_template_partial` (a candidate still being decoded) and
  :func:`strip_template_tags` serve rewards, pruning, apigen and serve.

What it leaves out: no spelling normalisation, no section classifier for
header-less free text (such text is taken as Findings), no language detection.

Example::

    >>> split_sentences("Heart size normal. 1. No effusion. .")
    ['Heart size normal.', 'No effusion.']
    >>> parse_template(build_template("Lungs clear.", "Normal.")) is not None
    True
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from sdrlib.errors import SDRError

__all__ = [
    "ParsedAnswer", "parse_api_answer",
    "Sections",
    "ReportTextError",
    "as_text",
    "normalize_text",
    "normalize_sentence",
    "normalize_ascii",
    "is_blank",
    "split_report",
    "split_sentences",
    "build_template",
    "parse_template",
    "parse_template_partial",
    "split_template",
    "strip_template_tags",
    "TemplateParts",
    "PartialTemplate",
    "TEMPLATE_TAGS",
    "TEMPLATE_MODES",
]

TEMPLATE_TAGS = ("<think>", "</think>", "<answer>", "</answer>")


class ReportTextError(SDRError, ValueError):
    """The input is not usable report text (wrong type, undecodable bytes)."""


@dataclass(frozen=True)
class Sections:
    """The two sections of a report; a missing section is the empty string."""

    findings: str
    impression: str

    def __getitem__(self, key: str) -> str:  # allows s["findings"]
        if key not in ("findings", "impression"):
            raise KeyError(f"unknown section {key!r}; use 'findings' or 'impression'")
        return getattr(self, key)


# --------------------------------------------------------------------------- input checks
def as_text(value: object, name: str = "text") -> str:
    """Return ``value`` as ``str``; bytes must be valid UTF-8.

    Raises :class:`ReportTextError` naming ``name`` for ``None``, non-text
    objects and undecodable bytes (decode those yourself with the right codec,
    e.g. ``raw.decode("cp1252")``: guessing would silently change the text).
    """
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ReportTextError(
                f"{name} is not valid UTF-8 (byte {e.start}: {bytes(value)[e.start:e.start + 4]!r}); "
                "decode it with its real codec first"
            ) from None
    raise ReportTextError(f"{name} must be str or UTF-8 bytes, got {type(value).__name__}")


def normalize_text(text: str, *, form: str | None = "NFC") -> str:
    """Unicode normal form ``form`` (NFC; ``None``: none), white-space runs collapsed to one space, stripped.

    The package's one text normaliser: report sections, sentences, cache keys. Two documented variants below
    differ on purpose: :func:`normalize_sentence` (the comparison form of a sentence) and :func:`normalize_ascii`
    (the offline labeler's input). ``form=None`` serves keys of text that is already normalised (the labeler's
    per-sentence presence cache, :mod:`sdrlib.clinical.presence`, whose labels do not depend on the form).

    Example: ``normalize_text(" No\\n  effusion. ") -> "No effusion."``
    """
    return " ".join((unicodedata.normalize(form, text) if form else text).split())


_TRAILING_PUNCT = re.compile(r"[\s.;:,!?]+$")


def normalize_sentence(sentence: str) -> str:
    """The form in which two sentences are compared for equality: lower-cased, white space as
    :func:`normalize_text`, trailing punctuation dropped.

    Differs from :func:`normalize_text` on purpose: R_exact (:mod:`sdrlib.rewards.methods.exact`) and G-CARL's
    claim deduplication treat ``"No effusion."`` and ``"no effusion"`` as one sentence. No Unicode form of its own
    (``form=None``): it compares sentences as :func:`split_sentences` returns them, already NFC, and so keeps the
    keys R_exact has always compared.

    Example: ``normalize_sentence("  No  effusion. ") -> "no effusion"``.
    """
    return _TRAILING_PUNCT.sub("", normalize_text(sentence.lower(), form=None))


_HORIZONTAL_SPACE = re.compile(r"[ \t\r\f\v]+")


def normalize_ascii(text: str) -> str:
    """Unicode NFKD folded to ASCII (what does not fold is dropped), runs of horizontal white space collapsed to
    one space; line breaks and the ends are kept.

    Differs from :func:`normalize_text` on purpose; it is the offline labeler's input
    (:mod:`sdrlib.clinical.labeler`): its rules are ASCII regular expressions (NFKD turns "é" into "e" and
    full-width or ligature forms into plain letters), and a line break separates its text units (a
    ``key: value`` line of a structured report), so it must survive.

    Example: ``normalize_ascii("Épanchement\\u00a0 pleural\\nPneumothorax: none") -> "Epanchement pleural\\nPneumothorax: none"``.
    """
    text = unicodedata.normalize("NFKD", text)
    text = text.encode("ascii", "ignore").decode("ascii")
    return _HORIZONTAL_SPACE.sub(" ", text)


# Characters that render as nothing although their category is a letter or symbol
# (Unicode Default_Ignorable / blank glyphs): Hangul fillers, braille blank.
_INVISIBLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def is_blank(text: str) -> bool:
    """True when ``text`` holds nothing visible.

    Visible means a letter, digit, punctuation mark or symbol (Unicode categories
    L*, N*, P*, S*). White space (Zs, Zl, Zp, including NBSP), control and format
    characters (Cc, Cf: zero-width space / joiner, BOM, soft hyphen, RTL marks),
    combining marks without a base (M*), private-use, surrogate and unassigned code
    points, and the blank letters in ``_INVISIBLE_LETTERS`` are not.

    Example: ``is_blank("\\u200b \\ufeff") -> True``; ``is_blank(" . ") -> False``.
    """
    return not any(unicodedata.category(ch)[0] in "LNPS" and ch not in _INVISIBLE_LETTERS for ch in text)


# --------------------------------------------------------------------------- sections
_HEADER_WORDS = (
    r"findings?\s+and\s+impressions?|findings?|impressions?|conclusions?|"
    r"indications?|clinical\s+history|history|clinical\s+information|technique|comparisons?|"
    r"examination|exam|reason\s+for\s+(?:exam(?:ination)?|study)|recommendations?(?:\(s\))?|"
    r"notifications?|wet\s+read|final\s+report|addendum|procedure|type\s+of\s+examination"
)
# A header is one of the words above followed by a colon, in a header position: the
# start of the text, the start of a line, or right after a sentence end (. ! ? ;);
# case-insensitive ("IMPRESSION:", "Impression:"). A header word elsewhere ("No change
# from history: stable", "My impression: clear", "IMPRESSION: Clinical history: cough")
# is text.
_HEADER_RE = re.compile(rf"(?:\A|(?<=[\n.!?;]))\s*({_HEADER_WORDS})\s*:", re.IGNORECASE)


def _kind(header: str) -> str:
    h = " ".join(header.lower().split())
    if h.startswith("finding") and "impression" in h:
        return "both"
    if h.startswith("finding"):
        return "findings"
    if h.startswith("impression") or h.startswith("conclusion"):
        return "impression"
    return "other"


def split_report(text: str | bytes) -> Sections:
    """Split a free-text report into Findings and Impression.

    Parameters
    ----------
    text : str or UTF-8 bytes
        A whole report, e.g. a MIMIC-CXR ``sXXXX.txt`` file.

    Returns
    -------
    Sections
        Whitespace-normalised section texts. Rules: a header is a known section
        name and a colon at the start of the text, of a line, or right after a
        sentence end (``.``, ``!``, ``?``, ``;``); the same word inside a
        sentence is ordinary text (so is a header right after another header's
        colon on the same line: ``COMPARISON: FINDINGS:`` is one header). Text after a
        ``FINDINGS:`` header up to the next header is Findings (all of it);
        ``IMPRESSION:`` or ``CONCLUSION:`` gives Impression; a combined
        ``FINDINGS AND IMPRESSION:`` section goes to Findings (Impression stays
        empty, since nothing in it is marked as the summary); repeated headers
        are joined in order. A report with no header at all is taken as
        Findings; text before the first header (a title such as ``FINAL
        REPORT``) and under other headers (``INDICATION:``) is left out.

    Example: ``split_report("FINDINGS: Clear. IMPRESSION: Normal.")
    -> Sections(findings='Clear.', impression='Normal.')``;
    ``split_report("FINDINGS: No change from history: stable.")
    -> Sections(findings='No change from history: stable.', impression='')``
    """
    text = as_text(text, "report")
    matches = list(_HEADER_RE.finditer(text))
    if not matches:
        return Sections(findings=normalize_text(text), impression="")
    parts: dict[str, list[str]] = {"findings": [], "impression": []}
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        body = normalize_text(text[m.end():end])
        kind = _kind(m.group(1))
        if kind == "both":
            kind = "findings"
        if kind in parts and body:
            parts[kind].append(body)
    return Sections(findings=" ".join(parts["findings"]), impression=" ".join(parts["impression"]))


# --------------------------------------------------------------------------- sentences
# Abbreviations pysbd splits after (measured: "approx. 15 cm" became two sentences).
_PROTECT = re.compile(r"\b(approx|appr|e\.g|i\.e|vs|cf|etc|dr|drs|pt|pts|fig|no(?=\.\s*\d))\.", re.IGNORECASE)
# A protected dot is replaced by a private-use character pysbd does not split at, and
# restored after segmentation. The character is the first private-use code point that
# does not occur in the text (U+E000 for ordinary text), so a private-use character of
# the input is never turned into a dot. A text holding every private-use code point
# (137,468 of them) gets no protection: pysbd may then split after such abbreviations.
_DOT_CANDIDATES = (range(0xE000, 0xF900), range(0xF0000, 0xFFFFE), range(0x100000, 0x10FFFE))
_DOT = "\ue000"  # the placeholder of every text without private-use characters
# Numbered list markers: "1. ", "2) " at the start of the text or after a sentence end.
_LIST_MARKER = re.compile(r"(?:(?<=^)|(?<=[.!?:;]\s)|(?<=[.!?:;]))\s*\(?\d{1,2}[.)](?=\s+\S)\s+")


def _has_letter(text: str) -> bool:
    """A real, visible letter (``str.isalpha``): not a digit, ``¼``, ``²`` or a Hangul filler."""
    return any(ch.isalpha() and ch not in _INVISIBLE_LETTERS for ch in text)


# pysbd's cost per call grows with (sentences x length) of its input (measured: 20 kB of
# short sentences took 4-8 s in one call, 100 kB over a minute), so it only ever sees
# pieces of at most _CHUNK characters; a radiology sentence is far shorter.
_CHUNK = 1000
# Where a long text may be cut, best first: a sentence end after a word of three or more
# lower-case letters followed by a capital (pysbd splits there too, and no abbreviation
# ends like that), any sentence end, any space. Without any of these in a window the text
# is cut hard at _CHUNK characters (only a 750-character run without a space does that).
_CUTS = (
    re.compile(r"(?<=[a-z]{3}[.!?])\s+(?=[A-Z])"),
    re.compile(r"(?<=[.!?;])\s+"),
    re.compile(r"\s+"),
)


@lru_cache(maxsize=1)
def _segmenter():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def _chunks(text: str) -> list[str]:
    """Cut ``text`` into pieces of at most ``_CHUNK`` characters at the best boundary available.

    Each cut lies in the last three quarters of a ``_CHUNK`` window, so every step
    advances by at least ``_CHUNK // 4`` characters and scans one window: linear time.
    The separating white space is dropped (the pieces are segmented separately).
    """
    out, start, n = [], 0, len(text)
    while n - start > _CHUNK:
        lo, hi = start + _CHUNK // 4, start + _CHUNK
        cut = (hi, hi)
        for rx in _CUTS:
            last = None
            for last in rx.finditer(text, lo, hi + 1):  # hi + 1: the capital after a cut at hi
                pass
            if last is not None:
                cut = (last.start(), last.end())
                break
        out.append(text[start:cut[0]])
        start = cut[1]
    out.append(text[start:])
    return out


def _placeholder(text: str) -> str | None:
    """The first private-use character absent from ``text`` (usually U+E000), or None if there is none."""
    present = set(text)
    for block in _DOT_CANDIDATES:
        for cp in block:
            if chr(cp) not in present:
                return chr(cp)
    return None


@lru_cache(maxsize=65536)
def _segment_cached(chunk: str, dot: str | None) -> tuple[str, ...]:
    """pysbd on one protected, normalised piece (at most ``_CHUNK`` characters), cleaned up.

    ``dot`` is the character standing in for protected dots in this piece (None: none).
    """
    sentences: list[str] = []
    for s in _segmenter().segment(chunk):
        s = normalize_text(s.replace(dot, ".") if dot else s)
        s = _LIST_MARKER.sub("", s).strip()
        if _has_letter(s):
            sentences.append(s)
    return tuple(sentences)


def _split_paragraph(text: str) -> list[str]:
    text = _LIST_MARKER.sub(" ", normalize_text(text))
    text = normalize_text(text)
    dot = _placeholder(text)
    if dot is not None:
        text = _PROTECT.sub(lambda m: m.group(1) + dot, text)
    sentences: list[str] = []
    for chunk in _chunks(text):
        sentences.extend(_segment_cached(chunk, dot))
    return sentences


def split_sentences(text: str | bytes) -> list[str]:
    """Segment a section into sentences.

    Parameters
    ----------
    text : str or UTF-8 bytes
        One section (Findings or Impression); may be empty.

    Returns
    -------
    list of str
        Whitespace-normalised sentences in order; ``[]`` for empty or
        letterless input. Numbered-list markers are removed; abbreviations,
        decimals (``1.5 cm``) and placeholders (``XXXX``, ``___``) stay inside.
        Time and memory are linear in ``len(text)``; a run of more than 750
        characters without a sentence end is split at a space (see ``_chunks``).

    Example: ``split_sentences("1. No effusion. 2. Mild edema.") -> ['No effusion.', 'Mild edema.']``
    """
    text = as_text(text, "section text")
    if not text.strip():
        return []
    # Paragraph breaks are hard boundaries; single newlines are line wrapping.
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        if para.strip():
            out.extend(_split_paragraph(para))
    return out


# --------------------------------------------------------------------------- template
def build_template(findings: str, impression: str) -> str:
    """The policy's target text: ``<think> findings </think> <answer> impression </answer>``.

    Raises :class:`ReportTextError` if a section is empty by :func:`is_blank`'s rule
    (white space or invisible characters only, e.g. ``"\u200b"``) or contains a template
    tag: exactly the texts :func:`parse_template` would refuse, so whatever this returns
    parses back to ``Sections(normalize_text(findings), normalize_text(impression))``.
    """
    findings, impression = normalize_text(as_text(findings, "findings")), normalize_text(
        as_text(impression, "impression"))
    for name, body in (("findings", findings), ("impression", impression)):
        if is_blank(body):
            raise ReportTextError(f"{name} is empty ({body!r:.40}: nothing visible); the template needs visible "
                                  "content")
        if any(tag in body for tag in TEMPLATE_TAGS):
            raise ReportTextError(f"{name} contains a template tag: {body[:80]!r}")
    return f"<think> {findings} </think> <answer> {impression} </answer>"


class TemplateParts(NamedTuple):
    """The raw slices of a text whose four template tags each occur once, in order (:func:`split_template`).

    ``findings``: between ``<think>`` and ``</think>``; ``impression``: between ``<answer>`` and
    ``</answer>``; ``outside``: everything else (before ``<think>``, between ``</think>`` and
    ``<answer>``, after ``</answer>``), concatenated. Nothing is normalised.
    """

    findings: str
    impression: str
    outside: str


class PartialTemplate(NamedTuple):
    """A (partial) templated text read leniently (:func:`parse_template_partial`).

    ``findings`` / ``impression``: the section texts so far, tags replaced by spaces (not normalised);
    ``open_section``: ``"findings"`` or ``"impression"`` when the text ends inside that section,
    ``None`` when the last section present is closed.
    """

    findings: str
    impression: str
    open_section: str | None


#: Modes of :func:`parse_template`.
TEMPLATE_MODES = ("strict", "loose")
_LOOSE_TEMPLATE = re.compile(r"<think>(.*?)</think>.*?<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_TAG_RE = re.compile(r"</?(?:think|answer)>")


def split_template(text: str) -> TemplateParts | None:
    """The raw parts of ``text`` when each of the four tags occurs exactly once and in order, else ``None``.

    The tag scan every template reader shares: :func:`parse_template` (strict) adds the
    visibility rules; a caller that must say *why* a text is refused (a blank section vs no
    template) reads the parts itself. Example:
    ``split_template("x <think> F </think> <answer> I </answer>") -> TemplateParts(' F ', ' I ', 'x  ')``.
    """
    if any(text.count(tag) != 1 for tag in TEMPLATE_TAGS):
        return None
    i0, i1, i2, i3 = (text.index(tag) for tag in TEMPLATE_TAGS)
    if not (i0 < i1 < i2 < i3):
        return None
    findings = text[i0 + len("<think>"):i1]
    between = text[i1 + len("</think>"):i2]
    impression = text[i2 + len("<answer>"):i3]
    outside = text[:i0] + between + text[i3 + len("</answer>"):]
    return TemplateParts(findings=findings, impression=impression, outside=outside)


def parse_template(text: str | bytes, *, mode: str = "strict") -> Sections | None:
    """Extract (Findings, Impression) from a templated generation, or ``None`` if invalid.

    ``mode="strict"`` (the default; R_fmt, the metrics, the strict step of
    :func:`sdrlib.reports.parse_api_answer`): valid means the paper's rule (SDR sec. 3.1:
    ``<think>``, ``</think>``, ``<answer>``, ``</answer>`` each occur exactly once, in this order,
    each pair encloses non-empty content) and, stricter than the paper, nothing visible lies
    outside the pairs (so the sections are unambiguous). "Visible" is :func:`is_blank`'s rule, so a section
    holding only white space or invisible characters (zero-width space, BOM, soft
    hyphen, direction marks, NBSP) is empty. Nested, repeated, reordered, unclosed and
    blank cases are all invalid. Non-text input is invalid, not an error.

    ``mode="loose"`` (an API model's answer with other text around the template): the first
    ``<think>...</think>`` followed, after anything, by an ``<answer>...</answer>``, tags in any
    letter case, repeated tags and text outside allowed; both sections must hold something
    visible. Sections are :func:`normalize_text`-ed in both modes.
    """
    if mode not in TEMPLATE_MODES:
        raise ReportTextError(f"parse_template mode must be one of {TEMPLATE_MODES}, got {mode!r}")
    try:
        text = as_text(text, "generation")
    except ReportTextError:
        return None
    if mode == "loose":
        m = _LOOSE_TEMPLATE.search(text)
        if m and not is_blank(m.group(1)) and not is_blank(m.group(2)):
            return Sections(findings=normalize_text(m.group(1)), impression=normalize_text(m.group(2)))
        return None
    parts = split_template(text)
    if parts is None:
        return None
    if not is_blank(parts.outside) or is_blank(parts.findings) or is_blank(parts.impression):
        return None
    return Sections(findings=normalize_text(parts.findings), impression=normalize_text(parts.impression))


def strip_template_tags(text: str) -> str:
    """``text`` with each of the four template tags replaced by one space (nothing else changed).

    Example: ``strip_template_tags("<think>A.</think>") -> " A. "``.
    """
    return _TAG_RE.sub(" ", text)


def parse_template_partial(text: str) -> PartialTemplate:
    """Lenient parse of a (partial, still decoding) templated text: ``(findings, impression, open_section)``.

    For reading a candidate while it is generated (:mod:`sdrlib.pruning`). Findings run from
    ``<think>`` (or the start, when the tag is missing) to ``</think>`` or ``<answer>``;
    Impression from ``<answer>`` to ``</answer>``; ``open_section`` is the section the text ends in
    (None when the last one present is closed). Text after ``</answer>`` is ignored; any tag left
    inside a section is replaced by a space (:func:`strip_template_tags`).
    Example: ``parse_template_partial("<think> Heart normal. Lungs")
    -> PartialTemplate(' Heart normal. Lungs', '', 'findings')``.
    """
    f0 = text.find("<think>")
    f0 = 0 if f0 < 0 else f0 + len("<think>")
    ends = [i for i in (text.find("</think>", f0), text.find("<answer>", f0)) if i >= 0]
    f1 = min(ends) if ends else len(text)
    findings, open_sec = text[f0:f1], ("findings" if not ends else None)
    impression = ""
    a0 = text.find("<answer>", f1)
    if a0 >= 0:
        a0 += len("<answer>")
        a1 = text.find("</answer>", a0)
        impression = text[a0:a1 if a1 >= 0 else len(text)]
        open_sec = "impression" if a1 < 0 else None
    return PartialTemplate(strip_template_tags(findings), strip_template_tags(impression), open_sec)


# --------------------------------------------------------------------------- answers laid out any way (API candidates)
@dataclass(frozen=True)
class ParsedAnswer(Sections):
    """:class:`~sdrlib.reports.Sections` plus how they were found.

    ``form`` is ``"template"`` (the paper's strict rule), ``"template_loose"`` (the tags,
    with text around them), ``"headers"`` (``FINDINGS:`` / ``IMPRESSION:``),
    ``"markdown"`` (``**Findings**``, ``### Impression``), ``"raw"`` (no section found:
    the whole text is Findings) or ``"empty"``. The last two are malformed.
    """

    form: str = "template"

    @property
    def malformed(self) -> bool:
        return self.form in ("raw", "empty")


_FENCE = re.compile(r"^[ \t]*```[^\n]*$", re.MULTILINE)
_SECTION = r"(findings?|impressions?|conclusions?)"
_MD = r"(?:\*\*|__|\*|_)?"
# A Markdown header line: "### Findings", "**Findings:**", "__Impression__:", "*Findings*".
_MD_HEADER = re.compile(rf"^[ \t]*(?:#{{1,6}}[ \t]*{_MD}[ \t]*{_SECTION}[ \t]*{_MD}[ \t]*:?[ \t]*{_MD}"
                        rf"|(?:\*\*|__|\*|_)[ \t]*{_SECTION}[ \t]*:?[ \t]*(?:\*\*|__|\*|_)[ \t]*:?)",
                        re.IGNORECASE | re.MULTILINE)
_BULLET = re.compile(r"^[ \t]*(?:[-*\u2022+])[ \t]+", re.MULTILINE)
# A section header in split_report's sense (start of text / line / after a sentence end).
_HAS_HEADER = re.compile(rf"(?:\A|(?<=[\n.!?;]))\s*{_SECTION}\s*:", re.IGNORECASE)


def parse_api_answer(text: str | bytes) -> ParsedAnswer:
    """Findings and Impression of one API answer, however it is laid out.

    Tried in order: code fences removed; the strict template (:func:`parse_template`);
    the template with other text around it (``parse_template(mode="loose")``: first
    ``<think>...</think>`` followed by an ``<answer>...</answer>``); ``FINDINGS:`` / ``IMPRESSION:`` headers
    (:func:`split_report`); Markdown headers (``**Findings:**``, ``### Impression``)
    rewritten as such headers; list bullets are dropped. Nothing found: ``form="raw"``
    with the whole normalised text as Findings (malformed, kept). ``None`` / non-text
    raises :class:`~sdrlib.reports.ReportTextError`.

    Example: ``parse_api_answer("**Findings:** Clear.\\n**Impression:** Normal.")
    -> ParsedAnswer(findings='Clear.', impression='Normal.', form='markdown')``
    """
    text = as_text(text, "answer")
    body = _FENCE.sub("", text)
    if is_blank(body):
        return ParsedAnswer("", "", "empty")
    strict = parse_template(body)
    if strict is not None:
        return ParsedAnswer(strict.findings, strict.impression, "template")
    loose = parse_template(body, mode="loose")
    if loose is not None:
        return ParsedAnswer(loose.findings, loose.impression, "template_loose")
    form = "headers"
    if _MD_HEADER.search(body):
        form = "markdown"
        body = _MD_HEADER.sub(lambda mm: f"\n{(mm.group(1) or mm.group(2)).upper()}: ", body)
    body = _BULLET.sub("", body).replace("**", "").replace("__", "")
    if _HAS_HEADER.search(body):
        sec = split_report(body)
        if sec.findings or sec.impression:
            return ParsedAnswer(sec.findings, sec.impression, form)
    return ParsedAnswer(normalize_text(text), "", "raw")
