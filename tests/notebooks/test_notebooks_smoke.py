"""End to end: ``run_all.sh --profile smoke`` over every notebook that exists, into a temporary root.

The run takes fewer studies than configs/smoke.yaml and one process where the profile has two side by side
(:data:`SIZES`, passed with ``--set``): the same notebooks, profile keys and synthetic layout. configs/smoke.yaml
itself stays as it is (scripts/hash_outputs.py compares runs of it).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runner_helpers import summary_rows, write_nb

ROOT = Path(__file__).resolve().parents[2]

#: The test's sizes on top of configs/smoke.yaml (its values in the comments). Every size stays at or above what
#: a profile key takes from it: 4 validation studies for grpo.recall_n_val and selection.n_val, 3 test studies for
#: pruning.n_test, 16 training studies for the SFT's 4 steps x batch 4; the 6 test studies hold all three strata
#: (no finding, a single finding, several findings), as the 16 did.
SIZES = {
    "data.n_train": 24,  # 48
    "data.n_val": 4,  # 16
    "data.n_test": 6,  # 16
    "embedding.bank_size": 24,  # 48: all 24 training reports
    "grpo.workers": 1,  # 2 (from cpu.yaml): see below
}
# grpo.workers: 1 runs notebooks 03-05's generations and GRPO runs in the notebook's own process, one after the
# other, instead of in two spawned worker processes. At these sizes each of the run's five worker pools cost more
# in process start and model loading than its work, and under the README's test command both cores are busy with
# the two pytest workers anyway. The side-by-side path stays covered: the rehearsal run (tests/notebooks/
# test_rehearsal.py) runs it in every notebook with the same keys, and tests/experiments/test_parallel_runs.py and
# test_generate_side_by_side.py hold it to the one-process weights, rewards and texts.


@pytest.mark.slow
def test_run_all_smoke(tmp_path):
    sizes = [a for k, v in SIZES.items() for a in ("--set", f"{k}={v}")]
    proc = subprocess.run(["bash", str(ROOT / "run_all.sh"), "--profile", "smoke", "--out", str(tmp_path),
                           "--cell-timeout", "900", *sizes], capture_output=True, text=True, timeout=3000)
    sys.stdout.write(proc.stdout[-4000:])
    sys.stderr.write(proc.stderr[-4000:])
    assert proc.returncode == 0, proc.stderr[-2000:]
    executed = sorted((tmp_path / "runs" / "smoke" / "notebooks").glob("*.ipynb"))
    sources = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert [p.name for p in executed] == [p.name for p in sources]
    assert not list((ROOT / "notebooks").glob("*.ipynb.out"))
    # every executed cell reads well: <= 40 lines and 4,000 characters of output, no raw progress bar (issue 26;
    # the rule is sdrlib.utils.output_problems, also run on any run by scripts/check_notebook_outputs.py)
    import json

    from sdrlib.utils import output_problems

    # every notebook ends in a conclusion written from its result files, and it printed something
    for p in executed:
        cells = [c for c in json.loads(p.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"
                 and "conclusion" in c.get("metadata", {}).get("tags", [])]
        assert cells and any(o.get("text") or o.get("data") for o in cells[-1].get("outputs", [])), \
            f"{p.name}: no printed conclusion"
    noisy = {p.name: output_problems(json.loads(p.read_text(encoding="utf-8"))) for p in executed}
    noisy = {k: v for k, v in noisy.items() if v}
    assert not noisy, "executed smoke notebooks with unreadable outputs: " + "; ".join(
        f"{k}: {', '.join(v)}" for k, v in noisy.items())
    # every notebook wrote its outputs under the temporary root, not the checkout
    if sources:
        assert any((tmp_path / "results").glob("*.csv"))
        # the README's "Expected results" block written from this run passes its own number check
        from sdrlib.experiments import claims, conclusions
        block = claims.marked_block(claims.results_section(tmp_path / "results"))
        assert claims.numbers_in(block) and claims.check_block(block, tmp_path / "results") == []
        # ... in both modes of scripts/readme_numbers.py --check (issue 39): exact on this run's own machine record,
        # tolerant against a README that records another kernel path (the conclusions and corpus statistics only)
        machine = json.loads((tmp_path / "results" / "machine.json").read_text())
        assert machine["kernel_path"] in ("avx2", "native") and machine["cpu_model"] and machine["versions"]["torch"]
        readme = tmp_path / "README.md"
        readme.write_text(claims.BEGIN + block + claims.END + "\n")
        script = [sys.executable, str(ROOT / "scripts" / "readme_numbers.py"), str(tmp_path / "results"),
                  "--check", str(readme)]
        exact = subprocess.run(script, capture_output=True, text=True)
        assert exact.returncode == 0 and "exact check" in exact.stderr, exact.stdout + exact.stderr
        other = conclusions.readme_machine(block)
        other["kernel_path"] = "custom: ATEN_CPU_CAPABILITY=default"
        readme.write_text(readme.read_text().replace(json.dumps(conclusions.readme_machine(block), sort_keys=True),
                                                     json.dumps(other, sort_keys=True)))
        tolerant = subprocess.run(script, capture_output=True, text=True)
        assert tolerant.returncode == 0 and "tolerant check (kernel path" in tolerant.stderr, tolerant.stderr
        # docs/glossary.md defines the column header of every table this run wrote, CSV and Markdown (issue 38;
        # the rule: tests/glossary_terms.py, the README / notebook terms: tests/project/test_glossary.py)
        from glossary_terms import report, table_headers, undefined

        headers = table_headers(tmp_path / "results")
        missing = undefined(headers)
        assert len(headers) > 100 and not missing, (
            "docs/glossary.md does not define these column headers of the smoke run's tables:\n"
            + report(missing, headers))


def test_runner_reports_failed_cell(tmp_path, monkeypatch, capsys, machine_probed_once):
    """A failing cell stops the run with exit 1 and a message naming notebook and cell; the summary says so."""
    from sdrlib import runner

    nb_dir = tmp_path / "notebooks"
    write_nb(nb_dir / "01_ok.ipynb", [("md", "# ok"), ("params", 'profile: str = "cpu"'), ("code", "x = 1")])
    write_nb(nb_dir / "02_fail.ipynb", [("md", "# fail"), ("params", 'profile: str = "cpu"'),
                                         ("code", "y = 2"), ("code", "raise RuntimeError('boom')")])
    write_nb(nb_dir / "03_never.ipynb", [("md", "# never"), ("params", 'profile: str = "cpu"')])
    monkeypatch.setenv("SDR_ROOT", str(tmp_path / "out"))
    monkeypatch.setattr(runner, "discover", lambda folder=None: runner.__dict__["_discover_in"](nb_dir))
    rc = runner.run("smoke", cell_timeout=120)
    assert rc == 1
    executed = sorted(p.name for p in (tmp_path / "out" / "runs" / "smoke" / "notebooks").glob("*.ipynb"))
    assert executed == ["01_ok.ipynb", "02_fail.ipynb"]
    rows = summary_rows(tmp_path / "out")
    # cell 4: md, params, injected parameters, y = 2, raise
    assert [(r["notebook"], r["status"]) for r in rows] == [
        ("01_ok.ipynb", "ok"), ("02_fail.ipynb", "failed at cell 4"), ("03_never.ipynb", "skipped")]
    assert "RuntimeError: boom" in rows[1]["detail"]
    out = capsys.readouterr().out
    assert "| 02_fail.ipynb | failed at cell 4: RuntimeError: boom |" in out
    rc = runner.run("smoke", only=["01"], cell_timeout=120)
    assert rc == 0
    assert [r["status"] for r in summary_rows(tmp_path / "out")] == ["ok", "skipped", "skipped"]
