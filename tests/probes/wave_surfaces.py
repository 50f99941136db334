"""Run: ``PYTHONPATH=. .venv/bin/python tests/probes/wave_surfaces.py`` (not collected by pytest; every fix it found
has a test and a row in docs/bad_input.md). Probe pass over the surfaces added or changed by the latest changes: the
SFT start (``sft.processes``, its launch refusing other records), ``sft.effective_batch`` / ``grpo.effective_batch``
and :func:`sdrlib.config.accumulation`, ``metrics.allow_substitutes``, :mod:`sdrlib.cpuload`, ``python -m
sdrlib.distances warm``, ``benchmarks/profile_run.py``, ``run_all.sh --set``, ``scripts/setup.sh --dry-run``, ``python
-m sdrlib.gpu_check``'s arguments, the study's and the claims' command lines, :func:`sdrlib.rewards.reward_label` and
the hedges toward absence of the labeler. Nothing trains, scores, compiles or installs: every call that would start
work (a launch, a notebook, a gpu_check part, the kernels' warm-up, a study run) is replaced by a sentinel ``Work``, so
an argument that reaches it was accepted. Each probe: clear (a named error: for a command, one line on stderr naming
what was wrong, exit 2), defined (a documented result), crash (an unhelpful exception, a traceback, a usage block),
silent (a wrong result without a word: for a command, a bad argument that reached work), hang. About a minute."""
import contextlib
import importlib
import importlib.util
import io
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
from sdrlib.errors import SDRError  # noqa: E402

from _harness import Probes  # noqa: E402


class Work(Exception):
    """Raised where the probed call would start work (a launch, a notebook, a part, a compilation)."""


class _Clear(SDRError):
    pass


P = Probes(seconds=60, work=Work)
probe = P.probe
tmp = Path(tempfile.mkdtemp(prefix="wave_probe_"))
os.environ["SDR_ROOT"] = str(tmp / "root")


def _work(*a, **k):
    raise Work


@contextlib.contextmanager
def patched(*triples):
    """``(object, attribute, value)`` set for the block, restored after."""
    old = [getattr(o, n) for o, n, _ in triples]
    for o, n, v in triples:
        setattr(o, n, v)
    try:
        yield
    finally:
        for (o, n, _), v in zip(triples, old):
            setattr(o, n, v)


def cli(main, argv, *, must=(), patches=(), cwd=None, ok=(0,)):
    """``main(argv)`` in-process with ``patches`` applied: a refusal in one line on stderr (exit 2) naming every
    ``must`` raises a clear error; an exit status in ``ok`` is returned; anything else (a traceback, a usage block,
    a line naming something else, another status) raises RuntimeError (a crash)."""
    err, here = io.StringIO(), os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with patched(*patches), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                rc = main(list(argv))
            except SystemExit as e:
                rc = e.code
    finally:
        os.chdir(here)
    text = err.getvalue()
    lines = [x for x in text.splitlines() if x.strip()]
    if rc == 2 and len(lines) == 1 and "Traceback" not in text and all(m in text for m in must):
        raise _Clear(lines[-1])
    if rc in ok:
        return rc
    raise RuntimeError(f"rc {rc}, {len(lines)} line(s): {text.strip()[-150:]}")


file_ = tmp / "a_file.txt"
file_.write_text("x")
empty = tmp / "empty"
empty.mkdir()

# --- sft.processes, effective batches, allow_substitutes (the profile)
from sdrlib.config import accumulation, load_profile  # noqa: E402


def prof(overrides, name="smoke"):
    return load_profile(name, overrides)


for v in (0, -1, 2.5, True, "2", None, "two"):
    probe(f"profile: sft.processes = {v!r}", lambda v=v: prof({"sft.processes": v}).sft.processes, "error")
probe("profile: sft.processes = 2 (tiny policy: two CPU processes)", lambda: prof({"sft.processes": 2}).sft.processes,
      lambda n: n == 2)
