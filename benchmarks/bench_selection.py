"""Best-of-K selection sweep (sdrlib.selection.bank_distances) per setting, projected to the paper's sweep.

Against the per-pair reference loop, or against the engine of another git revision in the same run
(``--compare REV``).

Run (repository root):

    .venv/bin/python benchmarks/bench_selection.py            # 50 studies x K=5 x N=5000, all 15 settings (long)
    .venv/bin/python benchmarks/bench_selection.py --quick    # 20 studies x K=5 x N=300, six settings
    .venv/bin/python benchmarks/bench_selection.py --compare c7775bd --studies 10 --reps 3   # docs/speed.md's table

For each setting: the selection sweep as notebook 05 runs it (every candidate of every study against every
bank set, Findings and Impression, all three aggregations, identical sets computed once) on a scaled-down
shape, reported per candidate x bank pair and projected to the paper's shape (1000 studies x K = 5 x N = 5000
x 2 sections = :data:`sdrlib.distances.timing.SWEEP_PAIRS` pairs per setting). Then all the settings in one
call, as notebook 05 calls it (one packing and one cosine product per chunk for all of them, and settings that
solve the same problem per pair, exact and partial OT or the Hungarian variants, solve it once). The bank is
packed once per section before the timed calls (``pack_sets``: normalising and deduplicating its sentences); a
sweep does that once whatever its number of studies, so the one-call projection adds that time once instead of
scaling it with the pairs (the benchmark's bank is the paper's N = 5000). Data: ``structured`` by default
(clustered sentence-like vectors, set sizes 1..15, d = 768; :mod:`sdrlib.distances.synthetic`, as
``benchmarks/bench_distances.workload``). Wall-clock on whatever else the machine does (the load average is
printed; process CPU time, all threads, is printed beside it and is less disturbed by other jobs). Not a test.

**Default**: beside each setting, the reference loop (``set_distance``, one pair at a time) on a sample of the
same pairs, as a ratio.

**--compare REV**: the engine of git revision REV (its ``sdrlib``, extracted with ``git archive`` into a
temporary directory, kept for the next run) against this working tree's, on the same data in the same run. Each
runs in its own worker process (two versions of one package cannot share a process); the workers build the same
workload from the same seed with this tree's generator (checked: equal digests) and run one call at a time,
alternating which goes first, so that both see the same machine. Per setting and for the one call: microseconds
per pair of each, the ratio, the projected hours, and whether the selection scores (every setting x aggregation
x section x candidate) and a sample of raw distances with their convergence flags are identical bit for bit.
GW (``gw``) is timed on ``--gw-studies`` studies (its per-pair cost is 10-100x the others') and projected beside
the total, not in it (``--no-gw`` skips it). Hours are projected from wall time and from CPU time over the solver
threads; on a quiet box the two agree, under load only the second is comparable between runs. The target (the 14
settings in one call under 1 h on the 2-core box) and its status: ``benchmarks/README.md``.

Measured 2026-12-04 (docs/speed.md; 10 studies, best of 3, quiet box): c7775bd 0.90 h,
ec9e17f 0.59 h for the 14 settings in one call, GW beside them about 4 h; scores and raw values bit for bit.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
#: the paper's selection sweep: 1000 test studies x K=5 candidates x N=5000 bank reports x 2 sections
SWEEP_PAIRS = 1000 * 5 * 5000 * 2  # sdrlib.distances.timing.SWEEP_PAIRS (checked in main; a worker imports no
#                                    sdrlib before it knows which tree's)
QUICK_SETTINGS = "chamfer,hausdorff,ot,sinkhorn_0.1,hung_nn,partial_adaptive"
SECTIONS = ("findings", "impression")
_TAG = "@@bench "  # protocol lines of a worker (anything else it prints is passed through to stderr)


# --------------------------------------------------------------------------- data (this tree's generator)
def _synthetic():
    """This tree's :mod:`sdrlib.distances.synthetic` loaded as a standalone module (it imports only numpy), so
    that a worker of another revision builds the same data without importing this tree's ``sdrlib``."""
    spec = importlib.util.spec_from_file_location("_bench_synthetic", ROOT / "sdrlib" / "distances" / "synthetic.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def workload(kind: str, K: int, N: int, d: int, seed: int):
    """``(candidates, bank)``: lists of (n, d) sets; ``benchmarks/bench_distances.workload`` with uniform sizes."""
    syn = _synthetic()
    rng = np.random.default_rng(seed)
    if kind == "random":
        return syn.random_sets(rng, K, d), syn.random_sets(rng, N, d)
    space = syn.make_space(rng, d)
    bank, pool = syn.structured_bank(rng, N, space)
    return syn.structured_candidates(rng, K, pool, space), bank


def _digest(arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


class _Sweep:
    """One tree's side of the benchmark: the workload, the bank packed once per section, timed calls."""

    def __init__(self, args):
        from sdrlib import selection as sel
        from sdrlib.distances.engine import pack_sets

        self.sel, self.K = sel, args.K
        self.cands, bank = {}, {}
        for i, sec in enumerate(SECTIONS):
            self.cands[sec], bank[sec] = workload(args.kind, args.studies * args.K, args.N, args.d, args.seed + i)
        self.data_digest = _digest([x for sec in SECTIONS for x in self.cands[sec] + bank[sec]])
        t0 = time.perf_counter()
        self.bank = {sec: pack_sets(bank[sec], f"bank[{sec}]") for sec in SECTIONS}
        self.pack_s = time.perf_counter() - t0
        self.bank_sets = bank

    def warm(self, names) -> None:
        """Compile every kernel (alone and together) on a tiny problem, outside the timings."""
        tiny = {s: c[:self.K] for s, c in self.cands.items()}
        tiny_bank = {s: b[:3] for s, b in self.bank_sets.items()}
        self.sel.bank_distances(tiny, tiny_bank, names, n_candidates=self.K, progress=None)
        for name in names:
            self.sel.bank_distances(tiny, tiny_bank, [name], n_candidates=self.K, progress=None)

    def run(self, names, studies: int | None = None) -> dict:
        """Time ``bank_distances`` for ``names`` on the first ``studies`` studies (all by default)."""
        cands = self.cands if studies is None else {s: c[:studies * self.K] for s, c in self.cands.items()}
        c0, t0 = time.process_time(), time.perf_counter()
        res = self.sel.bank_distances(cands, self.bank, list(names), n_candidates=self.K, progress=None,
                                      on_nonconvergence="ignore")
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        pairs = len(cands[SECTIONS[0]]) * sum(self.bank[s].n_sets for s in SECTIONS)
        return {"wall": wall, "cpu": cpu, "pairs": pairs, "computed": int(res.meta["computed_pairs"]),
                "scores": _digest([res.section_scores])}

    def raw(self, names, cands: int, bank: int) -> str:
        """Digest of raw distances and convergence flags: the first ``cands`` candidates x ``bank`` bank sets of
        each section, every setting in one call."""
        from sdrlib.distances.engine import pairwise_distances_many

        out = []
        for sec in SECTIONS:
            res = pairwise_distances_many(self.cands[sec][:cands], self.bank_sets[sec][:bank], list(names),
                                          on_nonconvergence="ignore", return_converged=True)
            out += [a for name in names for a in res[name]]
        return _digest(out)


# --------------------------------------------------------------------------- --compare: another revision
def _tree_of(rev: str) -> tuple[str, Path]:
    """(commit, directory holding that commit's ``sdrlib``), extracted once into the temporary directory."""
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"], check=True,
                         capture_output=True, text=True).stdout.strip()
    dest = Path(tempfile.gettempdir()) / f"sdr_bench_tree_{sha[:12]}"
    if not (dest / "sdrlib" / "__init__.py").is_file():
        tar = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", sha, "sdrlib"], check=True,
                             capture_output=True).stdout
        tmp = Path(tempfile.mkdtemp(prefix=dest.name + ".", dir=dest.parent))
        with tarfile.open(fileobj=io.BytesIO(tar)) as tf:
            tf.extractall(tmp, filter="data")
        try:
            os.rename(tmp, dest)
        except OSError:  # another run extracted it meanwhile
            pass
    return sha, dest


