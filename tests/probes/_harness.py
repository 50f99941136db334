"""The probe passes' shared harness (``tests/probes/*.py``, run as scripts, not collected by pytest).

Each probe calls ``fn()`` and sorts what happens into one of five classes:

- **clear**: a named error (an :class:`sdrlib.errors.SDRError` with a message of more than 15 characters) where one
  was expected (``expect="error"``);
- **defined**: a documented result: ``expect(result)`` is true, or the call raised the documented exception type
  ``expect`` (an exception class), or it reached work (``work``) where accepting the input is the right result;
- **crash**: any other exception (a bare ``KeyError``, a traceback from a library, ``SystemExit``);
- **silent**: a wrong result without a word: a return where an error was expected, ``expect(result)`` false, or a
  bad input that reached work;
- **hang**: no answer within ``seconds``.

Example::

    from _harness import Probes
    p = Probes()
    p.probe("seed: text", lambda: check_seeds(["a"]), "error")
    p.probe("seed: none", lambda: check_seeds([]), lambda out: out == [])
    p.report()
"""
from __future__ import annotations

import signal
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sdrlib.errors import SDRError  # noqa: E402

CLASSES = ("clear", "defined", "crash", "silent", "hang")


def _alarm(*_: Any) -> None:
    raise TimeoutError


class Probes:
    """Collects ``(name, class, detail)`` rows; ``seconds``: each probe's time limit; ``work``: the exception a
    replaced training / scoring call raises (reaching it means the input was accepted)."""

    def __init__(self, *, seconds: int = 60, work: type[BaseException] | None = None) -> None:
        self.seconds, self.work, self.results = seconds, work, []
        signal.signal(signal.SIGALRM, _alarm)

    def probe(self, name: str, fn: Callable[[], Any], expect: Any) -> None:
        """``expect``: ``"error"`` (a named SDRError), an exception class (documented), or ``callable(result)``."""
        signal.alarm(self.seconds)
        try:
            out = fn()
            signal.alarm(0)
            if expect == "error" or isinstance(expect, type):
                self.results.append((name, "silent", f"returned {str(out)[:80]!r}"))
            else:
                self.results.append((name, "defined" if expect(out) else "silent", str(out)[:80]))
        except TimeoutError:
            self.results.append((name, "hang", ""))
        except (Exception, SystemExit) as e:  # noqa: BLE001
            signal.alarm(0)
            msg = f"{type(e).__name__}: {str(e)[:110]}"
            if self.work is not None and isinstance(e, self.work):
                self.results.append((name, "silent" if expect == "error" else "defined", "accepted: work started"))
            elif isinstance(expect, type) and isinstance(e, expect):
                self.results.append((name, "defined", msg))
            elif expect == "error" and isinstance(e, SDRError) and len(str(e)) > 15:
                self.results.append((name, "clear", msg))
            else:
                self.results.append((name, "crash", msg))

    def counts(self) -> Counter:
        return Counter(c for _, c, _ in self.results)

    def report(self) -> Counter:
        """Print one line per probe, then the tally."""
        for name, cls, detail in self.results:
            print(f"{cls:8s} {name}: {detail}")
        counts = self.counts()
        print(counts)
        return counts
