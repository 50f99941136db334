"""The GRPO study's evidence files (:mod:`sdrlib.experiments.study.runs`): one gzip JSON file per finished run and per
extra draw, ``<evidence>/runs/<config>_s<seed>[_sft<k>][_d<draw>].json.gz``, with the key that decides its
generations. ``_sft<k>``: a run from a second SFT start, the SFT policy trained with seed ``k`` instead of the
profile's ``seed`` (its record says ``sft_seed``; its GRPO key names that policy's digest as ``init``), kept apart
from the study's own runs: :func:`load_evidence` reads one start at a time.

A file holds the run's (or draw's) test generations, one per study id, its ``key`` (:func:`evidence_key`: the
training run key without the source digest, the GRPO steps, the test studies and the decoding settings; a draw also
its number and sampling seed, :func:`draw_seed`), the commit and source digest that produced it, the policy digest
and the machine (:func:`write_run_file`). :func:`load_evidence` reads a folder of them into one record per run, its
draws in order; every check on what a file holds is here (:func:`load_run_file`). Seeds are checked by
:func:`check_seeds` (numpy's range, each once).

Leaves out training, sampling and the table (:mod:`sdrlib.experiments.study.runs`).
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sdrlib.config import GRPOConfig, SFTConfig
from sdrlib.errors import SDRError
from sdrlib.io import atomic_write_bytes
from sdrlib.results import git_commit, provenance
from sdrlib.training.runkeys import records_digest, run_key, source_digest

__all__ = ["MAX_SEED", "COMMAND", "StudyError", "is_int", "check_seeds", "draw_seed", "evidence_key",
           "profile_settings", "setting_defaults", "settings_differences", "evidence_path",
           "load_run_file", "read_run_file", "write_run_file", "sft_starts", "load_evidence"]

#: the largest seed: numpy's range, as the profile's ``seed``
MAX_SEED = 2**32 - 1
#: the study's command line (:mod:`sdrlib.experiments.study.cli`), as the messages name it
COMMAND = "python -m sdrlib.experiments.study"


class StudyError(SDRError, ValueError):
    """A study request or evidence file the study cannot use; the message names it and what to do."""


def is_int(v: Any) -> bool:
    """An integer (Python or numpy), not a bool."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def check_seeds(seeds: Iterable[int], what: str = "seeds") -> list[int]:
    """``seeds`` as a list of distinct integers in [0, :data:`MAX_SEED`], else :class:`StudyError` naming ``what``.

    Example: ``check_seeds([0, 1])`` -> ``[0, 1]``; ``check_seeds([0, 0])`` raises "seeds [0, 0]: repeats [0] ..."."""
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Iterable):
        raise StudyError(f"{what} = {seeds!r}: a list of seeds (integers in [0, 2**32 - 1])")
    out = list(seeds)
    bad = [s for s in out if not is_int(s) or not 0 <= s <= MAX_SEED]
    if bad:
        raise StudyError(f"{what} {bad[:3]}: a seed is an integer in [0, 2**32 - 1] (numpy's range)")
    twice = sorted({s for s in out if out.count(s) > 1})
    if twice:
        raise StudyError(f"{what} {out}: repeats {twice}; give each seed once")
    return [int(s) for s in out]


def draw_seed(seed: int, draw: int) -> int:
    """The sampling seed of draw ``draw`` of the run of seed ``seed``: ``seed`` itself for draw 0 (the run's own
    reports), else a 32-bit number derived from both by numpy's ``SeedSequence`` (so draws of different runs and
    seeds sample apart). :class:`StudyError` for a seed outside [0, :data:`MAX_SEED`] or a draw that is not a whole
    number >= 0. Example: ``draw_seed(3, 0)`` -> ``3``; ``draw_seed(3, 1)`` -> another seed, the same every time."""
    seed = check_seeds([seed], "seed")[0]
    if not is_int(draw) or draw < 0:
        raise StudyError(f"draw = {draw!r}: a whole number >= 0 (0: the run's own reports)")
    return seed if draw == 0 else int(np.random.SeedSequence([seed, int(draw)]).generate_state(1, np.uint32)[0])


