"""sdrlib: set-distance rewards (SDR) for chest X-ray report generation.

The package holds every piece of logic the numbered notebooks call:

- :mod:`sdrlib.reports`    section split, sentence segmentation, the think/answer template
- :mod:`sdrlib.embedding`  the frozen sentence encoder, the on-disk sentence cache, the report bank
- :mod:`sdrlib.distances`  the set-to-set distances of the paper's appendix A
- :mod:`sdrlib.data`       the synthetic CXR dataset and loaders for the real ones
- :mod:`sdrlib.metrics`    NLG and clinical metrics, strata, paired significance
- :mod:`sdrlib.rewards`, :mod:`sdrlib.models`, :mod:`sdrlib.training`  GRPO after SFT
- :mod:`sdrlib.config`     typed profiles (smoke, cpu, paper)
- :mod:`sdrlib.plots`      one ``save_fig`` / ``save_table`` pair

Submodules are imported lazily: ``import sdrlib`` is cheap and pulls in neither
torch nor POT.
"""

__version__ = "0.1.0"

import warnings as _warnings

# tqdm.auto without ipywidgets (not a dependency: widget bars do not survive papermill's saved notebooks)
# says "IProgress not found" once and falls back to the plain-text bar, which reads the same in JupyterLab
# and in papermill logs; the notice itself is noise in every executed notebook.
_warnings.filterwarnings("ignore", message="IProgress not found")
