"""``dataclass_repr``: the ``__repr__`` that ``@dataclass`` generates, written once.

``@dataclass`` compiles the source of every method it adds (``exec``) when the class is
created, at every start; a ``__repr__`` a class rarely or never prints is a third of that
(measured: ~3 % of the instructions of a small capture's whole ``wirefall requests`` run).
The classes of the start-up path are declared ``@dataclass(..., repr=False)`` with
``__repr__ = dataclass_repr``: the same text, with nothing compiled.
"""
from __future__ import annotations

import reprlib
from dataclasses import fields

__all__ = ["dataclass_repr"]


@reprlib.recursive_repr()  # (a class that holds itself shows "...", as @dataclass's repr does)
def dataclass_repr(self) -> str:
    """``Name(field=value, ...)`` of the fields declared with ``repr=True`` (the default), as
    ``@dataclass`` writes it."""
    return f"{type(self).__qualname__}({', '.join(f'{f.name}={getattr(self, f.name)!r}' for f in fields(self) if f.repr)})"
