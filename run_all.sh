#!/usr/bin/env bash
# Run every numbered notebook in order with papermill on a profile (default: cpu).
#
#   ./run_all.sh                      # default profile (cpu)
#   ./run_all.sh --profile smoke      # tiny run (tests, CI)
#   ./run_all.sh --from 03            # resume at notebook 03
#   ./run_all.sh --only 02            # one notebook
#   ./run_all.sh --out /tmp/sdr-run   # write data/results/figures/runs under another root
#   ./run_all.sh --profile paper --set grpo.seeds=3 --set sft.max_steps=2000   # override profile values (repeatable)
#
# Executed notebooks go to runs/<profile>/notebooks/ (git-ignored); sources are never modified.
# Exit code: 0 ok, 1 a notebook failed (the message names it and the cell), 2 bad usage/profile
# (--from/--only naming no notebook, an invalid profile or --set, an --out that is not a writable folder, a GPU,
# policy weights or dataset folder the profile needs and this machine lacks):
# one line on stderr, checked before any notebook starts.
# Relative --out and --profile paths are taken from the folder you run it in.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
PY="$HERE/.venv/bin/python"
[ -x "$PY" ] || PY=python
export PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}"
exec "$PY" -m sdrlib.runner "$@"
