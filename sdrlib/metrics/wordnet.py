"""Real WordNet 3.0 for METEOR, read from a local folder (Debian's ``wordnet-base``).

:func:`load_wordnet` returns an nltk ``WordNetCorpusReader`` or ``None``; it
never downloads. Where it looks, in order: the ``path`` argument,
``$SDR_WORDNET_DIR``, ``/usr/share/wordnet`` (``apt-get install
--no-install-recommends wordnet-base``), then nltk's own data folders
(``nltk.download('wordnet')`` layout ``corpora/wordnet``).

Debian's folder is the Princeton ``dict/`` folder without ``lexnames`` and
``index.sense``; the reader here supplies ``lexnames`` (WordNet 3.0's fixed list
of 45 lexicographer files, see ``man 5 lexnames``) and skips nltk's
cross-version sense mapping (not needed: this *is* 3.0). ``index.sense`` is only
used by sense-key lookups, which METEOR never makes.

nltk >= 3.9 refuses to read outside its data paths, so the folder is appended
to ``nltk.data.path`` (the documented way to authorise a data folder).

Example::

    >>> wn = load_wordnet()
    >>> "large" in {l.name() for s in wn.synsets("big") for l in s.lemmas()}
    True
"""

from __future__ import annotations

import io
import os
import warnings
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

__all__ = ["load_wordnet", "find_wordnet_dir", "LEXNAMES_30"]

#: WordNet 3.0 lexicographer files, in file-number order (``man 5 lexnames``).
LEXNAMES_30 = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute "
    "noun.body noun.cognition noun.communication noun.event noun.feeling noun.food noun.group "
    "noun.location noun.motive noun.object noun.person noun.phenomenon noun.plant "
    "noun.possession noun.process noun.quantity noun.relation noun.shape noun.state "
    "noun.substance noun.time verb.body verb.change verb.cognition verb.communication "
    "verb.competition verb.consumption verb.contact verb.creation verb.emotion verb.motion "
    "verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
).split()
_POS_NUMBER = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
_REQUIRED = ("data.noun", "index.noun", "data.verb", "index.verb", "data.adj", "index.adj",
             "data.adv", "index.adv", "noun.exc", "verb.exc", "adj.exc", "adv.exc")


def _is_wordnet_dir(p: Path) -> bool:
    return p.is_dir() and all((p / f).exists() for f in _REQUIRED)


def find_wordnet_dir(path: str | os.PathLike | None = None) -> Path | None:
    """The first local WordNet ``dict`` folder found (see module docstring), or ``None``."""
    candidates: list[Path] = []
    if path not in (None, "", "auto"):
        candidates.append(Path(path).expanduser())
    if os.environ.get("SDR_WORDNET_DIR"):
        candidates.append(Path(os.environ["SDR_WORDNET_DIR"]).expanduser())
    candidates.append(Path("/usr/share/wordnet"))
    try:
        import nltk

        candidates += [Path(str(p)) / "corpora" / "wordnet" for p in nltk.data.path]
    except ImportError:
        pass
    for c in candidates:
        if _is_wordnet_dir(c):
            return c.resolve()
    return None


def _reader_class():
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class LocalWordNetReader(WordNetCorpusReader):
        """WordNetCorpusReader that tolerates a folder without ``lexnames`` (Debian)."""

        def open(self, fileid):  # noqa: A003 - nltk's name
            if fileid == "lexnames" and not (Path(str(self.root.path)) / "lexnames").exists():
                lines = (f"{i:02d}\t{n}\t{_POS_NUMBER[n.split('.')[0]]}\n" for i, n in enumerate(LEXNAMES_30))
                return io.StringIO("".join(lines))
            return super().open(fileid)

        def map_wn(self, version="wordnet"):
            return None  # this is WordNet 3.0 itself: no cross-version mapping

    return LocalWordNetReader


@lru_cache(maxsize=4)
def _load(dir_str: str):
    import nltk

    if dir_str not in [str(p) for p in nltk.data.path]:
        nltk.data.path.append(dir_str)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available" (no OMW)
        reader = _reader_class()(dir_str, None)
    version = reader.get_version()
    if version != "3.0":
        warnings.warn(f"WordNet at {dir_str} reports version {version!r}, expected '3.0'", stacklevel=3)
    return reader


def load_wordnet(path: str | os.PathLike | None = None) -> WordNetCorpusReader | None:
    """Return a WordNet reader for a local folder, or ``None`` when none is installed."""
    if path not in (None, "", "auto"):
        p = Path(path).expanduser()
        if not _is_wordnet_dir(p):
            raise FileNotFoundError(f"no WordNet dict folder at {p} (it needs {', '.join(_REQUIRED)})")
        return _load(str(p.resolve()))
    d = find_wordnet_dir()
    return None if d is None else _load(str(d))
