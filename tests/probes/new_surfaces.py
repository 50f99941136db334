"""Run: ``PYTHONPATH=. .venv/bin/python tests/probes/new_surfaces.py`` (not collected by pytest; the fixes it found each
have a test, docs/bad_input.md). Probe pass over the surfaces this wave added: metric registry, plugins key, verdict rule, battery, table names,
dataset/family registries (new checks), readme_numbers new flags. Each probe: clear (named error), defined (a
documented result), crash (an unhelpful exception), silent (a wrong result without a word), hang."""
import math, sys, tempfile, traceback
from pathlib import Path
import numpy as np, pandas as pd
HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE)); sys.path.insert(0, str(HERE / "metrics"))

from _harness import Probes

P = Probes(seconds=60)
probe = P.probe

# --- metric registry
from sdrlib.metrics import registry as MR
probe("metric: register a built-in name", lambda: MR.register_metric_group(MR.MetricGroup("rouge", section=lambda *a: [])), "error")
probe("metric: empty name", lambda: MR.register_metric_group(MR.MetricGroup("", section=lambda *a: [])), "error")
probe("metric: no compute", lambda: MR.register_metric_group(MR.MetricGroup("toyx")), "error")
probe("metric: section not callable", lambda: MR.register_metric_group(MR.MetricGroup("toyy", section=3)), "error")
probe("metric: unregister a built-in", lambda: MR.unregister_metric_group("bleu"), "error")
probe("metric: get unknown", lambda: MR.metric_group("nope"), "error")
from sdrlib.metrics.suite import score_reports
probe("metric: score_reports unknown group", lambda: score_reports(["x"], [{"findings": "a", "impression": "b"}], metrics=["nope"]), "error")
probe("metric: metrics as one string (documented: one group)", lambda: score_reports(["x"], [{"findings": "a", "impression": "b"}], metrics="rouge"), lambda r: "rouge1" in {x.name for x in r.results["findings"]})

# --- plugins key
from sdrlib.config import load_profile
tmp = Path(tempfile.mkdtemp())
def prof(text):
    p = tmp / f"p{len(P.results)}.yaml"; p.write_text("extends: smoke\n" + text); return load_profile(str(p))
probe("plugins: not a list", lambda: prof("plugins: foo.py\n"), "error")
probe("plugins: a number", lambda: prof("plugins: [3]\n"), "error")
probe("plugins: empty string", lambda: prof("plugins: ['']\n"), "error")
probe("plugins: module that does not exist", lambda: prof("plugins: [no_such_module_xyz]\n"), "error")
(tmp / "raises.py").write_text("raise SystemExit(3)\n")
probe("plugins: a plugin calling SystemExit", lambda: prof("plugins: [raises.py]\n"), "error")
(tmp / "syntax.py").write_text("def (:\n")
probe("plugins: syntax error", lambda: prof("plugins: [syntax.py]\n"), "error")
probe("plugins: a directory", lambda: prof(f"plugins: ['{tmp}']\n"), "error")
(tmp / "ok_empty.py").write_text("")
probe("plugins: a plugin registering nothing", lambda: prof("plugins: [ok_empty.py]\n"), lambda c: c.plugins == [str(tmp / 'ok_empty.py')])

# --- verdict rule
from sdrlib.metrics import verdict as V
probe("verdict: holm of strings", lambda: V.holm(["a", 0.1]), "error")
probe("verdict: holm p > 1", lambda: V.holm([1.5, 0.01]), "error")
probe("verdict: holm negative p", lambda: V.holm([-0.1, 0.01]), "error")
probe("verdict: NaN diff", lambda: V.verdict(diff=float("nan"), p_adjusted=0.01, ci_low=0.1, ci_high=0.2), lambda v: v == V.NO_DIFF)
probe("verdict: detectable with negative SE", lambda: V.detectable_effect(seed_sd=0.01, n_seeds=3, study_se=-0.01), "error")
probe("verdict: alpha out of range", lambda: V.detectable_effect(seed_sd=0.01, n_seeds=3, study_se=0.01, alpha=1.5), "error")
probe("verdict: family table missing p_value", lambda: V.family_verdicts(pd.DataFrame({"diff": [0.1]}), n_studies=10), "error")
probe("verdict: empty family", lambda: V.family_verdicts(pd.DataFrame(columns=["diff", "p_value", "ci_low", "ci_high"]), n_studies=10), lambda t: len(t) == 0)
probe("verdict: studies_needed n=0", lambda: V.studies_needed(0.01, 0.007, 0), lambda v: math.isnan(v))

# --- battery
from sdrlib.experiments import battery
probe("battery: unknown reward", lambda: battery.run_battery(["chamfr"], None, None, []), "error")
probe("battery: rewards as one string", lambda: battery.run_battery("chamfer", None, None, []), "error")
probe("battery: empty rewards", lambda: battery.run_battery([], None, None, []), lambda t: len(t) == 0)
probe("battery: summary of an empty table", lambda: battery.battery_summary(pd.DataFrame(columns=["reward", "label", "case", "category", "passed"])), lambda t: len(t) == 0)

# --- table names
from sdrlib import table_names as tn
probe("table_names: grpo_group unknown section (a named ValueError: the module imports nothing)", lambda: tn.grpo_group("x", "nosection"), ValueError)
import operator
probe("table_names: TABLES is read-only", lambda: operator.setitem(tn.TABLES, "x", "y"), TypeError)

# --- registries (new checks)
from sdrlib.data.registry import register_dataset, Dataset
probe("dataset: aliases as one string", lambda: register_dataset(Dataset("mydata", "X", lambda c, s: None, aliases="abc")), "error")
from sdrlib.distances.registry import register_family, Family
from sdrlib.distances.registry import get, unregister_family
def _sinkhorn_x():
    register_family(Family("sinkhorn_x", "a:b", "a:b"))
    try:
        return get("sinkhorn_x").family
    finally:
        unregister_family("sinkhorn_x")
probe("family: a name next to a family's settings (sinkhorn_x) means the new family everywhere", _sinkhorn_x, lambda f: f == "sinkhorn_x")

P.report()
