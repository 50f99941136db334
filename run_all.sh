#!/usr/bin/env bash
# Run every numbered notebook in order with papermill on a profile (default: cpu).
#
#   ./run_all.sh                      # default profile (cpu)
#   ./run_all.sh --profile smoke      # tiny run (tests, CI)
#   ./run_all.sh --from 03            # resume at notebook 03
#   ./run_all.sh --only 02            # one notebook
#   ./run_all.sh --out /tmp/sdr-run   # write data/results/figures/runs under another root
#
# Executed notebooks go to runs/<profile>/notebooks/ (git-ignored); sources are never modified.
# Exit code: 0 ok, 1 a notebook failed (the message names it and the cell), 2 bad usage/profile.
set -euo pipefail
cd "$(dirname "$0")"
PY=.venv/bin/python
[ -x "$PY" ] || PY=python
exec "$PY" -m sdrlib.runner "$@"