def _describe(root: Path) -> str:
    return subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty"], capture_output=True,
                          text=True).stdout.strip() or "?"


class _Worker:
    """A worker process of this script (``--worker ROOT``) importing ``sdrlib`` from ROOT; one request at a time."""

    def __init__(self, root: Path, label: str, argv: list[str]):
        self.label = label
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", str(root), *argv],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.hello = self._read()

    def _read(self) -> dict:
        for line in self.proc.stdout:
            if line.startswith(_TAG):
                msg = json.loads(line[len(_TAG):])
                if "error" in msg:
                    raise RuntimeError(f"{self.label} worker: {msg['error']}")
                return msg
            sys.stderr.write(line)
        raise RuntimeError(f"{self.label} worker ended (exit {self.proc.wait()})")

    def ask(self, **req) -> dict:
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


def worker_main(root: str, argv: list[str]) -> int:
    """``--worker ROOT ...``: import ROOT's sdrlib, build the workload, then answer requests read from stdin."""
    sys.path.insert(0, root)
    import sdrlib

    def say(**msg) -> None:
        sys.stdout.write(_TAG + json.dumps(msg) + "\n")
        sys.stdout.flush()

    if not Path(sdrlib.__file__).resolve().is_relative_to(Path(root).resolve()):
        say(error=f"imported sdrlib from {sdrlib.__file__}, not from {root}")
        return 1
    from sdrlib.distances import ConvergenceWarning

    warnings.simplefilter("ignore", ConvergenceWarning)
    args = _parser().parse_args(argv)
    try:
        sweep = _Sweep(args)
        import numba

        say(data=sweep.data_digest, pack_s=sweep.pack_s, bank_sets=[sweep.bank[s].n_sets for s in SECTIONS],
            threads=numba.get_num_threads())
        for line in sys.stdin:
            req = json.loads(line)
            if req["cmd"] == "warm":
                sweep.warm(req["names"])
                say(ok=True)
            elif req["cmd"] == "run":
                say(**sweep.run(req["names"], req.get("studies")))
            elif req["cmd"] == "raw":
                say(digest=sweep.raw(req["names"], req["cands"], req["bank"]))
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises it
        say(error=f"{type(exc).__name__}: {exc}")
        return 1
    return 0


