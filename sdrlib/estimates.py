"""Training time from a profile's stated step costs, and the notebook cell limit sized from it.

What it does: :func:`stage_estimates` multiplies each training stage's runs and steps by the seconds per step the
profile states (``sft.step_seconds``, ``grpo.step_seconds``; the paper profile's are estimates from arithmetic for
one H100, docs/gpu.md); :func:`sized_cell_timeout` turns the longest into papermill's per-cell limit and the lines
``run_all.sh`` prints before the first notebook. What it leaves out: measuring (``python -m sdrlib.gpu_check`` does,
on a GPU), evaluation and generation time, and any stage whose cost the profile does not state. ``cfg`` is a
profile (:class:`sdrlib.config.Profile`); only its ``sft`` and ``grpo`` sections are read.
"""

from __future__ import annotations

__all__ = ["DEFAULT_CELL_TIMEOUT", "stage_estimates", "sized_cell_timeout"]

#: papermill's per-cell limit when neither the user (--cell-timeout) nor the profile's stated step costs ask for more
DEFAULT_CELL_TIMEOUT = 3600


def stage_estimates(cfg) -> list[dict]:
    """Each training stage's time from the profile: runs x steps x the stated seconds per step (``sft.step_seconds``,
    ``grpo.step_seconds``; a stage whose cost is not stated is left out), GRPO's runs side by side in
    ``grpo.workers``. Training only (evaluation and generation come on top). Each stage trains inside one notebook
    cell (notebook 03: SFT; notebook 04: every GRPO run).

    Example: the paper profile -> SFT 1 run x 3000 steps x 2.5 s = 7,500 s; GRPO 35 runs x 1000 x 60 s = 2,100,000 s.
    """
    s, g = cfg.sft, cfg.grpo
    out = []
    if s.step_seconds:
        out.append({"stage": "SFT", "notebook": "03", "runs": 1, "steps": s.max_steps, "step_s": s.step_seconds,
                    "seconds": s.max_steps * s.step_seconds})
    if g.step_seconds:
        runs = len(g.rewards) * g.seeds + len(g.ablations) * g.ablation_seeds
        out.append({"stage": "GRPO", "notebook": "04", "runs": runs, "steps": g.max_steps, "step_s": g.step_seconds,
                    "seconds": runs * g.max_steps * g.step_seconds / g.workers})
    return out


def sized_cell_timeout(cfg, given: int | None) -> tuple[int, list[str]]:
    """The per-cell limit and the lines that state it: ``given`` (``--cell-timeout``) when the user chose one, else
    twice the longest stage of :func:`stage_estimates` (at least :data:`DEFAULT_CELL_TIMEOUT`), so a stated long
    training is not stopped after an hour. A chosen limit below a stage's estimate is said before any notebook."""
    est = stage_estimates(cfg)
    lines = [f"estimate: {e['stage']} (notebook {e['notebook']}): {e['runs']} run(s) x {e['steps']} steps x "
             f"{e['step_s']:g} s = {_duration(e['seconds'])} (stated per-step cost, training only)" for e in est]
    longest = max((e["seconds"] for e in est), default=0.0)
    if given is None:
        limit = max(DEFAULT_CELL_TIMEOUT, int(2 * longest) + 1)
        if est:  # a profile that states no step cost keeps the default, unsaid
            why = "twice the longest stage's estimate" if limit > DEFAULT_CELL_TIMEOUT else "the default"
            lines.append(f"cell timeout: {limit:,} s ({why}; --cell-timeout to choose)")
        return limit, lines
    for e in est:
        if e["seconds"] > given:
            lines.append(f"WARNING: {e['stage']}'s estimate ({_duration(e['seconds'])}) exceeds --cell-timeout "
                         f"{given:,} s: notebook {e['notebook']} would be stopped before it finishes")
    return given, lines


def _duration(seconds: float) -> str:
    """``7500`` -> ``"7,500 s (2.1 h)"``; days past 48 h."""
    h = seconds / 3600
    return f"{seconds:,.0f} s ({h:.1f} h)" if h < 48 else f"{seconds:,.0f} s ({h / 24:.1f} days)"