def evidence_key(cfg: Any, config: str, seed: int, train_records: Sequence[Any], test_records: Sequence[Any],
                 sft_policy: str | Path, draw: int = 0, sft_seed: int | None = None) -> dict[str, Any]:
    """What decides a run's test generations (module doc): the training run key without ``code``, the GRPO steps,
    the test studies and the decoding settings; for draw d > 0 also ``draw`` and its ``sample_seed``
    (:func:`draw_seed`). ``sft_seed``: the SFT run's seed of a second start (None: the profile's ``seed``); a GRPO
    key names the SFT policy by its digest either way."""
    if config == "sft":
        key = run_key(cfg, "sft", train_records, seed=cfg.seed if sft_seed is None else sft_seed)
    else:
        key = run_key(cfg, "grpo", train_records, reward=config, seed=seed, init_from=sft_policy)
        key["max_steps"] = cfg.grpo.max_steps
    key.pop("code", None)
    s = cfg.sft
    key["eval"] = {"test": records_digest(test_records), "n_test": len(test_records), "seed": seed,
                   "max_new_tokens": s.max_new_tokens, "do_sample": s.eval_do_sample,
                   "temperature": s.eval_temperature, "threads": s.threads}
    if draw:
        key["eval"].update(draw=int(draw), sample_seed=draw_seed(seed, draw))
    return json.loads(json.dumps(key, default=str))


def profile_settings(cfg: Any, config: str) -> dict[str, Any]:
    """The part of :func:`evidence_key` that the profile's settings alone decide (no data, SFT policy, seed,
    code or machine): ``sft`` for the SFT run; ``reward``, ``grpo``, ``method``, ``policy``, ``encoder`` and
    ``max_steps`` for a GRPO run; the decoding settings of ``eval`` for both. A run file whose key differs here was
    trained or sampled under other settings (``--set grpo.max_steps=3``) and is no seed of this profile's study."""
    if config == "sft":
        key = run_key(cfg, "sft", [], seed=cfg.seed)
        out = {"sft": key["sft"]}
    else:
        key = run_key(cfg, "grpo", [], reward=config, seed=0, init_from=None)
        out = {k: key.get(k) for k in ("reward", "grpo", "method", "policy", "encoder")}
        out["max_steps"] = cfg.grpo.max_steps
    s = cfg.sft
    out["eval"] = {"max_new_tokens": s.max_new_tokens, "do_sample": s.eval_do_sample,
                   "temperature": s.eval_temperature}
    return json.loads(json.dumps(out, default=str))


def setting_defaults() -> dict[str, dict[str, Any]]:
    """The schema's default of every ``sft`` and ``grpo`` setting (``{"sft": {"max_steps": 1000, ...}, "grpo":
    {...}}``, JSON form): what a run made before a setting existed ran under, when the setting's default keeps the
    behaviour it had before (as every added setting's does: ``grpo.effective_batch`` 0 = ``grad_accum`` as before)."""
    out = {name: {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}
           for name, cls in (("sft", SFTConfig), ("grpo", GRPOConfig))}
    return json.loads(json.dumps(out, default=str))