def compare_main(args, names: list[str]) -> int:
    sha, old_root = _tree_of(args.compare)
    worker_argv = [f"--studies={args.studies}", f"--K={args.K}", f"--N={args.N}", f"--d={args.d}",
                   f"--kind={args.kind}", f"--seed={args.seed}"]
    before_label, after_label = f"{args.compare} ({sha[:7]})", f"this tree ({_describe(ROOT)})"
    S, K, N = args.studies, args.K, args.N
    pairs = S * K * N * len(SECTIONS)
    print(f"# bench_selection --compare: before = {before_label}, after = {after_label}; {S} studies x K={K} x "
          f"N={N} x 2 sections = {pairs:,} pairs per setting, d={args.d}, {args.kind} sets, cpus={os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f}; projection to {SWEEP_PAIRS:,} pairs per setting "
          "(1000 studies x 5 x 5000 x 2)", flush=True)
    workers = [_Worker(old_root, "before", worker_argv), _Worker(ROOT, "after", worker_argv)]
    try:
        if workers[0].hello["data"] != workers[1].hello["data"]:
            raise RuntimeError("the two workers built different workloads")
        pack = [w.hello["pack_s"] for w in workers]
        gw = [] if args.no_gw else ["gw"]
        for w in workers:  # one after the other: compiling both at once would slow both
            w.ask(cmd="warm", names=names + gw)
        print(f"# bank packed once per section (both sections): before {pack[0]:.1f} s, after {pack[1]:.1f} s; "
              "kernels compiled; timings follow", flush=True)

        def both(**req) -> list[dict]:
            """The request on both workers, one after the other; who goes first alternates between calls."""
            order = (0, 1) if both.calls % 2 == 0 else (1, 0)
            both.calls += 1
            out: list = [None, None]
            for i in order:
                out[i] = workers[i].ask(**req)
            return out
        both.calls = 0

        def best(req: dict) -> list[dict]:
            """Fastest (wall) of ``--reps`` runs per side (runs of one side that disagree on the scores: no digest)."""
            runs = [both(**req) for _ in range(args.reps)]
            out = [min((r[i] for r in runs), key=lambda x: x["wall"]) for i in (0, 1)]
            for i in (0, 1):
                if len({r[i]["scores"] for r in runs}) > 1:
                    out[i] = {**out[i], "scores": f"unstable-{i}"}
            return out

        threads = [w.hello["threads"] for w in workers]
        print(f"\nh = projected hours of the paper's sweep: from wall time (what this run took, other jobs included), "
              f"and from CPU time over the {threads[1]} solver threads (what it would take with those cores to "
              "itself, if both stayed busy)\n")
        print("| setting | before us/pair | after us/pair | after / before (wall) | after / before (CPU) | "
              "before h (wall) | after h (wall) | before h (CPU) | after h (CPU) | selection scores |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        tot = np.zeros(4)
        same_all = True

        def row(label: str, r: list[dict], fixed_s: list[float] = (0.0, 0.0)) -> tuple[np.ndarray, bool]:
            """Print one row; returns ([before h wall, after h wall, before h CPU, after h CPU], identical)."""
            us = [x["wall"] / x["pairs"] * 1e6 for x in r]
            cpu_us = [x["cpu"] / x["pairs"] * 1e6 / t for x, t in zip(r, threads)]
            h = np.array([u * SWEEP_PAIRS / 3.6e9 + f / 3600 for u, f in zip(us + cpu_us, [*fixed_s, *fixed_s])])
            same = r[0]["scores"] == r[1]["scores"]
            print(f"| {label} | {us[0]:.2f} | {us[1]:.2f} | {us[1] / us[0]:.2f} | {cpu_us[1] / cpu_us[0]:.2f} | "
                  f"{h[0]:.3f} | {h[1]:.3f} | {h[2]:.3f} | {h[3]:.3f} | {'identical' if same else 'DIFFERENT'} |",
                  flush=True)
            return h, same

        for name in names:
            h, same = row(name, best({"cmd": "run", "names": [name]}))
            tot, same_all = tot + h, same_all and same
        print(f"| {len(names)} settings, one call each (sum) | | | {tot[1] / tot[0]:.2f} | {tot[3] / tot[2]:.2f} | "
              f"{tot[0]:.2f} | {tot[1]:.2f} | {tot[2]:.2f} | {tot[3]:.2f} | "
              f"{'identical' if same_all else 'DIFFERENT'} |")
        one, same = row(f"**{len(names)} settings in one call** (as notebook 05; + bank packing once)",
                        best({"cmd": "run", "names": names}), pack)
        if gw:
            gw_pairs = args.gw_studies * K * N * len(SECTIONS)
            g, _ = row(f"gw ({args.gw_studies} studies, {gw_pairs:,} pairs; not in the totals)",
                       best({"cmd": "run", "names": gw, "studies": args.gw_studies}))
        raw = both(cmd="raw", names=names + gw, cands=args.raw_cands, bank=args.raw_bank)
        raw_same = raw[0]["digest"] == raw[1]["digest"]
        print(f"\nprojected paper sweep, {len(names)} settings in one call: before {one[0]:.2f} h, after "
              f"{one[1]:.2f} h from wall time (after / before {one[1] / one[0]:.2f}); before {one[2]:.2f} h, after "
              f"{one[3]:.2f} h from CPU time ({one[3] / one[2]:.2f})" +
              (f". GW on the CPU, beside them: before {g[0]:.1f} h, after {g[1]:.1f} h (wall); {g[2]:.1f} h, "
               f"{g[3]:.1f} h (CPU); all {len(names) + 1}: before {one[0] + g[0]:.1f} h, after {one[1] + g[1]:.1f} h "
               f"(wall)" if gw else ""))
        print(f"values: selection scores {'identical' if same and same_all else 'DIFFERENT'} in every row; raw "
              f"distances and convergence flags of {args.raw_cands} candidates x {args.raw_bank} bank sets x 2 "
              f"sections x {len(names) + len(gw)} settings {'identical' if raw_same else 'DIFFERENT'} bit for bit; "
              f"load average at the end {os.getloadavg()[0]:.1f}")
        return 0 if (same and same_all and raw_same) else 1
    finally:
        for w in workers:
            w.close()


# --------------------------------------------------------------------------- default: against the reference loop
def ref_us_per_pair(cands, bank, name: str, max_pairs: int, budget_s: float) -> float:
    """Wall microseconds per pair of the reference loop on the first pairs (bank-major), capped by count and time."""
    from sdrlib.distances import set_distance

    n, t0 = 0, time.perf_counter()
    for b in bank:
        for c in cands:
            set_distance(c, b, name, on_nonconvergence="ignore")
            n += 1
            if n >= max_pairs or (n >= 5 and time.perf_counter() - t0 > budget_s):
                return (time.perf_counter() - t0) / n * 1e6
    return (time.perf_counter() - t0) / max(n, 1) * 1e6


def reference_main(args, names: list[str]) -> int:
    from sdrlib.distances import ConvergenceWarning, set_distance

    warnings.simplefilter("ignore", ConvergenceWarning)
    ref_pairs = args.ref_pairs or (40 if args.quick else 200)
    ref_budget = args.ref_budget or (2.0 if args.quick else 8.0)
    sweep = _Sweep(args)
    pairs = args.studies * args.K * args.N * len(SECTIONS)
    print(f"# bench_selection: {args.studies} studies x K={args.K} x N={args.N} x 2 sections = {pairs:,} pairs per "
          f"setting, d={args.d}, {args.kind} sets, cpus={os.cpu_count()}, load average={os.getloadavg()[0]:.1f}; "
          f"projection to {SWEEP_PAIRS:,.0f} pairs per setting (1000 studies x 5 x 5000 x 2); bank packed once "
          f"({sweep.pack_s:.1f} s, both sections)")
    sweep.warm(names)
    for name in names:  # the reference's first call imports POT / SciPy: keep that out of its timing
        set_distance(sweep.cands["findings"][0], sweep.bank_sets["findings"][0], name, on_nonconvergence="ignore")

    print("| setting | sweep us/pair | ref us/pair | ratio ref/sweep | sweep h (projected) | ref h (projected) | "
          "computed pairs (after dedup) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    tot_sweep = tot_ref = 0.0
    for name in names:
        r = sweep.run([name])
        sweep_us = r["wall"] / pairs * 1e6
        ref_us = np.mean([ref_us_per_pair(sweep.cands[s], sweep.bank_sets[s], name, ref_pairs // 2, ref_budget / 2)
                          for s in SECTIONS])
        sh, rh = sweep_us * SWEEP_PAIRS / 3.6e9, ref_us * SWEEP_PAIRS / 3.6e9
        tot_sweep, tot_ref = tot_sweep + sh, tot_ref + rh
        print(f"| {name} | {sweep_us:.2f} | {ref_us:.1f} | {ref_us / sweep_us:.0f}x | {sh:.2f} | {rh:.1f} | "
              f"{r['computed']:,} |", flush=True)
    print(f"| all {len(names)} (sum) | | | {tot_ref / tot_sweep:.0f}x | {tot_sweep:.2f} | {tot_ref:.1f} | |")
    r = sweep.run(names)
    print(f"\nall {len(names)} settings in one call: {r['wall']:.1f} s = {pairs * len(names) / r['wall']:,.0f} "
          "pairs/s; "
          f"projected paper sweep {r['wall'] / pairs * SWEEP_PAIRS / 3600 + sweep.pack_s / 3600:.2f} h "
          "(bank packing once)")
    return 0


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="20 studies, N=300, six settings, short reference loops")
    ap.add_argument("--studies", type=int, default=None)
    ap.add_argument("--K", type=int, default=5)
    ap.add_argument("--N", type=int, default=None)
    ap.add_argument("--d", type=int, default=768)
    ap.add_argument("--kind", default="structured", choices=("random", "structured"))
    ap.add_argument("--settings", default=None,
                    help=f"comma list (default: all 15; with --compare the 14 without gw, gw apart; --quick: "
                         f"{QUICK_SETTINGS})")
    ap.add_argument("--ref-pairs", type=int, default=None)
    ap.add_argument("--ref-budget", type=float, default=None, help="seconds of reference loop per setting")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compare", metavar="REV", default=None,
                    help="time the engine of git revision REV against this tree's, side by side (no reference loop)")
    ap.add_argument("--reps", type=int, default=1, help="--compare: runs per call and side (the fastest is kept)")
    ap.add_argument("--gw-studies", type=int, default=2, help="--compare: studies GW is timed on")
    ap.add_argument("--no-gw", action="store_true", help="--compare: leave GW out")
    ap.add_argument("--raw-cands", type=int, default=10, help="--compare: candidates of the raw-distance check")
    ap.add_argument("--raw-bank", type=int, default=500, help="--compare: bank sets of the raw-distance check")
    return ap


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--worker"]:
        return worker_main(argv[1], argv[2:])
    args = _parser().parse_args(argv)
    args.studies = args.studies or (20 if args.quick else 50)
    args.N = args.N or (300 if args.quick else 5000)
    sys.path.insert(0, str(ROOT))
    from sdrlib.distances import REGISTRY
    from sdrlib.distances.timing import SWEEP_PAIRS as paper_pairs

    assert paper_pairs == SWEEP_PAIRS
    if args.compare:
        default = ",".join(n for n in REGISTRY if n != "gw")
        names = [s for s in (args.settings or (QUICK_SETTINGS if args.quick else default)).split(",") if s]
        if "gw" in names:
            names.remove("gw")
            args.no_gw = False
        return compare_main(args, names)
    names = [s for s in (args.settings or (QUICK_SETTINGS if args.quick else ",".join(REGISTRY))).split(",") if s]
    return reference_main(args, names)


if __name__ == "__main__":
    raise SystemExit(main())
