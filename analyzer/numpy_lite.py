"""``numpy()``: numpy, imported where it serves (the vectorised scan, analyzer.demux; the frame
index, analyzer.detail), without OpenBLAS's thread pool.  wirefall does no linear algebra, and
the pool cost about 50 ms of CPU on another core at the import (measured: 0.12 s against 0.065 s)
and a thread in the process; ``OPENBLAS_NUM_THREADS`` is set only where the user has not set it."""
from __future__ import annotations

import os
from types import ModuleType


def numpy() -> ModuleType:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import numpy as np

    return np
