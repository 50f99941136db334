"""``python scripts/readme_numbers.py RESULTS_DIR ...`` = ``python -m sdrlib.experiments.claims RESULTS_DIR ...`` (print
the "Expected results" block written from a run's result files, or ``--check FILE`` a file's block; ``--help`` lists
the options). A thin wrapper kept so the commands written before the module existed still run."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sdrlib.experiments.claims.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