def settings_differences(want: dict[str, Any], key: Any, defaults: dict[str, dict[str, Any]] | None = None
                         ) -> list[str]:
    """Where a run file's ``key`` departs from :func:`profile_settings` ``want``: ``"grpo.max_steps: 999 (profile
    2)"`` per differing setting, one level down; ``[]`` when it agrees or the file has no key to compare.

    A setting the file's key lacks (one added to the profile schema after the run was made) agrees when the profile's
    value is its default in ``defaults`` (:func:`setting_defaults`, the default; ``{}``: never): the run ran under
    the behaviour that default keeps. Before, every run of the study on record (``docs/evidence/study/``) read as
    "made under other settings" once ``grpo.effective_batch`` was added. A profile that sets it otherwise (e.g.
    ``sft.tiny_tower_epochs: 6``) still differs from such a file."""
    if not isinstance(key, dict):
        return []
    defaults = setting_defaults() if defaults is None else defaults
    out = []
    for k, v in want.items():
        got = key.get(k)
        if isinstance(v, dict):
            got = got if isinstance(got, dict) else {}
            base = defaults.get(k, {})
            out += [f"{k}.{j}: {got.get(j)!r} (profile {v[j]!r})" for j in sorted(v)
                    if got.get(j) != v[j] and not (j not in got and j in base and base[j] == v[j])]
        elif got != v:
            out.append(f"{k}: {got!r} (profile {v!r})")
    return out


def evidence_path(evidence: str | Path, config: str, seed: int, draw: int = 0, sft_seed: int | None = None) -> Path:
    """``<evidence>/runs/<config>_s<seed>.json.gz`` (draw 0, the run), ``..._s<seed>_d<draw>.json.gz`` (a draw);
    a run of the second SFT start of seed ``sft_seed`` (module doc): ``..._s<seed>_sft<k>[_d<draw>].json.gz``."""
    return Path(evidence) / "runs" / (f"{config}_s{seed}" + (f"_sft{sft_seed}" if sft_seed is not None else "")
                                      + (f"_d{draw}" if draw else "") + ".json.gz")


def _record_problem(rec: Any) -> str:
    """What keeps ``rec`` from being a run record (``""`` when nothing does)."""
    if not isinstance(rec, dict):
        return f"holds a JSON {type(rec).__name__}, not a run record"
    missing = [k for k in ("config", "seed", "study_ids", "generations") if k not in rec]
    if missing:
        return f"lacks {missing}"
    if not isinstance(rec["config"], str) or not is_int(rec["seed"]):
        return f"config {rec['config']!r} and seed {rec['seed']!r}: a name and an integer"
    if not is_int(rec.get("draw", 0)) or rec.get("draw", 0) < 0:
        return f"draw {rec['draw']!r}: a whole number >= 0"
    if "sft_seed" in rec and (not is_int(rec["sft_seed"]) or not 0 <= rec["sft_seed"] <= MAX_SEED):
        return f"sft_seed {rec['sft_seed']!r}: a seed (an integer in [0, 2**32 - 1])"
    ids, gens = rec["study_ids"], rec["generations"]
    if not isinstance(ids, list) or not isinstance(gens, list) or len(ids) != len(gens):
        return f"holds {len(gens) if isinstance(gens, list) else gens!r} generations for " \
               f"{len(ids) if isinstance(ids, list) else ids!r} study ids (one per study)"
    if not all(isinstance(x, str) for x in (*ids, *gens)):
        return "holds a study id or generation that is not text"
    return ""


def load_run_file(path: Path) -> dict[str, Any]:
    """One run (or draw) file's record; :class:`StudyError` naming the file and the fix when it is not one: not gzip
    JSON, lacking a field, other than one generation per study id, or named otherwise than its content."""
    fix = f"delete it and `{COMMAND} run` redoes that run"
    try:
        rec = json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))
    except (OSError, ValueError, EOFError, zlib.error) as e:
        raise StudyError(f"{path}: not a run record (gzip JSON): {e}; {fix}") from None
    problem = _record_problem(rec)
    if problem:
        raise StudyError(f"{path}: {problem}; {fix}")
    draw, start = rec.get("draw", 0), rec.get("sft_seed")
    name = evidence_path("", rec["config"], rec["seed"], draw, start).name
    if path.name != name:
        what = (f"{rec['config']} seed {rec['seed']}" + (f" from SFT seed {start}" if start is not None else "")
                + (f" draw {draw}" if draw else ""))
        raise StudyError(f"{path}: holds {what}, whose file is {name}; rename it (or delete it if it is a copy)")
    return rec


