"""The README block written from a run's result files: the claim groups in order, and what a missing table does.

:data:`GROUPS` lists the claim groups (title -> :class:`ClaimGroup`: the function writing its lines and the tables
it cannot be written without). :func:`results_section` writes the block; a group whose table the run lacks is not
left out silently: in its place the block says ``table X missing: group "Y" not generated``, and
:func:`missing_tables` gives the same lines for ``python -m sdrlib.experiments.claims --check`` to report as problems.

Scope: assembling the block. The sentences are the group functions' (:mod:`._grpo`, :mod:`._audit`,
:mod:`._runs`); checking a block against a run is :mod:`._check`'s.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from sdrlib import table_names
from sdrlib.experiments import conclusions as _conclusions
from sdrlib.experiments.claims._audit import recall_audit, recall_choice, recall_vs_others, reward_audit
from sdrlib.experiments.claims._check import BEGIN, END
from sdrlib.experiments.claims._grpo import (decomposition, grpo_headline, grpo_vs_rcham, grpo_vs_sft,
                                             policy_movement, positive_findings)
from sdrlib.experiments.claims._runs import (pruning, report_language, run_time, selection_best_vs_random,
                                             selection_recall, sft_vs_baselines)
from sdrlib.results import ResultTableError, TableReader


@dataclass(frozen=True)
class ClaimGroup:
    """One ``**title**`` paragraph of the README block.

    ``write``: the function giving its lines from a results folder; ``needs``: the tables it cannot be written
    without (one of them missing: the block carries a note in its place, the check a problem); ``reads``: other
    tables it may read (named when one lacks a column the group reads and the group's reads were not recorded).
    Calling a group calls ``write``.
    """

    write: Callable[..., list[str]]
    needs: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()

    def __call__(self, results_dir: str | os.PathLike) -> list[str]:
        return self.write(results_dir)


GROUPS: dict[str, ClaimGroup] = {
    "Report language (notebook 00)": ClaimGroup(report_language, (table_names.REPORT_LANGUAGE,)),
    "SFT vs image-blind baselines (notebook 03)": ClaimGroup(sft_vs_baselines,
                                                             (table_names.SFT_VS_BASELINES_SIGNIFICANCE,)),
    "GRPO headline (notebook 04)": ClaimGroup(grpo_headline, (table_names.GRPO_HEADLINE_FINDINGS,),
                                              (table_names.GRPO_POLICY_MOVEMENT, table_names.GRPO_POSITIVE_FINDINGS)),
    "GRPO configurations vs SFT (notebook 04)": ClaimGroup(grpo_vs_sft, (table_names.GRPO_SIGNIFICANCE,)),
    "GRPO configurations vs R_Cham (notebook 04)": ClaimGroup(grpo_vs_rcham, (table_names.GRPO_SIGNIFICANCE,)),
    "Decomposing the drop in Findings macro F1 (notebook 04)": ClaimGroup(decomposition,
                                                                          (table_names.GRPO_DECOMPOSITION,)),
    "Policy movement (notebook 04)": ClaimGroup(policy_movement, (table_names.GRPO_POLICY_MOVEMENT,)),
    "Normal reports (notebook 04)": ClaimGroup(positive_findings, (table_names.GRPO_POSITIVE_FINDINGS,)),
    "Best-of-K selection vs random (notebook 05)": ClaimGroup(selection_best_vs_random,
                                                              (table_names.SELECTION_HEADLINE_FINDINGS,),
                                                              (table_names.SELECTION_HEADLINE_FINDINGS_VAL,)),
    "Pruning (notebook 06)": ClaimGroup(pruning, (table_names.PRUNING_TOKENS, table_names.PRUNING_VS_STANDARD),
                                        (table_names.PRUNING_VS_RANDOM, table_names.SURVIVOR_VS_STANDARD_PICK,
                                         table_names.CANDIDATE_COLLAPSE)),
    "Reward audit (notebook 04)": ClaimGroup(reward_audit, (table_names.REWARD_AUDIT_ORDERINGS,
                                                            table_names.REWARD_AUDIT_EXPECTED)),
    "The recall setting, picked on validation (notebook 04)": ClaimGroup(recall_choice, (table_names.RECALL_CHOICE,)),
    "The trained recall setting's audit (notebook 04)": ClaimGroup(
        recall_audit, (table_names.REWARD_AUDIT_ORDERINGS, table_names.RECALL_CHOICE)),
    "The trained recall setting against SFT, R_Cham, EditGRPO and R_exact (notebook 04)": ClaimGroup(
        recall_vs_others, (table_names.GRPO_SIGNIFICANCE, table_names.RECALL_CHOICE)),
    "Selection with the recall distance (notebook 05)": ClaimGroup(selection_recall, (table_names.SELECTION_RECALL,)),
    "Run time": ClaimGroup(run_time, (table_names.RUN_SUMMARY,)),
}


def _missing_lines(results_dir: str | os.PathLike, title: str, group: Callable[..., list[str]], *,
                   quote: str = "") -> list[str]:
    """``table X missing: group "title" not generated`` for each table ``group`` needs that the run did not write
    (none for a plain function: it declares no tables); ``quote`` around the table's name (a backtick in the
    block)."""
    return [f'table {quote}{name}{quote} missing: group "{title}" not generated' for name in getattr(group, "needs", ())
            if not (Path(results_dir) / f"{name}.csv").is_file()]


def missing_tables(results_dir: str | os.PathLike, groups: Mapping[str, Callable[..., list[str]]] | None = None,
                   *, block: str | None = None) -> list[str]:
    """One line per table a claim group of ``groups`` (default :data:`GROUPS`) needs and the run lacks:
    ``table 06_tokens missing: group "Pruning (notebook 06)" not generated`` (``python -m
    sdrlib.experiments.claims --check`` prints them as problems). ``block``: only the groups this README block has a
    ``**title**`` paragraph for (its claims, or the note written in place of one). Empty when every group can be
    written."""
    groups = GROUPS if groups is None else groups
    if block is not None:
        titles = {title for title, _ in _conclusions.split_groups(block)}
        groups = {title: group for title, group in groups.items() if title in titles}
    return [line for title, group in groups.items() for line in _missing_lines(results_dir, title, group)]


def _header(path: Path) -> list[str]:
    """The column names of a CSV file; none for one that cannot be read as a table (a declared table not read)."""
    try:
        return list(pd.read_csv(path, nrows=0).columns)
    except ValueError:  # EmptyDataError, ParserError and UnicodeDecodeError are ValueErrors
        return []


def _column_error(title: str, group: Callable[..., list[str]], reader: TableReader,
                  e: KeyError | AttributeError) -> ResultTableError:
    """The error for a group that read a table without a column it needs: the tables it read (or, where its reads
    went unrecorded, the ones it declares) that lack the column; of those, the one whose columns are those of the
    frame or row the missing attribute was looked up on (``e.obj``), when one is; else all it read."""
    read = list(dict.fromkeys(reader.read))
    declared = [reader.results_dir / f"{n}.csv" for n in (*getattr(group, "needs", ()), *getattr(group, "reads", ()))]
    read += [p for p in declared if p.is_file() and p not in read]
    col = e.args[0] if isinstance(e, KeyError) and e.args else getattr(e, "name", None)
    header = {p: _header(p) for p in read}
    lacking = [p for p in read if col is not None and col not in header[p]]
    obj = getattr(e, "obj", None)
    looked_in = list(obj.columns if isinstance(obj, pd.DataFrame) else obj.index if isinstance(obj, pd.Series) else [])
    named = [p for p in lacking if header[p] == looked_in] or lacking or read
    names = ", ".join(str(p) for p in named) or "its tables"
    return ResultTableError(f"{names}: no column {e} (read for the paragraph {title!r}); re-run the notebook that "
                            "writes it")


def _group_lines(results_dir: str | os.PathLike, title: str, group: Callable[..., list[str]]) -> list[str]:
    """The lines of one ``**title**`` paragraph: the note of each missing table, else the group's own lines (none:
    no paragraph)."""
    missing = _missing_lines(results_dir, title, group, quote="`")
    if missing:
        return ["", f"**{title}**", "", *(f"- *{line}*" for line in missing)]
    reader = TableReader(results_dir)
    try:
        lines = group(reader)
    except (KeyError, AttributeError) as e:  # a table without a column its paragraph reads
        raise _column_error(title, group, reader, e) from None
    return ["", f"**{title}**", "", *lines] if lines else []


def results_section(results_dir: str | Path, *, groups: Mapping[str, Callable[..., list[str]]] | None = None,
                    markers: bool = True, also: Sequence[str | Path] = (),
                    labels: Sequence[str] | None = None, only_here: Sequence[str] = (),
                    conclusions_csv: str | Path | None = None) -> str:
    """The README block: one ``**group**`` paragraph per claim group, between the markers.

    A group of ``groups`` that writes no lines is left out; a :class:`ClaimGroup` whose needed table the run lacks
    gets a visible note in its place (``table X missing: group "Y" not generated``, :func:`missing_tables`). Each
    group reads the folder through a :class:`sdrlib.results.TableReader`, so a table without a column a group
    reads is named (:class:`sdrlib.results.ResultTableError`).

    With the default ``groups`` the block opens with the run's machine (:func:`conclusions.machine_lines`) and
    the conclusions that hold in this run and every run in ``also`` (the same commit on other kernel paths;
    :func:`conclusions.conclusion_lines`; its table is written to ``conclusions_csv`` when given, never into a
    results folder); ``labels`` names the runs (this one first); ``only_here``: configuration labels compared in
    this run only (:func:`conclusions.conclusions`)."""
    if groups is None:
        conclusions = ClaimGroup(lambda d: _conclusions.conclusion_lines([d, *also], labels=labels,
                                                                         only_here=only_here,
                                                                         write_to=conclusions_csv),
                                 reads=(table_names.GRPO_SIGNIFICANCE, table_names.SFT_VS_BASELINES_SIGNIFICANCE))
        groups = {"Machine": _conclusions.machine_lines, _conclusions.TITLE: conclusions, **GROUPS}
    parts = [BEGIN] if markers else []
    parts.append("<!-- written by python -m sdrlib.experiments.claims from the result files; do not edit by hand -->")
    for title, group in groups.items():
        parts += _group_lines(results_dir, title, group)
    if markers:
        parts += ["", END]
    return "\n".join(parts) + "\n"