probe("profile: sft.processes = 2 on a GPU policy (paper)", lambda: prof({"sft.processes": 2}, "paper"), "error")
probe("profile: sft.effective_batch = -8", lambda: prof({"sft.effective_batch": -8}), "error")
probe("profile: sft.effective_batch = 6, batch_size 4 (not divisible)",
      lambda: prof({"sft.effective_batch": 6, "sft.batch_size": 4}), "error")
probe("profile: grpo.effective_batch = 7.5", lambda: prof({"grpo.effective_batch": 7.5}), "error")
probe("profile: grpo.effective_batch = True", lambda: prof({"grpo.effective_batch": True}), "error")
probe("profile: grpo.effective_batch not whole groups of num_generations", lambda: prof(
    {"grpo.effective_batch": 6, "grpo.batch_size": 2, "grpo.num_generations": 4}), "error")
probe("profile: sft.effective_batch = 8, batch_size 4 (grad_accum 2)", lambda: accumulation(
    prof({"sft.effective_batch": 8, "sft.batch_size": 4}).sft, 1, "sft"), lambda a: a == 2)
S8 = prof({"sft.effective_batch": 8, "sft.batch_size": 4}).sft
probe("accumulation: 2 processes (8 / (4 x 2) = 1)", lambda: accumulation(S8, 2, "sft"), lambda a: a == 1)
probe("accumulation: 3 processes (8 / 12: not whole)", lambda: accumulation(S8, 3, "sft"), "error")
for v in (0, -2, True, 2.5, "2"):
    probe(f"accumulation: processes {v!r}", lambda v=v: accumulation(S8, v, "sft"), "error")
probe("accumulation: effective_batch 0 keeps grad_accum (any processes)", lambda: accumulation(
    prof({"sft.grad_accum": 3}).sft, 4, "sft"), lambda a: a == 3)
for v in ("maybe", 1, 0, None, "yes"):
    probe(f"profile: metrics.allow_substitutes = {v!r}", lambda v=v: prof({"metrics.allow_substitutes": v}), "error")
probe("profile: metrics.allow_substitutes = false (stated)", lambda: prof(
    {"metrics.allow_substitutes": False}).metrics.allow_substitutes, lambda v: v is False)

# --- training.sft with processes 2: the refusal comes before anything is launched
sft_mod = importlib.import_module("sdrlib.training.sft")
from sdrlib import training  # noqa: E402
from sdrlib.data import load_split  # noqa: E402

C2 = prof({"sft.processes": 2})


def sft2(records):
    with patched((sft_mod.subprocess, "Popen", _work)):
        return training.sft(C2, train_records=records, progress=False)


TRAIN = load_split(C2, "train")
probe("training.sft: processes 2, records other than the profile's split", lambda: sft2(TRAIN[:3]), "error")
probe("training.sft: processes 2, no records (reaches the launch)", lambda: sft2(None), lambda out: False)
probe("training.sft: processes 2, the split reversed (another order than the launched processes read)",
      lambda: sft2(list(reversed(TRAIN))), "error")
probe("training.sft: processes 2, an empty list", lambda: sft2([]), "error")

# --- sdrlib.cpuload
from sdrlib.cpuload import CpuSampler, children_cpu_seconds  # noqa: E402


def sampler(rows):
    s = CpuSampler()
    s.cores = 2
    s.rows = list(rows)
    return s


ROWS = [(float(t), b) for t, b in zip(range(2, 22, 2), [2, 2, 1, 1, 1, 2, 1, 1, 2, 2])]
probe("cpuload: idle_stretch with no rows (nothing recorded)", lambda: sampler([]).idle_stretch(0, 10),
      lambda v: v is None)
probe("cpuload: idle_stretch over the rows (6 s: three samples with a core idle)", lambda: sampler(ROWS).idle_stretch(
    0, 30), lambda v: v == 6.0)
probe("cpuload: idle_stretch reversed window (t0 > t1)", lambda: sampler(ROWS).idle_stretch(30, 0), "error")
probe("cpuload: idle_stretch t0 NaN", lambda: sampler(ROWS).idle_stretch(float("nan"), 30), "error")
probe("cpuload: idle_stretch t1 NaN", lambda: sampler(ROWS).idle_stretch(0, float("nan")), "error")
probe("cpuload: idle_stretch a window before every sample", lambda: sampler(ROWS).idle_stretch(-100, -50),
      lambda v: v == 0.0)
