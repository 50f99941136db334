"""``python scripts/study.py COMMAND ...`` = ``python -m sdrlib.experiments.study COMMAND ...`` (the GRPO study's
command line: pilot, choose, run, status, table; ``--help`` lists them). A thin wrapper kept so the commands written
before the module existed still run; its ``__main__`` guard is what spawned workers need."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sdrlib.experiments.study.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
