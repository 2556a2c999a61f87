"""``with gc_paused(): …`` — Python's cyclic garbage collector paused for a block that makes a
great many objects that live on (the pass over a capture, unpickling a cached model, the web
app's waterfall model): each collection it would set off walks every tracked object again.
The collector is enabled again after the block only if it was enabled before it (a pause
inside another keeps the outer one).  A class, not ``contextlib.contextmanager``: imported by
every run, it adds no module to the start.

``freeze_model()``: the process keeps its model to the end (the CLI's command, the TUI): every
object tracked now goes to the collector's permanent generation, and so do the parts of the model
unpacked later (``model_frozen()``: analyzer.cache.FrameChunks asks; ``gc.get_freeze_count()``
would walk the whole permanent generation to answer)."""
from __future__ import annotations

import gc

__all__ = ["freeze_model", "gc_paused", "model_frozen"]

_frozen = False


def freeze_model() -> None:
    global _frozen
    _frozen = True
    gc.freeze()


def model_frozen() -> bool:
    return _frozen


class gc_paused:  # (lower case: used as a function, ``with gc_paused():``)
    __slots__ = ("_was",)

    def __enter__(self) -> None:
        self._was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc) -> None:
        if self._was:
            gc.enable()
