"""``python -m sdrlib.training``: :func:`sdrlib.training.cli.main`."""

from sdrlib.training.cli import main

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
