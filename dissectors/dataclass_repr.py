"""``dataclass_repr``: the ``__repr__`` that ``@dataclass`` generates, written once.

``@dataclass`` compiles the source of every method it adds (``exec``) when the class is
created, at every start; a ``__repr__`` a class rarely or never prints is a third of that
(measured: ~3 % of the instructions of a small capture's whole ``wirefall requests`` run).
The classes of the start-up path are declared ``@dataclass(..., repr=False)`` with
``__repr__ = dataclass_repr``: the same text, with nothing compiled.

The same goes for ``__init__``: the classes of the start-up path are declared
``@dataclass(init=False, ...)`` with their ``__init__`` written out in the class (byte code in
the .pyc, nothing compiled at start); a field with a ``default_factory`` takes ``FACTORY`` as
its default and calls the factory when it is passed, as the generated one does with its own
sentinel.  tests/test_dataclass_init.py holds each to the ``__init__`` ``@dataclass`` would
generate (parameters, defaults, the fields an instance gets).

And for ``__eq__``, where a class of the start-up path is compared by value: ``@dataclass(eq=False)``
with ``__eq__ = dataclass_eq``, the generated comparison (same class, then the compared fields in
order; ``__hash__`` None, as Python sets it for a class that defines ``__eq__`` alone).
"""
from __future__ import annotations

import reprlib
from dataclasses import fields
from typing import Any

__all__ = ["FACTORY", "dataclass_eq", "dataclass_repr"]


class _Factory:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


FACTORY: Any = _Factory()  # the default of a written-out __init__'s parameter whose field has a default_factory


@reprlib.recursive_repr()  # (a class that holds itself shows "...", as @dataclass's repr does)
def dataclass_repr(self) -> str:
    """``Name(field=value, ...)`` of the fields declared with ``repr=True`` (the default), as
    ``@dataclass`` writes it."""
    return f"{type(self).__qualname__}({', '.join(f'{f.name}={getattr(self, f.name)!r}' for f in fields(self) if f.repr)})"


_COMPARED: dict[type, tuple[str, ...]] = {}


def dataclass_eq(self, other) -> Any:
    """``self == other`` as ``@dataclass(eq=True)`` generates it: NotImplemented for an object of
    another class, else the tuples of the fields declared with ``compare=True`` (the default)."""
    if other.__class__ is not self.__class__:
        return NotImplemented
    names = _COMPARED.get(self.__class__)
    if names is None:
        names = _COMPARED[self.__class__] = tuple(f.name for f in fields(self) if f.compare)
    return tuple([getattr(self, n) for n in names]) == tuple([getattr(other, n) for n in names])
