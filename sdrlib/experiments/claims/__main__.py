"""``python -m sdrlib.experiments.claims``: :func:`sdrlib.experiments.claims.cli.main`."""

from sdrlib.experiments.claims.cli import main

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
