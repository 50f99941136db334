"""``python -m sdrlib.experiments.study``: :func:`sdrlib.experiments.study.cli.main`."""

from sdrlib.experiments.study.cli import main

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
