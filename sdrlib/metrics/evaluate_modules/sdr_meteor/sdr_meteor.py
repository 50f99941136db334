"""METEOR (nltk) per pair, as an offline `evaluate` module.

Differences from `evaluate`'s Hub ``meteor`` module, both deliberate:

- tokens come from a regex (lowercased ``\\w+`` runs and single punctuation
  marks) instead of ``nltk.word_tokenize``, which needs the ``punkt`` download;
- the WordNet reader is passed in (``wordnet=``). With ``wordnet=None`` the
  synonym stage is switched off and the result is the *exact + stem* variant;
  the caller must label it so (``sdrlib.metrics`` names it ``meteor_exact_stem``).

nltk applies its stages in order exact -> Porter stem -> WordNet synonym, and
the synonym stage sees the leftover words of *both* sides already replaced by
their Porter stems, so a synonym pair only matches when both words are their
own stems ("chest" ~ "thorax" matches; "large" ~ "big" does not, "large" being
looked up as "larg"). That is nltk's behaviour (and so `evaluate`'s), kept as is.
"""

import re

import datasets
import evaluate
from nltk.translate.meteor_score import meteor_score

_TOKEN = re.compile(r"\w+|[^\w\s]")

_KWARGS = """
Args:
    predictions: list of str; references: list of str.
    wordnet: an nltk WordNetCorpusReader, or None for the exact+stem variant.
    alpha, beta, gamma: METEOR parameters (nltk defaults 0.9, 3.0, 0.5).
Returns:
    meteor: list of float per pair (0-1); variant: "wordnet" or "exact_stem".
Example:
    >>> m.compute(predictions=["the cat"], references=["the cat"], wordnet=None)["variant"]
    'exact_stem'
"""


class _NoSynonyms:
    """Stand-in WordNet with no synsets: turns METEOR into its exact+stem variant."""

    def synsets(self, *args, **kwargs):
        return []


def tokenize(text) -> list[str]:
    """Lowercased word / punctuation tokens. Example: "Heart, big." -> ['heart', ',', 'big', '.']"""
    return _TOKEN.findall(text.lower())


class SdrMeteor(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="METEOR per pair (nltk), WordNet synonyms when a reader is given.",
            citation="Banerjee and Lavie, METEOR, 2005.",
            inputs_description=_KWARGS,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            reference_urls=["https://www.nltk.org/api/nltk.translate.meteor_score.html"],
        )

    def _compute(self, predictions, references, wordnet=None, alpha=0.9, beta=3.0, gamma=0.5):
        wn = wordnet if wordnet is not None else _NoSynonyms()
        scores = []
        for p, r in zip(predictions, references):
            hyp, ref = tokenize(p), tokenize(r)
            if not hyp or not ref:
                scores.append(0.0)
                continue
            scores.append(float(meteor_score([ref], hyp, wordnet=wn, alpha=alpha, beta=beta, gamma=gamma)))
        return {"meteor": scores, "variant": "wordnet" if wordnet is not None else "exact_stem"}
