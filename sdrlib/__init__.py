"""sdrlib: set-distance rewards (SDR) for chest X-ray report generation.

The package holds every piece of logic the numbered notebooks call, in layers (lowest first; each
imports only the ones before it; docs/extending.md, "Architecture", checked by import-linter):

- :mod:`sdrlib.errors`, :mod:`sdrlib.io`, :mod:`sdrlib.utils`, :mod:`sdrlib.paths`  leaf utilities
- :mod:`sdrlib.table_names`  the name of every result table, defined once
- :mod:`sdrlib.vocabulary`  CheXpert-14 names and label algebra
- :mod:`sdrlib.reports`     section split, sentence segmentation, the one think/answer template parser
- :mod:`sdrlib.results`     save_table / save_fig, provenance, the figure index
- :mod:`sdrlib.clinical`, :mod:`sdrlib.data`  the offline labeler and per-sentence presence; datasets
- :mod:`sdrlib.embedding`   encoders, the on-disk sentence cache, the embedder, the report bank
- :mod:`sdrlib.distances`   the set-to-set distances of the paper's appendix A (a set may carry presence)
- :mod:`sdrlib.metrics`     NLG and clinical metrics, strata, paired significance
- :mod:`sdrlib.rewards`     reward names parsed once into specs; one module per method; TRL adapters
- :mod:`sdrlib.config`      typed profiles (smoke, cpu, paper), method settings nested per method
- :mod:`sdrlib.models`, :mod:`sdrlib.generation`, :mod:`sdrlib.training`  policies, sampling, SFT and GRPO
- :mod:`sdrlib.selection`, :mod:`sdrlib.pruning`  best-of-K against the bank; Algorithm 1
- :mod:`sdrlib.experiments` what notebooks share: candidates on disk, post-training runs, tables
- :mod:`sdrlib.plots`       figures only
- :mod:`sdrlib.runner`, :mod:`sdrlib.serve`, :mod:`sdrlib.apigen`  papermill runner, policy server, API candidates

Submodules are imported lazily: ``import sdrlib`` is cheap and pulls in neither
torch nor POT.
"""

__version__ = "0.1.0"

import warnings as _warnings

# tqdm.auto without ipywidgets (not a dependency: widget bars do not survive papermill's saved notebooks)
# says "IProgress not found" once and falls back to the plain-text bar, which reads the same in JupyterLab
# and in papermill logs; the notice itself is noise in every executed notebook.
_warnings.filterwarnings("ignore", message="IProgress not found")
