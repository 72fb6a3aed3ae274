"""A line on stderr when each export stage starts and one when it ends, with its wall time.

AOTInductor compiles take tens of seconds, and a CUDA autotune can run for minutes without
printing anything; a user exporting several methods should see which stage of which method
is running while it runs, and what it cost, without a logging setup.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Iterator, TextIO

__all__ = ["Progress"]


class Progress:
    """Prints ``[kiln export] <label> ...`` when a stage starts and
    ``[kiln export] <label> ... <seconds> s`` when it ends.

    ``verbose=False`` silences it.  ``stream`` defaults to ``sys.stderr`` looked up at
    print time (so pytest's capture and redirections see it).  Not thread-safe; one
    instance per export call.
    """

    PREFIX = "[kiln export]"

    def __init__(self, verbose: bool = True, stream: TextIO | None = None):
        self.verbose = verbose
        self._stream = stream
        self.lines: list[str] = []  # every line printed, for callers and tests

    def _emit(self, line: str) -> None:
        self.lines.append(line)
        if self.verbose:
            print(line, file=self._stream or sys.stderr, flush=True)

    def note(self, label: str) -> None:
        """A line without timing (e.g. a summary)."""
        self._emit(f"{self.PREFIX} {label}")

    @contextmanager
    def stage(self, label: str) -> Iterator[None]:
        """Times the ``with`` body; prints one line before it runs and one when it ends,
        also when it fails."""
        # Printed before the body, so a long silent stage shows what it is while it runs.
        self._emit(f"{self.PREFIX} {label} ...")
        start = time.perf_counter()
        try:
            yield
        except BaseException:
            self._emit(f"{self.PREFIX} {label} ... failed after {time.perf_counter() - start:.1f} s")
            raise
        self._emit(f"{self.PREFIX} {label} ... {time.perf_counter() - start:.1f} s")
