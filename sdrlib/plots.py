"""One place where figures and tables are written: ``save_fig`` and ``save_table``.

Figures go to ``<figures>/<name>.png`` at a fixed resolution; tables go to
``<results>/<name>.csv`` and ``<results>/<name>.md``, plus ``<name>.meta.json``
recording what produced them (profile, seed, encoder, package versions, extra
provenance such as metric backends). CSV and Markdown hold no timestamps, so
the same profile and seed give byte-identical tables; the time lives in the
meta file only.

Nothing here changes global matplotlib state on import; use :func:`style`
as a context manager for the house style.

Example::

    fig, ax = plt.subplots(); ax.plot([0, 1]); save_fig(fig, "demo", cfg)
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from .io import atomic_save, atomic_write_json, atomic_write_text

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure

    from .config import Profile

__all__ = ["DPI", "save_fig", "save_table", "style", "provenance"]

DPI = 120
_VERSIONED = ("sdrlib", "numpy", "torch", "transformers", "trl", "sentence-transformers", "pot",
              "evaluate", "sacrebleu", "rouge-score", "nltk", "bert-score")


def _git_commit() -> str:
    from .config import repo_root

    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo_root(),
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def provenance(cfg: "Profile | None" = None, **extra: Any) -> dict[str, Any]:
    """What produced a result: profile, seed, encoder, git commit, package versions, ``extra``."""
    versions = {}
    for pkg in _VERSIONED:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    rec: dict[str, Any] = {"python": platform.python_version(), "versions": versions,
                           "git_commit": _git_commit()}
    if cfg is not None:
        rec.update(profile=cfg.name, seed=cfg.seed, encoder=cfg.embedding.encoder,
                   data_source=cfg.data.source)
    rec.update(extra)
    return rec


@contextlib.contextmanager
def style() -> Iterator[None]:
    """House plotting style (seaborn ``whitegrid``, small fonts), scoped to a ``with`` block."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    with plt.rc_context({"figure.dpi": DPI, "savefig.dpi": DPI, "font.size": 9,
                         "axes.titlesize": 10, "axes.labelsize": 9}):
        with sns.axes_style("whitegrid"):
            yield


def save_fig(fig: "Figure", name: str, cfg: "Profile") -> Path:
    """Save ``fig`` as ``<figures>/<name>.png`` (fixed dpi, tight box) and return the path."""
    path = cfg.figures_dir / f"{name}.png"
    atomic_save(path, lambda p: fig.savefig(p, dpi=DPI, bbox_inches="tight", format="png",
                                            metadata={"Software": None}))
    return path


def save_table(df: "pd.DataFrame", name: str, cfg: "Profile", *, index: bool = False,
               floatfmt: str = ".4f", **extra: Any) -> tuple[Path, Path]:
    """Write ``df`` to ``<results>/<name>.csv`` and ``.md`` plus a provenance ``.meta.json``.

    ``extra`` keyword arguments (e.g. ``backend="offline-labeler"``) are recorded
    in the meta file and in the Markdown header line.
    """
    results = cfg.results_dir
    csv_path, md_path = results / f"{name}.csv", results / f"{name}.md"
    atomic_write_text(csv_path, df.to_csv(index=index, float_format="%.6g", lineterminator="\n"))
    fields = {"profile": cfg.name, "seed": cfg.seed, "encoder": cfg.embedding.encoder, **extra}
    header = "<!-- " + " ".join(f"{k}={v}" for k, v in fields.items()) + " -->\n\n"
    # object dtype keeps integer columns integer in the Markdown (tabulate sees a float matrix otherwise)
    body = df.astype(object).to_markdown(index=index, floatfmt=floatfmt)
    atomic_write_text(md_path, header + body + "\n")
    meta = provenance(cfg, **extra)
    meta["written_at"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    meta["rows"], meta["columns"] = int(len(df)), [str(c) for c in df.columns]
    atomic_write_json(results / f"{name}.meta.json", meta)
    return csv_path, md_path
