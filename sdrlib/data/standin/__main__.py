"""``python -m sdrlib.data.standin LAYOUT OUT_DIR [--n N] [--seed S] [--image-size PX] [--defect D] [--unpack]``:
the stand-in's command line (:func:`main`); what it writes: :mod:`sdrlib.data.standin`.

A module of its own that nothing imports, so ``python -m`` runs it without runpy's warning about a module the
package already imported (:mod:`sdrlib.data.download` imports :mod:`sdrlib.data.standin`).
"""

from __future__ import annotations

import argparse
from typing import Sequence

from sdrlib.data.registry import standin_layouts
from sdrlib.data.standin import DEFECTS, write_standin
from sdrlib.io import one_line_errors

__all__ = ["LAYOUTS", "main"]

LAYOUTS = standin_layouts()  # the built-in ones (a dataset registered later is found by write_standin too)


@one_line_errors("standin")  # StandInError (arguments, size, folder) or an OSError: one line, exit 2
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sdrlib.data.standin LAYOUT OUT_DIR [--n N] [--seed S] [--image-size PX] [--defect D] [--unpack]``."""
    ap = argparse.ArgumentParser(prog="python -m sdrlib.data.standin",
                                 description="Write synthetic studies in the layout of a real dataset download.")
    ap.add_argument("layout", choices=standin_layouts())
    ap.add_argument("out_dir")
    ap.add_argument("--n", type=int, default=12, help="number of studies (default 12)")
    ap.add_argument("--seed", type=int, default=0, help="SynthCXR seed (default 0)")
    ap.add_argument("--image-size", type=int, default=64, help="image side in pixels (default 64)")
    ap.add_argument("--defect", choices=DEFECTS, default=None, help="damage one study (for bad-input tests)")
    ap.add_argument("--p-missing-section", type=float, default=0.1,
                    help="share of studies without Findings or Impression (default 0.1)")
    ap.add_argument("--unpack", action="store_true",
                    help="rexgradient: also unpack deid_png.part* into deid_png/ (as the dataset card says)")
    args = ap.parse_args(argv)
    st = write_standin(args.layout, args.out_dir, n=args.n, seed=args.seed, image_size=args.image_size,
                       defect=args.defect, p_missing_section=args.p_missing_section, unpack=args.unpack,
                       progress=True)
    splits = ("train", "val", "test")
    counts = []
    for sp in splits:
        ids, skipped = st.expected(sp)
        extra = ", ".join(f"{k}={v}" for k, v in sorted(skipped.items()))
        counts.append(f"{sp} {len(ids)}" + (f" (+{extra})" if extra else ""))
    print(f"{st.layout} stand-in: {st.n} studies in {st.root} ({'; '.join(counts)})"
          + (f"; defect {st.defect}: study {st.defect_study}" if st.defect else "")
          + ("; images packed in deid_png.part*: unpack with --unpack or "
             "'cat deid_png.part* > deid_png.tar && tar -xf deid_png.tar'" if st.packed else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