probe("cpuload: idle_stretch text bounds", lambda: sampler(ROWS).idle_stretch("0", "30"), "error")
probe("cpuload: idle_stretch a NaN sample (not counted as idle)", lambda: sampler(
    [(2.0, float("nan")), (4.0, 1.0)]).idle_stretch(0, 10), lambda v: v == 2.0)
probe("cpuload: csv of no rows (header only)", lambda: sampler([]).csv(0.0), lambda s: s == "seconds,busy_cores\n")
probe("cpuload: children_cpu_seconds (a finite float >= 0)", children_cpu_seconds,
      lambda v: isinstance(v, float) and math.isfinite(v) and v >= 0)

# --- python -m sdrlib.distances warm (the warm-up itself replaced by Work)
dmain = importlib.import_module("sdrlib.distances.__main__")
W = ((dmain, "warm", _work),)
probe("distances warm: warm (reaches the warm-up)", lambda: cli(dmain.main, ["warm"], patches=W), lambda rc: False)
probe("distances warm: no argument", lambda: cli(dmain.main, [], must=("warm",), patches=W), "error")
probe("distances warm: warm extra", lambda: cli(dmain.main, ["warm", "extra"], must=("extra",), patches=W), "error")
probe("distances warm: WARM", lambda: cli(dmain.main, ["WARM"], must=("WARM",), patches=W), "error")
probe("distances warm: --help (usage, exit 0)", lambda: cli(dmain.main, ["--help"], patches=W), lambda rc: rc == 0)

# --- benchmarks/profile_run.py (reads a finished run's files)
spec = importlib.util.spec_from_file_location("profile_run", ROOT / "benchmarks" / "profile_run.py")
profile_run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(profile_run)
bad_run = tmp / "bad_run"
(bad_run / "results").mkdir(parents=True)
(bad_run / "results" / "run_summary.csv").write_text("this is,not\na run summary\n")
garbage = tmp / "garbage_run"
(garbage / "results").mkdir(parents=True)
(garbage / "results" / "run_summary.csv").write_bytes(b"\x00\xff\xfe binary")
probe("profile_run: --root missing", lambda: cli(profile_run.main, ["--root", str(tmp / "nope")],
                                                 must=("--root",)), "error")
probe("profile_run: --root a file", lambda: cli(profile_run.main, ["--root", str(file_)], must=("--root",)), "error")
probe("profile_run: --root an empty folder (no run)", lambda: cli(profile_run.main, ["--root", str(empty)],
                                                                  must=("--root",)), "error")
probe("profile_run: run_summary.csv without its columns", lambda: cli(profile_run.main, ["--root", str(bad_run)],
                                                                      must=("run_summary.csv",)), "error")
probe("profile_run: run_summary.csv binary", lambda: cli(profile_run.main, ["--root", str(garbage)],
                                                         must=("run_summary.csv",)), "error")
probe("profile_run: --cells -1", lambda: cli(profile_run.main, ["--root", str(ROOT), "--cells", "-1"],
                                             must=("--cells",)), "error")
probe("profile_run: --cells abc", lambda: cli(profile_run.main, ["--root", str(ROOT), "--cells", "abc"],
                                              must=("--cells",)), "error")
probe("profile_run: --before missing", lambda: cli(profile_run.main, ["--root", str(bad_run), "--before",
                                                                      str(tmp / "nope")], must=("--before",)), "error")
probe("profile_run: --bogus", lambda: cli(profile_run.main, ["--bogus"], must=("--bogus",)), "error")

# --- run_all.sh --set (sdrlib.runner.main in-process; record_machine, the first step after every check, is Work)
from sdrlib import runner  # noqa: E402

R = ((runner, "record_machine", _work),)


def run_all(*sets, must=()):
    argv = ["--profile", "smoke", "--only", "00", "--out", str(tmp / "run_out")]
    for s in sets:
        argv += ["--set", s]
    return cli(runner.main, argv, must=must, patches=R)