def read_run_file(path: Path) -> dict[str, Any] | None:
    """:func:`load_run_file`, or None when the file is missing or not a run record (the study redoes the run)."""
    try:
        return load_run_file(path)
    except StudyError:
        return None


def write_run_file(evidence: Path, cfg: Any, record: dict, key: dict) -> Path:
    """Write ``record`` (a run's or a draw's) with ``key``, its digest, the commit, source digest and provenance;
    atomically, so an interrupted write leaves the old file or none. Returns the path."""
    path = evidence_path(evidence, record["config"], record["seed"], record.get("draw", 0), record.get("sft_seed"))
    body = {"key": key, "key_digest": hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16],
            "commit": git_commit(mark_dirty=True), "source_digest": source_digest()[:16],
            "provenance": provenance(cfg), **record}
    atomic_write_bytes(path, gzip.compress(json.dumps(body, indent=1, sort_keys=True).encode("utf-8"), mtime=0))
    return path


def sft_starts(evidence: str | Path) -> list[int]:
    """The SFT seeds of the second starts whose runs lie under ``<evidence>/runs`` (their files'
    ``sft_seed``; the profile's own start is not listed), sorted; every file is checked as :func:`load_evidence`
    does."""
    return sorted({rec["sft_seed"] for rec in (load_run_file(p) for p in (Path(evidence) / "runs").glob("*.json.gz"))
                   if rec.get("sft_seed") is not None})


def load_evidence(evidence: str | Path, sft_seed: int | None = None) -> dict[tuple[str, int], dict[str, Any]]:
    """Every run under ``<evidence>/runs`` of one SFT start (``sft_seed``: None, the profile's own, files without
    ``_sft<k>``; k, the second start of that SFT seed) (each ``*.json.gz`` file, in name order; every file is
    checked, those of other starts then left out): ``{(config, seed): record}``,
    the run file's record with ``draws``, the generations of draw 0 (the run's own) and of each draw file after it,
    and ``keys``, each file's key in the same order;
    ``{}`` when there is none. A file that is not a run record of its own name, a draw without its run's file, from
    another policy than its run's, or after a missing draw is a :class:`StudyError` naming it (module doc)."""
    runs: dict[tuple[str, int], dict[str, Any]] = {}
    extra: dict[tuple[str, int], dict[int, tuple[Path, dict]]] = {}
    for path in sorted((Path(evidence) / "runs").glob("*.json.gz")):
        rec = load_run_file(path)
        if rec.get("sft_seed") != sft_seed:
            continue
        k, d = (rec["config"], int(rec["seed"])), int(rec.get("draw", 0))
        if d:
            extra.setdefault(k, {})[d] = (path, rec)
        else:
            runs[k] = {**rec, "draws": [rec["generations"]], "keys": [rec.get("key")]}
    redo = f"delete it and `{COMMAND} run` samples it again"
    for k, draws in extra.items():
        for d, (path, rec) in sorted(draws.items()):
            if k not in runs:
                raise StudyError(f"{path}: a draw of {k[0]} seed {k[1]} without its run's file "
                                 f"{evidence_path('', *k, sft_seed=sft_seed).name}; {redo} (after its run)")
            if rec.get("policy") != runs[k].get("policy"):
                raise StudyError(f"{path}: sampled from policy {str(rec.get('policy'))[:12]}, its run's file from "
                                 f"{str(runs[k].get('policy'))[:12]} (the run was trained again); {redo}")
            if d != len(runs[k]["draws"]):
                raise StudyError(f"{path}: draw {d} of {k[0]} seed {k[1]} after {len(runs[k]['draws'])} draw(s): "
                                 f"{evidence_path('', *k, len(runs[k]['draws']), sft_seed).name} is missing; "
                                 f"`{COMMAND} run` samples it")
            runs[k]["draws"].append(rec["generations"])
            runs[k]["keys"].append(rec.get("key"))
    return runs
