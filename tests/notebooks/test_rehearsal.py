"""End to end: ``run_all.sh --profile rehearsal`` (the paper profile's code paths on CPU) into a temporary root.

The rehearsal trains the tiny policy on the MIMIC-CXR stand-in it writes itself, sweeps all 15 distance settings
(GW included) x min / avg / kNN in notebook 05, runs every GRPO reward and EditGRPO ablation of the paper profile
at 2 seeds, and asks the SFT policy served on loopback (sdrlib.serve) for API candidates with prompts p1 and p2.
The test runs the profile with the smaller sizes of :data:`SIZES` (``--set``): the same notebooks, profile keys
and stand-in layout, with fewer studies, K = 3 candidates, a group of 2 and a 2-layer tiny policy;
configs/rehearsal.yaml keeps the sizes a user's rehearsal runs (it says why each is what it is). What the sizes
keep: the SFT steps that write the template (the sweep and the distance rewards score parsed reports), and the 4
test studies of notebooks 04 and 05 (the first 4 of the stand-in's test split hold the no-finding and
several-findings strata, so the strata tables are written). Cost, run alone on the 2-core box while another job
trained on both cores (2026-12-07, load 4-7): 819 s (the notebook run 765 s and 425 CPU-seconds, then the notebook
05 rerun); with configs/rehearsal.yaml's own sizes 1,072 s (996 s, 528 CPU-seconds). Slow, like the smoke run:
under pytest-xdist (README's test command) tests/conftest.py starts the two first, on different workers.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The test's sizes on top of configs/rehearsal.yaml (its values in the comments), passed to both runs with --set.
SIZES = {
    "data.standin_n": 40,  # 60: 24 / 5 / 6 studies kept; the first 4 test studies are the same
    "sft.tiny_layers": 2,  # 4 (from cpu.yaml): 150 SFT steps still write the template (4 of the 6 test studies'
    #                        sampled reports parse, against 5 of 6 with 4 layers: training.sft, then
    #                        posttrain.generate_test, on these sizes)
    "selection.k": 3,  # 5: K candidates per study in notebook 05 (pruning.k stays 5)
    "embedding.bank_size": 8,  # 16: still >= selection.knn_k and pruning.k (5)
    "grpo.num_generations": 2,  # 4: a group of 2 completions of one prompt
    "grpo.batch_size": 2,  # 4
    "selection.n_val": 1,  # 2: notebook 05's validation pick on one study
    "pruning.n_test": 2,  # 3
}


def _set(sizes: dict) -> list[str]:
    """``sizes`` as run_all.sh arguments: ``--set KEY=VALUE`` each."""
    return [a for k, v in sizes.items() for a in ("--set", f"{k}={v}")]


@pytest.mark.slow
def test_run_all_rehearsal(tmp_path):
    from sdrlib.config import load_profile

    proc = subprocess.run(["bash", str(ROOT / "run_all.sh"), "--profile", "rehearsal", "--out", str(tmp_path),
                           "--cell-timeout", "1200", *_set(SIZES)], capture_output=True, text=True, timeout=3600)
    sys.stdout.write(proc.stdout[-4000:])
    sys.stderr.write(proc.stderr[-4000:])
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = (tmp_path / "results" / "run_summary.md").read_text(encoding="utf-8")
    assert "- result: 8 of 8 notebooks ok" in summary, summary
    # the stand-in was written where the profile's data.root points, in MIMIC-CXR-JPG's layout
    standin = tmp_path / "data" / "mimic-cxr-standin"
    assert (standin / "mimic-cxr-2.0.0-split.csv.gz").is_file() and (standin / "STANDIN.json").is_file()
    # notebook 05's selection table: every one of the paper's 15 settings x min / avg / kNN
    paper = load_profile("paper").selection
    table = pd.read_csv(tmp_path / "results" / "05_improvement_all.csv")  # distance x aggregation, all studies
    assert len(paper.names) == 15 and set(table["distance"]) == set(paper.names) and "gw" in set(table["distance"])
    assert len(table) == 45 and set(table["aggregation"]) == {"min", "avg", "knn"}
    methods = set(pd.read_csv(tmp_path / "results" / "05_selection_methods.csv")["method"])
    assert {f"{n}+{a}" for n in paper.names for a in ("min", "avg", "knn")} <= methods
    # the API candidates: both prompts through the loopback server, cached in JSONL
    sel_dir = tmp_path / "runs" / "rehearsal" / "selection"
    for prompt in ("p1", "p2"):
        lines = [json.loads(x) for x in (sel_dir / f"api_tiny-sft_{prompt}.jsonl").read_text().splitlines()]
        assert lines and all(r["status"] == "ok" and r["prompt"] == prompt for r in lines)
    # the sweep scored real candidates (the SFT policy writes the template), not an empty set
    first = _outputs(tmp_path / "runs" / "rehearsal" / "notebooks" / "05_selection.ipynb")
    computed = re.search(r"sweep: .* \(([\d,]+) after deduplication\)", first)
    assert computed and int(computed.group(1).replace(",", "")) > 0, first[-3000:]
    # a rerun of notebook 05 asks the server nothing: every sample comes from the cache. The rerun's profile is the
    # rehearsal under its own name (same runs folder, bank and caches) with a one-setting sweep of the SFT policy, no
    # validation pick and no BERTScore: the sweep and its metrics are what a full rerun spends its time on (130 s of
    # the rehearsal's first sizes; about 20 s of notebook time this way), and nothing the API requests depend on
    # (models, prompts, studies, K, sampling, the served policy) changes
    rerun = tmp_path / "rerun.yaml"
    rerun.write_text(f"extends: {ROOT / 'configs' / 'rehearsal.yaml'}\nname: rehearsal\nmetrics:\n  bertscore:\n    enabled: false\n"
                     "selection:\n  names: [chamfer]\n  policies: [sft]\n  n_val: 0\n", encoding="utf-8")
    # (the rerun's file sets its own selection.n_val: the other sizes reach it with --set, as the first run's did)
    again_sizes = {k: v for k, v in SIZES.items() if k != "selection.n_val"}
    full, cheap = load_profile("rehearsal", SIZES).to_dict(), load_profile(str(rerun), again_sizes).to_dict()
    for d in (full, cheap):
        d["metrics"]["bertscore"].pop("enabled")
        for key in ("names", "policies", "n_val"):
            d["selection"].pop(key)
    assert cheap == full  # everything else, the API requests' settings among it, is the rehearsal's
    again = subprocess.run(["bash", str(ROOT / "run_all.sh"), "--profile", str(rerun), "--out", str(tmp_path),
                            "--only", "05", *_set(again_sizes)], capture_output=True, text=True, timeout=1800)
    assert again.returncode == 0, again.stderr[-2000:]
    second = _outputs(tmp_path / "runs" / "rehearsal" / "notebooks" / "05_selection.ipynb")
    for prompt in ("p1", "p2"):
        assert f"tiny-sft [{prompt}] via http://127.0.0.1:" in first and f"tiny-sft [{prompt}] via" in second
    assert first.count(" 0 cached, ") == 2 and " 0 API calls" not in first, first[-3000:]
    assert second.count("0 requested (0 ok, 0 failed), 0 API calls") == 2, second[-3000:]


def _outputs(path: Path) -> str:
    """The text a notebook's cells printed."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    return "\n".join("".join(o.get("text", "")) for c in nb["cells"] for o in c.get("outputs", []))