(tmp / "run_out").mkdir()
probe("run_all --set: unknown key", lambda: run_all("grpo.nosuch=1", must=("nosuch",)), "error")
probe("run_all --set: unknown section", lambda: run_all("nosuch.key=1", must=("nosuch",)), "error")
probe("run_all --set: bad value type (grpo.seeds=abc)", lambda: run_all("grpo.seeds=abc", must=("grpo.seeds",)),
      "error")
probe("run_all --set: a list for a number", lambda: run_all("grpo.seeds=[1, 2]", must=("grpo.seeds",)), "error")
probe("run_all --set: no '='", lambda: run_all("grpo.seeds", must=("KEY=VALUE",)), "error")
probe("run_all --set: '=3' (no key)", lambda: run_all("=3", must=("KEY=VALUE",)), "error")
probe("run_all --set: a value that is not YAML", lambda: run_all("grpo.seeds=[1,", must=("YAML",)), "error")
probe("run_all --set: key given twice", lambda: run_all("grpo.seeds=2", "grpo.seeds=3", must=("twice",)), "error")
probe("run_all --set: key given twice, spaces around it", lambda: run_all("grpo.seeds=2", " grpo.seeds =3",
                                                                        must=("twice",)), "error")
probe("run_all --set: a section as the key, a mapping (grpo={}: nothing changed)", lambda: run_all("grpo={}"),
      lambda rc: False)
probe("run_all --set: a section as the key, a number (grpo=3)", lambda: run_all("grpo=3", must=("grpo",)), "error")
probe("run_all --set: paths.runs='' (empty path)", lambda: run_all("paths.runs=''", must=("paths.runs",)), "error")
probe("run_all --set: paths.runs=~nosuchuser/x", lambda: run_all("paths.runs=~nosuchuser/x",
                                                                must=("~nosuchuser",)), "error")
probe("run_all --set: paths.runs elsewhere (a key that changes paths; accepted)", lambda: run_all(
    f"paths.runs={tmp / 'elsewhere'}"), lambda rc: False)
probe("run_all --set: sft.processes=2 (accepted)", lambda: run_all("sft.processes=2"), lambda rc: False)
probe("run_all --set: sft.processes=0", lambda: run_all("sft.processes=0", must=("sft.processes",)), "error")
probe("run_all --set: metrics.allow_substitutes=maybe", lambda: run_all("metrics.allow_substitutes=maybe",
                                                                       must=("allow_substitutes",)), "error")
probe("run_all --set: --allow-substitutes with --set metrics.allow_substitutes=false", lambda: cli(
    runner.main, ["--profile", "smoke", "--only", "00", "--allow-substitutes", "--set",
                  "metrics.allow_substitutes=false"], must=("allow_substitutes",), patches=R), "error")
probe("run_all --set: profile key (--set profile=x)", lambda: run_all("profile=x", must=("profile",)), "error")
probe("run_all: --only 99 (no such notebook)", lambda: cli(runner.main, ["--profile", "smoke", "--only", "99"],
                                                           must=("99",), patches=R), "error")

# --- scripts/setup.sh: dry runs and unknown flags only, from a copy in an empty folder (nothing can be installed)
fake = tmp / "setup_copy"
(fake / "scripts").mkdir(parents=True)
shutil.copy(ROOT / "scripts" / "setup.sh", fake / "scripts" / "setup.sh")


def setup(*args, must=(), env=None):
    p = subprocess.run(["bash", str(fake / "scripts" / "setup.sh"), *args], capture_output=True, text=True,
                       timeout=30, env={**os.environ, **(env or {})})
    if (fake / ".venv").exists():
        raise Work  # something ran
    lines = [x for x in (p.stderr + p.stdout).splitlines() if x.strip()]
    if p.returncode != 0 and len(lines) == 1 and all(m in lines[0] for m in must):
        raise _Clear(lines[0])
    if p.returncode == 0:
        return p.stdout
    raise RuntimeError(f"rc {p.returncode}: {(p.stderr + p.stdout).strip()[-150:]}")


