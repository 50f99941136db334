"""Where results are written, and what produced them: tables, figures, provenance, the figure index.

- :func:`save_table` writes ``<results>/<name>.csv`` and ``<results>/<name>.md`` plus
  ``<name>.meta.json`` recording what produced them (profile, seed, encoder, package versions,
  extra provenance such as metric backends). CSV and Markdown hold no timestamps, so the same
  profile and seed give byte-identical tables; the time lives in the meta file only.
- :func:`save_fig` writes ``<figures>/<name>.png`` at a fixed resolution (:data:`DPI`).
- :func:`provenance`, :func:`git_commit` and :func:`library_versions`: the one implementation of
  "which code and which libraries produced this" (tables, run keys, run summaries).
- :func:`read_result_table` reads a table back (None when the run did not write it), recording the files read
  when given a :class:`TableReader`; :func:`table_or_note` says so in a notebook's conclusion.
- :func:`format_mean_sd` and :func:`render_cell_table`: the shown (Markdown) view of a table whose CSV keeps the
  numbers.
- :data:`FIGURE_INDEX`: the paper-item map of every file the notebooks write;
  :func:`figure_index` checks a run's folders against it and :func:`missing_summary` says what
  is missing.

A low layer (``sdrlib.metrics``, ``sdrlib.training``, the notebooks all write through it): it
imports only :mod:`sdrlib.errors`, :mod:`sdrlib.io`, :mod:`sdrlib.numerics`, :mod:`sdrlib.paths` and
:mod:`sdrlib.table_names` (the names of the tables, defined once). ``cfg`` arguments are
profiles (:class:`sdrlib.config.Profile`); only their ``name``, ``seed``, ``embedding.encoder``,
``data.source``, ``results_dir`` and ``figures_dir`` are read.

Example::

    save_table(df, table_names.EMBEDDING_CACHE, cfg, encoder_id=emb.encoder_id)  # results/01_embedding_cache.{csv,md,meta.json}
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from sdrlib import table_names
from sdrlib.errors import SDRError
from sdrlib.io import atomic_save, atomic_write_json, atomic_write_text
from sdrlib.numerics import machine_record
from sdrlib.paths import repo_root

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["DPI", "PlotError", "save_fig", "save_table", "provenance", "git_commit", "library_versions",
           "FigureEntry", "FIGURE_INDEX", "figure_index", "missing_summary", "RECORDED_VERSIONS",
           "ResultTableError", "read_result_table", "TableReader", "format_mean_sd", "SD_SUFFIX",
           "CELL_COLUMNS", "render_cell_table", "table_or_note"]

DPI = 150
RECORDED_VERSIONS = ("sdrlib", "numpy", "torch", "transformers", "trl", "sentence-transformers", "pot",
              "evaluate", "sacrebleu", "rouge-score", "nltk", "bert-score")


class PlotError(SDRError, ValueError):
    """A figure helper got inputs it cannot draw (mismatched lengths, missing columns, a file for a folder).

    Raised by :func:`figure_index` here and by the figure helpers of :mod:`sdrlib.plots` (which re-exports it).
    """


def git_commit(*, mark_dirty: bool = False, timeout: float = 5) -> str:
    """Short commit of the checkout (``git rev-parse --short HEAD``); ``unknown`` without git.

    ``mark_dirty``: append ``+dirty`` when tracked files changed (``git status --porcelain
    --untracked-files=no``), as the run summary records it.
    """
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo_root(),
                              capture_output=True, text=True, timeout=timeout).stdout.strip()
        dirty = ""
        if mark_dirty:
            dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo_root(),
                                   capture_output=True, text=True, timeout=timeout).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head + ("+dirty" if dirty else "")) if head else "unknown"


def library_versions(packages: Iterable[str], *, missing: str | None = None) -> dict[str, str]:
    """Installed version of each distribution in ``packages``, in order.

    A package that is not installed is left out (``missing=None``) or given the value ``missing``
    (e.g. ``"absent"``). Example: ``library_versions(["numpy", "nope"], missing="absent")`` ->
    ``{"numpy": "2.3.1", "nope": "absent"}``.
    """
    versions: dict[str, str] = {}
    for pkg in packages:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            if missing is not None:
                versions[pkg] = missing
    return versions


def provenance(cfg: Any = None, **extra: Any) -> dict[str, Any]:
    """What produced a result: profile, seed, encoder, git commit, package versions, the machine (CPU, kernel path,
    threads: :func:`sdrlib.numerics.machine_record`), ``extra``."""
    versions = library_versions(RECORDED_VERSIONS)
    rec: dict[str, Any] = {"python": platform.python_version(), "versions": versions,
                           "git_commit": git_commit(), "machine": machine_record(cfg)}
    if cfg is not None:
        rec.update(profile=cfg.name, seed=cfg.seed, encoder=cfg.embedding.encoder,
                   data_source=cfg.data.source)
    rec.update(extra)
    return rec


def save_fig(fig: "Figure", name: str, cfg: Any) -> Path:
    """Save ``fig`` as ``<figures>/<name>.png`` (fixed dpi, tight box) and return the path."""
    path = cfg.figures_dir / f"{name}.png"
    atomic_save(path, lambda p: fig.savefig(p, dpi=DPI, bbox_inches="tight", format="png",
                                            metadata={"Software": None}))
    return path


class ResultTableError(SDRError, ValueError):
    """A result file a reader needs is unreadable: not UTF-8 text, empty, not a table, or without a column it
    needs. The message names the file and what is wrong (``python -m sdrlib.experiments.claims`` prints it, exit 2)."""


class TableReader(os.PathLike):
    """A run's results folder that records which result tables were read from it.

    Pass it wherever a results folder goes (it is path-like: ``Path(reader)`` is the folder):
    :func:`read_result_table` appends each file it reads through it to :attr:`read`, in order, so a caller learns
    which files one step read (the README claims name the table that lacks a column). Reading through a plain path
    records nothing. Example: ``reader = TableReader("results")``; ``read_result_table(reader, "06_tokens")``;
    ``reader.read`` -> ``[PosixPath("results/06_tokens.csv")]``.
    """

    def __init__(self, results_dir: str | os.PathLike) -> None:
        self.results_dir = Path(results_dir)
        #: the files read through this reader, in order (a file read twice is listed twice)
        self.read: list[Path] = []

    def __fspath__(self) -> str:
        return os.fspath(self.results_dir)

    def __repr__(self) -> str:
        return f"TableReader({str(self.results_dir)!r})"


def read_result_table(results_dir: str | os.PathLike, name: str) -> "pd.DataFrame | None":
    """``<results_dir>/<name>.csv`` as a DataFrame, or None when the run did not write it (the folder exists, the
    file does not); a ``results_dir`` that is no folder raises :class:`ResultTableError` naming it.

    A file that exists but cannot be read as a CSV table (binary or not UTF-8, empty, malformed) raises
    :class:`ResultTableError` naming it. When ``results_dir`` is a :class:`TableReader`, the file is appended to its
    ``read`` list before it is parsed."""
    import pandas as pd

    p = Path(results_dir) / f"{name}.csv"
    if not p.is_file():
        if not Path(results_dir).is_dir():  # before: "not written by this run" for a folder that is not there
            raise ResultTableError(f"{Path(results_dir)}: no such results folder "
                                   f"({'a file' if Path(results_dir).exists() else 'missing'}); pass the folder a run "
                                   "wrote its tables to (results/ under its output root)")
        return None
    if isinstance(results_dir, TableReader):
        results_dir.read.append(p)
    try:
        return pd.read_csv(p, encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ResultTableError(f"{p}: not UTF-8 text (byte {e.start}); a result table is a UTF-8 CSV") from None
    except pd.errors.EmptyDataError:
        raise ResultTableError(f"{p}: empty (no header row); re-run the notebook that writes it") from None
    except (pd.errors.ParserError, ValueError) as e:
        raise ResultTableError(f"{p}: not a CSV table ({' '.join(str(e).split())[:120]})") from None


#: the suffix of a column holding the sample SD of the column it names (:func:`format_mean_sd`)
SD_SUFFIX = " (sd)"


def format_mean_sd(df: "pd.DataFrame", digits: int = 3) -> "pd.DataFrame":
    """The view of a table whose column ``X`` (a mean) has a partner ``"X (sd)"``: ``X`` shown as
    ``"mean ±sd"`` (``digits`` decimals; ``n/a`` for a NaN mean) and the SD column dropped; other columns as they
    are. For showing only: the CSV keeps both numbers. Example: columns ``["config", "KL", "KL (sd)"]`` ->
    ``["config", "KL"]`` with ``"0.012 ±0.003"``."""
    out = df.copy()
    for col in list(df.columns):
        sd = f"{col}{SD_SUFFIX}"
        if sd in df.columns:
            out[col] = [("n/a" if m != m else f"{m:.{digits}f} ±{(0.0 if s != s else s):.{digits}f}")
                        for m, s in zip(df[col].astype(float), df[sd].astype(float))]
            out = out.drop(columns=sd)
    return out


#: the columns of a table stored one row per cell (:func:`sdrlib.experiments.posttrain.reward_cells`)
CELL_COLUMNS = ["Model", "Metric", "config", "mean", "sd", "n", "best", "note"]


def render_cell_table(cells: "pd.DataFrame", configs: "Sequence[str] | None" = None, digits: int = 3
                      ) -> "pd.DataFrame":
    """A table stored one row per cell (:data:`CELL_COLUMNS`) in the paper's layout, for showing: rows
    ``Model`` x ``Metric``, columns the configurations (``configs``, default the cells' own, in order), cells
    ``"mean ±sd"`` (``digits`` decimals) with ``**`` around the best of each row, the cell's ``note`` where it has
    no numbers (``not computed: <why>``, ``n/a``)."""
    import pandas as pd

    cols = list(configs) if configs is not None else list(dict.fromkeys(cells.config))
    out = []
    for (model, metric), g in cells.groupby(["Model", "Metric"], sort=False):
        row = {"Model": model, "Metric": metric}
        for r in g.itertuples():
            if isinstance(r.note, str) and r.note:
                row[r.config] = r.note
            else:
                s = f"{r.mean:.{digits}f} ±{r.sd:.{digits}f}"
                row[r.config] = f"**{s}**" if bool(r.best) else s
        out.append(row)
    return pd.DataFrame(out, columns=["Model", "Metric", *cols])


def table_or_note(results_dir: str | Path, name: str, out: list, why: str = "") -> "pd.DataFrame | None":
    """:func:`read_result_table`, for a notebook's conclusion: when the run did not write ``name``, the line
    ``"<name>: not written by this run[ (<why>)]."`` is appended to ``out`` (the sentences being written) and None
    returned. Example: ``t = table_or_note(results_dir, "00_pixel_probe", out)``; ``if t is not None: ...``."""
    t = read_result_table(results_dir, name)
    if t is None:
        out.append(f"{name}: not written by this run" + (f" ({why})" if why else "") + ".")
    return t


def save_table(df: "pd.DataFrame", name: str, cfg: Any, *, index: bool = False,
               floatfmt: str = ".4f", shown: "pd.DataFrame | None" = None, **extra: Any) -> tuple[Path, Path]:
    """Write ``df`` to ``<results>/<name>.csv`` and ``.md`` plus a provenance ``.meta.json``.

    The CSV holds numbers as numbers (a mean, its SD and n in columns of their own, never ``"0.556 ±0.002"``);
    ``shown``, when given, is the formatted view of the same table (e.g. :func:`format_mean_sd`,
    :func:`sdrlib.experiments.posttrain.render_reward_table`) written to the Markdown instead of ``df``.
    ``extra`` keyword arguments (e.g. ``backend="offline-labeler"``) are recorded
    in the meta file and in the Markdown header line, and so are, for a profile (``cfg.metric_backends()``), the
    clinical backend and the BERTScore backbone its metric settings give on this machine, each marked ``(substitute
    for ...)`` where it is not the paper's (``clinical_backend=...``, ``bertscore_backbone=...``).
    """
    results = cfg.results_dir
    csv_path, md_path = results / f"{name}.csv", results / f"{name}.md"
    atomic_write_text(csv_path, df.to_csv(index=index, float_format="%.6g", lineterminator="\n"))
    backends = cfg.metric_backends() if callable(getattr(cfg, "metric_backends", None)) else {}
    extra = {**backends, **extra}  # which clinical backend and BERTScore backbone this profile's metrics used here
    fields = {"profile": cfg.name, "seed": cfg.seed, "encoder": cfg.embedding.encoder, **extra}
    header = "<!-- " + " ".join(f"{k}={_header_value(v)}" for k, v in fields.items()) + " -->\n\n"
    # object dtype keeps integer columns integer in the Markdown (tabulate sees a float matrix otherwise)
    body = (df if shown is None else shown).astype(object).to_markdown(index=index, floatfmt=floatfmt)
    atomic_write_text(md_path, header + body + "\n")
    meta = provenance(cfg, **extra)
    meta["written_at"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    meta["rows"], meta["columns"] = int(len(df)), [str(c) for c in df.columns]
    atomic_write_json(results / f"{name}.meta.json", meta)
    return csv_path, md_path


def _header_value(v: Any) -> str:
    """A value of the Markdown header line: quoted when it holds a space (``"offline-labeler (substitute ...)"``)."""
    s = str(v)
    return f'"{s}"' if " " in s else s


# --------------------------------------------------------------------------------------------------
# The figure index: which notebook writes which file, and what in the paper it reproduces.


@dataclass(frozen=True)
class FigureEntry:
    """One file (or a glob of files) a notebook writes.

    ``name``: the file name without extension, ``*`` allowed, ``|`` between alternatives (the entry is
    present when any of them is: a metric that replaces another when its backend is missing); a ``figure`` lives at
    ``<figures>/<name>.png``, a ``table`` at ``<results>/<name>.md`` (with ``.csv`` and ``.meta.json``
    beside it). ``notebook``: the notebook that writes it; ``paper``: the paper figure / table it
    reproduces ("" for our own additions); ``what``: one line for a reader; ``headline``: shown by
    notebook 07.
    """

    name: str
    kind: str
    notebook: str
    paper: str
    what: str
    headline: bool = False
    #: one caption per ``|`` alternative of ``name`` when they show different things (else ``what`` for all)
    alt_what: tuple[str, ...] = ()


_F, _T = "figure", "table"
#: notebook 04's per-group tables beside the headline one (``grpo_<group>_<section>``), named one by one: a
#: wildcard ``grpo_*_findings`` would also claim grpo_positive_findings
_METRIC_GROUPS = ("bleu", "rouge", "lexical", "clinical")


def _alternatives(names: Iterable[str]) -> str:
    """A :class:`FigureEntry` name of several files, any of which makes the entry present (``a|b``)."""
    return "|".join(names)


#: Every file the notebooks write, in the paper's order first (notebook 07 and ``results/figure_index.md``)
FIGURE_INDEX: tuple[FigureEntry, ...] = (
    FigureEntry("01_report_embedding", _F, "01_embedding", "Fig. 1",
                "one report of the profile: its sentences and their embedding set", True),
    FigureEntry("02_set_distance_example", _F, "02_distances", "Fig. 2a",
                "two reports' sentence sets in 2-D with the links Chamfer / Hausdorff / OT read", True),
    FigureEntry(table_names.SET_DISTANCE_EXAMPLE, _T, "02_distances", "Fig. 2a",
                "the values of Fig. 2a: every link's cosine cost and the three distances"),
    FigureEntry("05_selection_space", _F, "05_selection", "Fig. 2b",
                "best-of-K selection: candidates, bank reports and the chosen one in 2-D", True),
    FigureEntry("05_method_metric_heatmap", _F, "05_selection", "Fig. 3",
                "% improvement over random per (distance, aggregation) x metric, mean over policies", True),
    FigureEntry("05_policy_heatmap_BS_F1", _F, "05_selection", "Fig. 4",
                "% improvement over random, BERTScore F1, avg aggregation, distance x policy", True),
    FigureEntry("05_policy_heatmap_RG_E|05_policy_heatmap_CXB_14|05_policy_heatmap_clin_F1", _F, "05_selection",
                "Fig. 5", "% improvement over random, clinical metric, avg aggregation, distance x policy", True,
                alt_what=("% improvement over random, RadGraph entity F1 (RG-E: the per-sample RG-F1 of Tab. 25, "
                          "which Fig. 5 accompanies), avg aggregation, distance x policy",
                          "% improvement over random, CXB-14 (CheXpert-14 macro F1 from the offline labeler, or "
                          "CheXbert when installed; stands in for Fig. 5's RadGraph entity F1, not computed in this "
                          "run), avg aggregation, distance x policy",
                          "% improvement over random, clin-F1 (sample) (per-report label F1; stands in for Fig. 5's "
                          "RadGraph entity F1 and CXB-14, not computed in this run), avg aggregation, "
                          "distance x policy")),
    FigureEntry(table_names.selection_headline("findings"), _T, "05_selection", "Table 3",
                "best selection per policy and metric vs random, oracle, first, MBR (Findings)", True),
    FigureEntry(table_names.selection_headline("impression"), _T, "05_selection", "Table 23",
                "the same for Impression", True),
    FigureEntry(table_names.selection_improvement("all"), _T, "05_selection", "Table 25",
                "% improvement over random per method, mean ± std over policies, all studies"),
    FigureEntry(table_names.selection_improvement("no_finding"), _T, "05_selection", "Table 26", "the same, no-finding stratum"),
    FigureEntry(table_names.selection_improvement("single"), _T, "05_selection", "Table 27", "the same, single-finding stratum"),
    FigureEntry(table_names.selection_improvement("multi"), _T, "05_selection", "Table 28", "the same, multi-finding stratum"),
    FigureEntry(table_names.SELECTION_METHODS, _T, "05_selection", "Tables 3, 23-28 (source)",
                "every policy x method x metric x stratum value the selection tables are cut from"),
    FigureEntry(table_names.SELECTION_SIGNIFICANCE, _T, "05_selection", "",
                "paired bootstrap: best method vs random and vs MBR"),
    FigureEntry(table_names.grpo_group("headline", "findings"), _T, "04_grpo", "Tables 1-2 (Findings)",
                "GRPO post-training: SFT, R_fmt, R_exact, R_Cham, R_Haus, mean ± std over seeds", True),
    FigureEntry(table_names.grpo_group("headline", "impression"), _T, "04_grpo", "Tables 5-6 (Impression)",
                "the same for Impression", True),
    FigureEntry(_alternatives(table_names.grpo_group(g, "findings") for g in _METRIC_GROUPS), _T, "04_grpo", "Tables 7-10, 15-18 (Findings, per metric group)",
                "GRPO results per metric group (BLEU, ROUGE, lexical, clinical)"),
    FigureEntry(_alternatives(table_names.grpo_group(g, "impression") for g in _METRIC_GROUPS), _T, "04_grpo", "Tables 11-14, 19-22 (Impression, per metric group)",
                "GRPO results per metric group"),
    FigureEntry("grpo_curves", _F, "04_grpo", "GRPO training curves",
                "total reward against its first steps' level, KL and completion length per GRPO step, one column per "
                "configuration", True),
    FigureEntry("grpo_semantic_reward", _F, "04_grpo", "GRPO training curves", "R_sem per step"),
    FigureEntry("grpo_reward_sparsity", _F, "04_grpo", "", "exact-match sparsity and within-group spread per step"),
    FigureEntry(table_names.GRPO_REWARD_SPARSITY, _T, "04_grpo", "", "the same, mean over steps"),
    FigureEntry(table_names.GRPO_POLICY_MOVEMENT, _T, "04_grpo", "", "KL to SFT and reward, first vs last steps", True),
    FigureEntry(table_names.GRPO_POSITIVE_FINDINGS, _T, "04_grpo", "",
                "positive findings per Findings section and share with none, per configuration vs references"),
    FigureEntry(table_names.GRPO_SIGNIFICANCE, _T, "04_grpo", "", "paired bootstrap per seed: R_Cham / R_Haus vs SFT / R_exact"),
    FigureEntry(table_names.GRPO_REWARD_COST, _T, "04_grpo", "", "reward time vs step time, bad completions"),
    FigureEntry("grpo_reward_time", _F, "04_grpo", "", "reward time per step for every configuration"),
    FigureEntry("grpo_edit_counts", _F, "04_grpo", "", "EditGRPO edits per step (replace / delete / add)"),
    FigureEntry(table_names.GRPO_EDIT_COUNTS, _T, "04_grpo", "", "EditGRPO edit totals per configuration"),
    FigureEntry(table_names.grpo_scores("*"), _T, "04_grpo", "", "every metric per policy, seed and section (long form)"),
    FigureEntry(table_names.HEADLINE, _T, "04_grpo", "Tables 1-2, 5-6 (summary)",
                "the run's headline numbers in one file"),
    FigureEntry(table_names.GRPO_DECOMPOSITION, _T, "04_grpo", "",
                "Findings macro F1 along SFT -> C-noise -> R_fmt -> content reward, per step"),
    FigureEntry(table_names.GRPO_DECOMPOSITION_SIGNIFICANCE, _T, "04_grpo", "", "paired bootstrap of each decomposition step"),
    FigureEntry(_alternatives((table_names.GRPO_DECOMPOSITION_STRATA, table_names.GRPO_DECOMPOSITION_TRAINING)), _T, "04_grpo", "",
                "the decomposition per stratum and its training-side statistics"),
    FigureEntry("04_reward_audit", _F, "04_grpo", "", "each reward's score of constructed completions, per stratum"),
    FigureEntry(table_names.REWARD_AUDIT, _T, "04_grpo", "", "the same as a table (each case over the references it could "
                "be built for)"),
    FigureEntry(table_names.REWARD_AUDIT_PAIRED, _T, "04_grpo", "", "the audit's cases over the same references"),
    FigureEntry(table_names.REWARD_AUDIT_ORDERINGS, _T, "04_grpo", "", "the orderings a clinician expects, kept or broken"),
    FigureEntry(table_names.REWARD_AUDIT_EXPECTED, _T, "04_grpo", "",
                "expected reward of the SFT policy's own samples vs the modal normal report (the margins)"),
    FigureEntry(table_names.RECALL_CHOICE, _T, "04_grpo", "",
                "the recall reward's setting picked on validation studies: the grid, its orderings and margins"),
    FigureEntry(_alternatives(table_names.selection_headline(s, val=True) for s in table_names.SECTIONS), _T, "05_selection", "",
                "the selection method picked on validation studies, scored on test"),
    FigureEntry(table_names.NORMAL_SHARE, _T, "05_selection", "",
                "share of picks the offline labeler reads as normal, per method, vs the references"),
    FigureEntry(table_names.SELECTION_RECALL, _T, "05_selection", "",
                "best-of-K and MBR with the recall-weighted reward distance (ours) vs random"),
    FigureEntry(table_names.pruning_section("findings"), _T, "06_pruning", "Tables 4 / 29",
                "distance-guided pruning while decoding: random vs standard best-of-K vs pruning (Findings)", True),
    FigureEntry(table_names.pruning_section("impression"), _T, "06_pruning", "Tables 4 / 29 (Impression)", "the same for Impression", True),
    FigureEntry(table_names.PRUNING_TOKENS, _T, "06_pruning", "Tables 4 / 29 (token columns)", "tokens generated per study"),
    FigureEntry("06_quality_vs_tokens", _F, "06_pruning", "",
                "pruning: quality vs tokens across p and warm-up (replay)", True),
    FigureEntry(table_names.PRUNING_METHODS, _T, "06_pruning", "Tables 4 / 29 (source)", "every pruning method x metric value"),
    FigureEntry(table_names.PRUNING_VS_STANDARD, _T, "06_pruning", "", "paired bootstrap: pruning vs standard best-of-K"),
    FigureEntry(table_names.PRUNING_VS_RANDOM, _T, "06_pruning", "", "paired bootstrap: pruning vs random selection"),
    FigureEntry(table_names.SURVIVOR_VS_STANDARD_PICK, _T, "06_pruning", "",
                "how often the survivor is standard best-of-K's pick, vs chance 1/K (binomial test)"),
    FigureEntry(table_names.CANDIDATE_COLLAPSE, _T, "06_pruning", "",
                "share of studies whose K candidates carry identical labels / text (collapsed policy)"),
    FigureEntry(table_names.PRUNING_SWEEP, _T, "06_pruning", "", "the p x warm-up sweep behind the figure"),
    FigureEntry(table_names.LIVE_VS_REPLAY, _T, "06_pruning", "", "live pruning vs its replay on standard candidates"),
    FigureEntry(table_names.PRUNING_WALLCLOCK, _T, "06_pruning", "", "wall-clock per study"),
    FigureEntry(table_names.SFT_VS_BASELINES, _T, "03_sft", "", "SFT vs image-blind baselines", True),
    FigureEntry(table_names.SFT_VS_BASELINES_SIGNIFICANCE, _T, "03_sft", "", "paired bootstrap of the same"),
    FigureEntry(table_names.SFT_IMAGE_NLL, _T, "03_sft", "", "reference NLL per token, own vs another study's image"),
    FigureEntry("sft_loss", _F, "03_sft", "", "SFT training loss, token accuracy (no eval split: no validation loss)"),
    FigureEntry("sft_samples", _F, "03_sft", "", "SFT sample generations, each finding ok / missed / hallucinated"),
    FigureEntry("00_examples", _F, "00_data", "", "example studies: image, report, labels"),
    FigureEntry("00_findings_gallery", _F, "00_data", "", "one synthetic patient drawn with each finding"),
    FigureEntry("00_label_prevalence", _F, "00_data", "", "CheXpert-14 label prevalence"),
    FigureEntry("00_sentence_counts", _F, "00_data", "", "sentences per section and split"),
    FigureEntry(table_names.DATASET_SUMMARY, _T, "00_data", "", "studies, sentences and strata per split"),
    FigureEntry(table_names.REPORT_LANGUAGE, _T, "00_data", "", "report language vs IU-Xray"),
    FigureEntry(table_names.LABEL_PREVALENCE, _T, "00_data", "", "label prevalence per split"),
    FigureEntry(table_names.PIXEL_PROBE, _T, "00_data", "", "linear pixel probe AUROC per observation"),
    FigureEntry(table_names.labeler("*"), _T, "00_data", "", "offline labeler precision / recall"),
    FigureEntry("01_sentence_geometry", _F, "01_embedding", "", "cosine similarities and nearest-neighbour similarity"),
    FigureEntry(table_names.EMBEDDING_CACHE, _T, "01_embedding", "", "sentences, unique sentences, encoder calls"),
    FigureEntry(table_names.SENTENCE_GEOMETRY, _T, "01_embedding", "", "paraphrase and nearest-neighbour similarities"),
    FigureEntry(table_names.IMPRESSION_RESTATEMENT, _T, "01_embedding", "",
                "how close an Impression sentence is to its own Findings vs other reports'"),
    FigureEntry(table_names.OPPOSITE_NEIGHBOURS, _T, "01_embedding", "",
                "Findings sentences whose nearest neighbour the labeler reads with the opposite polarity"),
    FigureEntry("02_edit_reactions", _F, "02_distances", "", "each setting's reaction to report edits", True),
    FigureEntry(table_names.EDIT_REACTIONS, _T, "02_distances", "", "the same as a table"),
    FigureEntry(table_names.EDIT_REACTIONS_EXTENSIONS, _T, "02_distances", "", "the edits under our _raw / _neg settings"),
    FigureEntry(table_names.EDIT_FACTS, _T, "02_distances", "", "per setting: farthest edit, contradiction vs paraphrase"),
    FigureEntry(table_names.REAL_LANGUAGE_BATTERY, _T, "02_distances", "",
                "every reward on the real-language battery: one row per reward and case"),
    FigureEntry(table_names.DISTANCE_REGISTRY, _T, "02_distances", "App. A", "the registered distance settings"),
    FigureEntry("02_engine_speed", _F, "02_distances", "", "batched engine vs per-pair reference"),
    FigureEntry(table_names.ENGINE_SPEED, _T, "02_distances", "", "the same as a table"),
    FigureEntry(table_names.CONVERGENCE, _T, "02_distances", "", "share of pairs stopped at max_iter"),
    FigureEntry("02_fidelity", _F, "02_distances", "", "rank correlation with label disagreement (our extension)", True),
    FigureEntry(table_names.FIDELITY, _T, "02_distances", "", "the same as a table"),
    FigureEntry(table_names.FIDELITY_VS_CHAMFER, _T, "02_distances", "",
                "paired bootstrap: the best setting's rank correlation minus Chamfer's"),
    FigureEntry(table_names.IDENTICAL_FLOOR, _T, "02_distances", "", "D(A, A) per setting and set size"),
    FigureEntry("07_overview", _F, "07_figures", "", "thumbnails of the paper figures this run produced"),
    FigureEntry(table_names.PALETTE, _T, "07_figures", "", "share of each figure's coloured pixels in the Okabe-Ito palette"),
    FigureEntry(table_names.PAPER_COMPARISON, _T, "07_figures", "Tables 1-4 (this run against the paper)",
                "each paper claim the notebooks reproduce: the paper's number, this run's and the rule's verdict"),
)

_INDEX_SKIP = {"README", table_names.FIGURE_INDEX_TABLE, table_names.RUN_SUMMARY}


def _entry_paths(e: FigureEntry, results_dir: Path, figures_dir: Path) -> list[Path]:
    folder, ext = (figures_dir, ".png") if e.kind == _F else (results_dir, ".md")
    if not folder.is_dir():
        return []
    found = {p for alt in e.name.split("|") for p in folder.glob(alt + ext)}
    return sorted(p for p in found if p.is_file() and p.stem not in _INDEX_SKIP)


def figure_index(results_dir: str | Path, figures_dir: str | Path,
                 entries: Sequence[FigureEntry] = FIGURE_INDEX) -> "pd.DataFrame":
    """Check a run's folders against ``entries``: one row per file found or per entry with no file.

    Columns: ``paper`` (the paper item, "" for ours), ``file`` (``figures/<name>.png`` or
    ``results/<name>.md``; the entry's pattern when missing), ``notebook``, ``what``, ``kind``,
    ``headline`` and ``status``: ``present``, ``missing`` (nothing matches; run the notebook) or
    ``not in index`` (a file in the folders that no entry names: add it to :data:`FIGURE_INDEX`).
    Folders that do not exist yet count as empty (nothing has run); a path that is a file raises
    :class:`PlotError`. Rows keep the order of ``entries``; unindexed files come last.
    """
    import pandas as pd

    results_dir, figures_dir = Path(results_dir), Path(figures_dir)
    for p in (results_dir, figures_dir):
        if p.exists() and not p.is_dir():
            raise PlotError(f"figure_index: {p} is a file, not a folder; pass the run's results/ and figures/")
    rows, seen = [], set()
    for e in entries:
        paths = _entry_paths(e, results_dir, figures_dir)
        base = {"paper": e.paper, "notebook": e.notebook, "what": e.what, "kind": e.kind, "headline": e.headline}
        top = "figures" if e.kind == _F else "results"
        if not paths:
            ext = ".png" if e.kind == _F else ".md"
            rows.append({**base, "file": " or ".join(f"{top}/{alt}{ext}" for alt in e.name.split("|")),
                         "status": "missing"})
        alts = e.name.split("|")
        for p in paths:
            if p in seen:
                continue
            seen.add(p)
            what = next((w for a, w in zip(alts, e.alt_what) if p.stem == a), e.what)
            rows.append({**base, "what": what, "file": f"{top}/{p.name}", "status": "present"})
    for folder, top, ext, kind in ((figures_dir, "figures", ".png", _F), (results_dir, "results", ".md", _T)):
        if folder.is_dir():
            for p in sorted(folder.glob("*" + ext)):
                if p.is_file() and p not in seen and p.stem not in _INDEX_SKIP:
                    rows.append({"paper": "", "notebook": "", "what": "", "kind": kind, "headline": False,
                                 "file": f"{top}/{p.name}", "status": "not in index"})
    cols = ["paper", "file", "notebook", "what", "kind", "headline", "status"]
    return pd.DataFrame(rows, columns=cols)


def missing_summary(index: "pd.DataFrame") -> str:
    """One readable paragraph: what is missing, per notebook to run, and what is not in the index."""
    miss = index[index.status == "missing"]
    lines = []
    if len(miss):
        for nb, d in miss.groupby("notebook", sort=False):
            items = ", ".join(f"{f}" + (f" ({p})" if p else "") for f, p in zip(d.file, d.paper))
            lines.append(f"missing from {nb} (run it: ./run_all.sh --only {nb[:2]}): {items}")
    else:
        lines.append("every indexed file is present")
    extra = index[index.status == "not in index"]
    if len(extra):
        lines.append("not in sdrlib.results.FIGURE_INDEX: " + ", ".join(extra.file))
    return "\n".join(lines)
