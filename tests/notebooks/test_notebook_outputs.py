"""The rule for executed notebooks' outputs (issue 26): short cells, no raw progress bars, warnings folded.

:func:`sdrlib.utils.output_problems` is applied to the smoke run's executed notebooks in
``test_notebooks_smoke.py::test_run_all_smoke`` (no second smoke run here); this file checks the rule itself
on small hand-made notebooks, the ``quiet`` switches and the warning folder.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import nbformat
import pytest

from sdrlib.utils import folded_warnings, output_problems, output_sizes, quiet

ROOT = Path(__file__).resolve().parents[2]


def _nb(*outputs: list[dict]) -> dict:
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell("# t"))
    for outs in outputs:
        c = nbformat.v4.new_code_cell("x")
        c.outputs = [nbformat.from_dict(o) for o in outs]
        nb.cells.append(c)
    return nbformat.from_dict(nb)


def _stream(text: str, name: str = "stdout") -> dict:
    return {"output_type": "stream", "name": name, "text": text}


def test_short_outputs_pass_and_images_count_as_nothing():
    png = {"output_type": "display_data", "data": {"image/png": "AAAA" * 5000, "text/plain": "<Figure>"},
           "metadata": {}}
    nb = _nb([_stream("a\nb\n")], [png], [])
    assert output_problems(nb) == []
    assert [r["chars"] for r in output_sizes(nb)] == [4, 0, 0]
    wide = {"output_type": "execute_result", "execution_count": 1, "metadata": {},
            "data": {"text/plain": "wrapped\n" * 60, "text/html": "<table>" + "<tr><td>1</td></tr>" * 12}}
    assert output_problems(_nb([wide])) == []  # a wide table's wrapped plain text is not what a reader sees
    assert output_sizes(_nb([wide]))[0]["lines"] == 12


@pytest.mark.parametrize("outs, expect", [
    ([_stream("line\n" * 41)], "41 lines of output (> 40)"),
    ([_stream("x" * 4001 + "\n")], "characters of output (> 4,000)"),
    ([{"output_type": "execute_result", "execution_count": 1, "metadata": {},
       "data": {"text/plain": "wrapped\n" * 30, "text/html": "<table>" + "<tr><td>1</td></tr>" * 45}}],
     "45 lines of output"),
    ([_stream("\rLoading weights:   0%|          | 0/199 [00:00<?, ?it/s]", "stderr")], "raw progress bar"),
    ([{"output_type": "execute_result", "execution_count": 1, "metadata": {},
       "data": {"text/plain": "     a\n0    1\n...  ...\n9    9\n\n[144 rows x 12 columns]", "text/html": "<table/>"}}],
     "a table of 144 rows x 12 columns cut by pandas"),
    ([_stream("valid: {'SFT/s0': np.float64(0.99), 'SFT/s1': np.float64(1.0)}\n")], "raw numpy values"),
    ([_stream("step 3/10 [00:02<00:05, 1.5it/s]\n", "stderr")], "raw progress bar"),
    ([_stream("Casting the dataset: 100%|##########| 2/2 [00:00<00:00,  8.40 examples/s]\n", "stderr")],
     "raw progress bar"),
])
def test_long_outputs_and_progress_bars_are_caught(outs, expect):
    probs = output_problems(_nb([_stream("ok\n")], outs))
    assert len(probs) == 1 and probs[0].startswith("cell 2: ") and expect in probs[0], probs


def test_a_generated_report_printed_through_one_line_reads_as_text():
    """A sampled report can hold a carriage return: printed raw it redraws the line (caught as a progress bar);
    through one_line it is one line of text with the same words."""
    from sdrlib.utils import one_line

    report = "<think> Heart size is normal.\r Lungs are clear.\n</think> <answer> No acute process. </answer>"
    assert "raw progress bar" in " ".join(output_problems(_nb([_stream(f"CHOSEN #0\n   {report}\n")])))
    shown = one_line(report)
    assert output_problems(_nb([_stream(f"CHOSEN #0\n   {shown}\n")])) == []
    assert shown.split() == report.split() and "\r" not in shown and "\n" not in shown


def test_folded_warnings_print_one_counted_line_per_category():
    lines = []
    with folded_warnings(show=lines.append) as caught:
        for i in range(22):
            warnings.warn(f"did not converge on {i} pairs", RuntimeWarning)
        warnings.warn("deprecated", FutureWarning)
    assert len(caught) == 23
    assert lines[0].startswith("folded 22 RuntimeWarning (") and "did not converge on 0 pairs" in lines[0]
    assert lines[1].startswith("folded 1 FutureWarning")
    with folded_warnings(show=lines.append):
        pass
    assert len(lines) == 2  # no warning, no line


def test_quiet_switches_off_the_hugging_face_progress_bars():
    code = ("import transformers, sdrlib.utils as u; u.quiet(); "
            "from transformers.utils import logging as l; import huggingface_hub.utils as h, os; "
            "print(l.is_progress_bar_enabled(), h.are_progress_bars_disabled(), os.environ['HF_HUB_DISABLE_PROGRESS_BARS'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(Path.home())})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "True", "1"]


def test_the_script_reports_the_largest_cell_and_fails_on_problems(tmp_path):
    nbformat.write(_nb([_stream("a\n")], [_stream("b\n" * 50)]), tmp_path / "01_x.ipynb")
    nbformat.write(_nb([_stream("fine\n")]), tmp_path / "02_y.ipynb")
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_notebook_outputs.py"), str(tmp_path), "--all"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stderr
    row = next(line for line in run.stdout.splitlines() if line.startswith("01_x.ipynb")).split()
    assert row[1:4] == ["2", "100", "50"]
    assert "cell 2: 50 lines of output (> 40)" in run.stdout
    (tmp_path / "01_x.ipynb").unlink()
    assert subprocess.run([sys.executable, str(ROOT / "scripts" / "check_notebook_outputs.py"), str(tmp_path)],
                          capture_output=True, timeout=120).returncode == 0


def test_training_summaries_are_one_short_line(capsys):
    """A run's progress line ends as its summary (one line per run in a notebook), paths from ``runs/`` on."""
    from sdrlib.training.runlog import Progress, short_path

    assert short_path(Path("/tmp/x/runs/cpu/grpo/fmt/seed0/train.log")) == "runs/cpu/grpo/fmt/seed0/train.log"
    assert short_path(Path("/elsewhere/train.log")) == "/elsewhere/train.log"
    p = Progress(4, "GRPO fmt seed 0")  # outside a kernel: a tqdm bar on stderr, the summary on stdout
    p.update(4)
    p.close("GRPO fmt seed 0: 4 steps in 1 s")
    assert capsys.readouterr().out == "GRPO fmt seed 0: 4 steps in 1 s\n"


def test_a_summary_line_names_its_log_unless_the_caller_names_the_logs_once(tmp_path):
    """Runs trained side by side print one line each without the log's path; notebook 04's training cell stays
    short (24 runs on the cpu profile: 3,646 characters with a path on every line)."""
    import pandas as pd

    from sdrlib.training import summary_line
    from sdrlib.training.runlog import GRPOResult

    run = tmp_path / "runs" / "cpu" / "grpo" / "chamfer" / "seed0"
    run.mkdir(parents=True)
    pd.DataFrame({"step": range(1, 9), "reward": [1.0] * 4 + [2.0] * 4}).to_csv(run / "curves.csv", index=False)
    res = GRPOResult(run, run / "final", run / "curves.csv", 12.0, 1.0, 0.5, {},
                     info={"reward": "chamfer", "seed": 0, "steps": 8, "reward_share": 0.5})
    full = summary_line(res)
    assert full.endswith("(runs/cpu/grpo/chamfer/seed0/train.log)")
    short = summary_line(res, with_log=False)
    assert short == "GRPO chamfer seed 0: 8 steps, 12 s, reward 1.000 -> 2.000 (first/last 4 steps), reward time 50%"