def dry_ok(out, gpu):
    lines = [x for x in out.splitlines() if x.strip()]
    cmds = [x for x in lines if x.startswith("+ ")]
    gpu_set = any("[gpu]" in x.replace("\\", "") for x in cmds)  # printf %q escapes the brackets
    return (all(x.startswith(("+ ", "setup: ")) for x in lines) and gpu_set == gpu
            and any("sdrlib.distances warm" in x for x in cmds) and "nothing was installed" in lines[-1])


probe("setup.sh: --gpu --dry-run (prints the gpu set)", lambda: setup("--gpu", "--dry-run"),
      lambda out: dry_ok(out, True))
probe("setup.sh: --dry-run --dry-run", lambda: setup("--dry-run", "--dry-run"), lambda out: dry_ok(out, False))
probe("setup.sh: --dry-run --gpu --gpu", lambda: setup("--dry-run", "--gpu", "--gpu"), lambda out: dry_ok(out, True))
probe("setup.sh: --dry-run --bogus", lambda: setup("--dry-run", "--bogus", must=("--bogus",)), "error")
probe("setup.sh: --bogus --dry-run", lambda: setup("--bogus", "--dry-run", must=("--bogus",)), "error")
probe("setup.sh: --gpu=1 --dry-run", lambda: setup("--gpu=1", "--dry-run", must=("--gpu=1",)), "error")
probe("setup.sh: -n (not a dry-run flag)", lambda: setup("-n", "--dry-run", must=("-n",)), "error")
probe("setup.sh: '' (an empty argument) --dry-run", lambda: setup("", "--dry-run", must=("''",)), "error")
probe("setup.sh: --dry-run --help", lambda: setup("--dry-run", "--help"), lambda out: "--dry-run" in out)
probe("setup.sh: SDR_PYTHON=nosuch --dry-run", lambda: setup("--dry-run", must=("SDR_PYTHON",),
                                                             env={"SDR_PYTHON": "nosuch-python"}), "error")

# --- python -m sdrlib.gpu_check: arguments only (every part replaced by Work)
from sdrlib import gpu_check  # noqa: E402

G = ((gpu_check, "run_part", _work),)
gmain = gpu_check.main
probe("gpu_check: --bogus", lambda: cli(gmain, ["--bogus"], must=("--bogus",), patches=G), "error")
probe("gpu_check: --only nosuch", lambda: cli(gmain, ["--only", "nosuch"], must=("nosuch",), patches=G), "error")
probe("gpu_check: --only engine,nosuch", lambda: cli(gmain, ["--only", "engine,nosuch"], must=("nosuch",),
                                                     patches=G), "error")
probe("gpu_check: --only ',' (no part named)", lambda: cli(gmain, ["--only", ",", "--out", str(tmp / "g0")],
                                                           must=("--only",), patches=G), "error")
probe("gpu_check: --out a file", lambda: cli(gmain, ["--out", str(file_)], must=("--out",), patches=G), "error")
probe("gpu_check: --out under a file", lambda: cli(gmain, ["--out", str(file_ / "sub")], must=("--out",),
                                                   patches=G), "error")
probe("gpu_check: --out unwritable (/proc/sdr_probe)", lambda: cli(gmain, ["--out", "/proc/sdr_probe"],
                                                                  must=("--out",), patches=G), "error")
probe("gpu_check: --out ~nosuchuser/x", lambda: cli(gmain, ["--out", "~nosuchuser/x"], must=("~nosuchuser",),
                                                    patches=G, cwd=tmp), "error")
probe("gpu_check: --out '' (empty)", lambda: cli(gmain, ["--out", ""], must=("--out",), patches=G, cwd=tmp), "error")
probe("gpu_check: --help (exit 0)", lambda: cli(gmain, ["--help"], patches=G), lambda rc: rc == 0)
probe("gpu_check: --out a new folder (reaches the first part)", lambda: cli(gmain, ["--out", str(tmp / "g1")],
                                                                            patches=G), lambda rc: False)

# --- python -m sdrlib.experiments.study (training / scoring replaced by Work)
from sdrlib.experiments.study import cli as study_cli, pilot as study_pilot, runs as study  # noqa: E402

SW = ((study_pilot, "pilot_table", _work), (study_pilot, "choice_table", _work), (study, "score_all", _work),
      (study.training, "sft", _work), (study.training, "grpo", _work))
SP = ("--profile", "smoke")
sc = study_cli.main
probe("study_cli: no subcommand", lambda: cli(sc, [], must=("sdrlib.experiments.study",), patches=SW), "error")
probe("study_cli: unknown subcommand", lambda: cli(sc, ["nosuch"], must=("nosuch",), patches=SW), "error")
probe("study_cli: pilot --reward nosuch", lambda: cli(sc, ["pilot", *SP, "--reward", "nosuch", "--n-val", "4"],
                                                      must=("nosuch",), patches=SW), "error")
probe("study_cli: table --out X --markdown X", lambda: cli(sc, ["table", *SP, "--evidence", str(empty), "--out",
                                                                str(tmp / "t.csv"), "--markdown", str(tmp / "t.csv")],
                                                           must=("t.csv",), patches=SW), "error")
probe("study_cli: choose --variants 'a:sft.max_steps=99'", lambda: cli(sc, ["choose", *SP, "--variants",
                                                                           "a:sft.max_steps=99"],
                                                                       must=("sft.max_steps",), patches=SW), "error")
probe("study_cli: choose --variants 'a:grpo.beta=0.1,grpo.beta=0.2' (key twice)", lambda: cli(
    sc, ["choose", *SP, "--variants", "a:grpo.beta=0.1,grpo.beta=0.2"], must=("twice",), patches=SW), "error")
probe("study_cli: choose --variants 'a' 'a' (variant twice)", lambda: cli(sc, ["choose", *SP, "--variants", "a", "a"],
                                                                         must=("a",), patches=SW), "error")
probe("study_cli: run --set grpo.seeds=2 --set grpo.seeds=3", lambda: cli(
    sc, ["run", *SP, "--evidence", str(tmp / "ev1"), "--set", "grpo.seeds=2", "--set", "grpo.seeds=3"],
    must=("twice",), patches=SW), "error")
probe("study_cli: run --set sft.processes=0", lambda: cli(sc, ["run", *SP, "--evidence", str(tmp / "ev2"), "--set",
                                                               "sft.processes=0"], must=("sft.processes",),
                                                          patches=SW), "error")

# --- python -m sdrlib.experiments.claims (reads result tables only)
from sdrlib.experiments.claims.cli import main as claims_main  # noqa: E402

probe("claims: no argument", lambda: cli(claims_main, [], must=("results_dir",)), "error")
probe("claims: a missing folder", lambda: cli(claims_main, [str(tmp / "nope")], must=("nope",)), "error")
probe("claims: a file as the folder", lambda: cli(claims_main, [str(file_)], must=("a_file",)), "error")
probe("claims: --mode nosuch", lambda: cli(claims_main, [str(empty), "--mode", "nosuch"], must=("--mode",)), "error")
probe("claims: --min-int abc", lambda: cli(claims_main, [str(empty), "--min-int", "abc"], must=("--min-int",)),
      "error")
probe("claims: --label twice for one run", lambda: cli(claims_main, [str(empty), "--label", "a", "--label", "b"],
                                                       must=("--label",)), "error")
probe("claims: --check a missing file", lambda: cli(claims_main, [str(empty), "--check", str(tmp / "nope.md")],
                                                    must=("nope.md",)), "error")
probe("claims: --conclusions-csv inside the results folder", lambda: cli(
    claims_main, [str(empty), "--conclusions-csv", str(empty / "c.csv")], must=("--conclusions-csv",)), "error")
probe("claims: --conclusions-csv with --check", lambda: cli(
    claims_main, [str(empty), "--check", str(file_), "--conclusions-csv", str(tmp / "c.csv")],
    must=("--conclusions-csv",)), "error")
probe("claims: --only-here nosuch", lambda: cli(claims_main, [str(empty), "--only-here", "nosuch"], must=("nosuch",)),
      "error")
probe("claims: --also a missing folder", lambda: cli(claims_main, [str(empty), "--also", str(tmp / "nope")],
                                                     must=("nope",)), "error")
probe("claims: print an empty results folder (each group: table missing)", lambda: cli(claims_main, [str(empty)]),
      lambda rc: rc == 0)

# --- reward_label
from sdrlib.rewards import reward_label  # noqa: E402

probe("reward_label: 'chamfer'", lambda: reward_label("chamfer"), lambda s: s == "R_Cham")
probe("reward_label: 'sft'", lambda: reward_label("sft"), lambda s: s == "SFT")
probe("reward_label: an unknown name (a baseline column: R_<name>)", lambda: reward_label("fmt"),
      lambda s: s == "R_fmt")
probe("reward_label: ''", lambda: reward_label(""), "error")
probe("reward_label: None", lambda: reward_label(None), "error")
probe("reward_label: 3", lambda: reward_label(3), "error")
probe("reward_label: '  ' (blank)", lambda: reward_label("  "), "error")
probe("reward_label: 'R_' (a label, not a name)", lambda: reward_label("R_"), lambda s: s == "R_R_")
probe("reward_label: 'editgrpo_tau' (a method's prefix, a malformed configuration)",
      lambda: reward_label("editgrpo_tau"), "error")

# --- hedges toward absence (label_report) and markup
import warnings  # noqa: E402

from sdrlib.clinical import label_report  # noqa: E402
from sdrlib.clinical.labeler import UnreadableTextWarning  # noqa: E402


def lab(text):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnreadableTextWarning)
        return label_report(text)


PTX, PNA, EFF = "Pneumothorax", "Pneumonia", "Pleural Effusion"
for text, obs, want in [
    ("Pneumothorax is unlikely.", PTX, 0), ("Pneumothorax is very unlikely.", PTX, 0),
    ("PNEUMOTHORAX IS UNLIKELY.", PTX, 0), ("Unlikely pneumothorax.", PTX, 0),
    ("Pneumonia is less likely.", PNA, 0), ("Pneumonia is not likely.", PNA, 0),
    ("Doubtful small left pleural effusion.", EFF, 0), ("Findings unlikely to represent pneumonia.", PNA, 0),
    ("Atelectasis or less likely pneumonia.", PNA, -1), ("Pneumothorax: unlikely.", PTX, 0),
    ("Pneumonia is not unlikely.", PNA, -1), ("Pneumonia is likely.", PNA, -1),
    ("<b>Pneumothorax</b> is unlikely.", PTX, 0), ("Pneumothorax is unlikely, but pneumonia is present.", PNA, 1),
]:
    probe(f"label_report: {text!r} -> {obs} {want}", lambda t=text, o=obs: lab(t).get(o), lambda v, w=want: v == w)
probe("label_report: 'Small effusion, pneumothorax is unlikely.' keeps the effusion", lambda: lab(
    "Small effusion, pneumothorax is unlikely."), lambda d: d.get(EFF) == 1 and d.get(PTX) == 0)
probe("label_report: 'It is unlikely.' (no finding named)", lambda: lab("It is unlikely."),
      lambda d: d.get(PTX) is None and d.get(PNA) is None)
probe("label_report: '' (empty text: the same as no report)", lambda: lab(""), lambda d: d == lab(" "))
probe("label_report: markup only ('<p></p>') = the empty text's labels", lambda: lab("<p></p>"),
      lambda d: d == lab(""))
probe("label_report: a <script> element with a finding = the empty text's", lambda: lab(
    "<script>pneumothorax</script>"), lambda d: d == lab(""))
probe("label_report: None", lambda: label_report(None), TypeError)


def _french():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = label_report("Pas de pneumothorax. Le coeur est de taille normale.")
    if not any(issubclass(x.category, UnreadableTextWarning) for x in w):
        return {"No Finding": "no warning"}
    return out


probe("label_report: a French report (not 'No Finding', warns)", _french, lambda d: d.get("No Finding") is None)

from sdrlib.clinical import section_presence  # noqa: E402

probe("section_presence: 'Pneumothorax is unlikely.' reads as 'No pneumothorax.'", lambda: section_presence(
    ["Pneumothorax is unlikely."])[0], lambda a: (a == section_presence(["No pneumothorax."])[0]).all())

P.report()
shutil.rmtree(tmp, ignore_errors=True)
