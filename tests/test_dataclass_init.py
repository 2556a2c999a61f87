"""The ``__init__`` written out in the start-up path's dataclasses (``@dataclass(init=False)``,
dissectors/dataclass_repr.py) is the one ``@dataclass`` would generate: the same parameters
and defaults, the same fields set from them, a fresh object from each ``default_factory``."""
from __future__ import annotations

import dataclasses
import importlib
import inspect

import pytest

from wirefall.dissectors.dataclass_repr import FACTORY

WRITTEN_OUT = {
    "wirefall.analyzer.model": ["TlsInfo", "QuicInfo", "TcpInfo", "DirStats", "Connection", "Frame", "Exchange", "Analysis"],
    "wirefall.analyzer.capture": ["Interface", "CaptureInfo"],
    "wirefall.analyzer.waterfall": ["DnsLookup", "Page"],
    "wirefall.dissectors.registry": ["FrameKinds", "OracleSpec", "ProtocolDescriptor"],
    "wirefall.dissectors.dns": ["DnsAnswer", "DnsMessage"],
    "wirefall.dissectors.tls_crypto": ["SuiteParams"],
    "wirefall.analyzer.completeness": ["Issue", "ConnectionCompleteness", "Completeness"],
    "wirefall.analyzer.stats": ["Block", "Stats"],
    "wirefall.analyzer.tcp_analysis": ["TcpAnalysis"],
}
CLASSES = [getattr(importlib.import_module(m), n) for m, names in WRITTEN_OUT.items() for n in names]


def _generated(cls):
    """The class @dataclass makes of ``cls``'s fields, with its generated __init__."""
    ns: dict = {"__annotations__": {f.name: f.type for f in dataclasses.fields(cls)}}
    for f in dataclasses.fields(cls):
        ns[f.name] = dataclasses.field(default=f.default, default_factory=f.default_factory, init=f.init, kw_only=f.kw_only)
    if hasattr(cls, "__post_init__"):
        ns["__post_init__"] = cls.__post_init__
    return dataclasses.dataclass(eq=False)(type(cls.__name__, (), ns))


def _params(cls):
    out = []
    for p in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        d = p.default
        d = "<factory>" if d is FACTORY or repr(d) == "<factory>" else (type(d), d)
        out.append((p.name, p.kind, d))
    return out


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_written_out_init_is_the_generated_one(cls):
    assert not cls.__dataclass_params__.init and "__init__" in cls.__dict__
    ref = _generated(cls)
    assert _params(cls) == _params(ref)
    names = [f.name for f in dataclasses.fields(cls)]
    required = {p.name: object() for p in list(inspect.signature(ref.__init__).parameters.values())[1:] if p.default is p.empty}
    # defaults: equal values of the same type; each default_factory called afresh
    a, b, r = cls(**required), cls(**required), ref(**required)
    for n in names:
        assert type(getattr(a, n)) is type(getattr(r, n)) and repr(getattr(a, n)) == repr(getattr(r, n)), n
        if n not in required and dataclasses.fields(cls)[names.index(n)].default_factory is not dataclasses.MISSING:
            assert getattr(a, n) is not getattr(b, n), n
        elif n not in required:  # the field's own default (or an equal one of an immutable type)
            got, default = getattr(a, n), cls.__dataclass_fields__[n].default
            assert got is default or (type(got) in (frozenset, tuple, int, float, str, bool) and got == default), n
    # every field passed (by keyword and by position): each set to what was passed
    given = {n: object() for n in names}
    for obj in (cls(**given), cls(*given.values())):
        for n in names:
            assert getattr(obj, n) is given[n], n


REPR_CLASSES = CLASSES + [importlib.import_module("wirefall.dissectors.http2").H2Frame]


@pytest.mark.parametrize("cls", [c for c in REPR_CLASSES if c.__repr__.__name__ == "dataclass_repr"], ids=lambda c: c.__name__)
def test_shared_repr_is_the_generated_one(cls):
    # repr=False with __repr__ = dataclass_repr: the text @dataclass's own __repr__ gives
    ns: dict = {"__annotations__": {f.name: f.type for f in dataclasses.fields(cls)}, "__qualname__": cls.__qualname__}
    for f in dataclasses.fields(cls):
        ns[f.name] = dataclasses.field(default=None, repr=f.repr)
    ref = dataclasses.dataclass(eq=False)(type(cls.__name__, (), ns))
    obj, copy = object.__new__(cls), object.__new__(ref)
    for i, f in enumerate(dataclasses.fields(cls)):
        value = [i, f"s{i}", None, (i, "x")][i % 4]
        object.__setattr__(obj, f.name, value)
        object.__setattr__(copy, f.name, value)
    assert repr(obj) == repr(copy) and repr(obj).startswith(cls.__qualname__ + "(")


EQ_CLASSES = [c for c in REPR_CLASSES if c.__eq__.__name__ == "dataclass_eq"]


def test_shared_eq_classes():
    assert {c.__name__ for c in EQ_CLASSES} >= {"H2Frame", "Issue", "ConnectionCompleteness", "Completeness", "Block", "Stats", "TcpAnalysis"}


@pytest.mark.parametrize("cls", EQ_CLASSES, ids=lambda c: c.__name__)
def test_shared_eq_is_the_generated_one(cls):
    # eq=False with __eq__ = dataclass_eq: what @dataclass's own __eq__ (eq=True) answers, and no hash
    ns: dict = {"__annotations__": {f.name: f.type for f in dataclasses.fields(cls)}, "__qualname__": cls.__qualname__}
    for f in dataclasses.fields(cls):
        ns[f.name] = dataclasses.field(default=None, compare=f.compare)
    ref = dataclasses.dataclass(eq=True)(type(cls.__name__, (), ns))
    assert cls.__hash__ is None and ref.__hash__ is None

    def pair(k: type, values: list):
        obj = object.__new__(k)
        for f, v in zip(dataclasses.fields(cls), values):
            object.__setattr__(obj, f.name, v)
        return obj

    n = len(dataclasses.fields(cls))
    nan = float("nan")
    base = [[i, f"s{i}", None, (i, "x")][i % 4] for i in range(n)]
    for i in range(n):
        for other in (base, base[:i] + ["changed"] + base[i + 1:], base[:i] + [nan] + base[i + 1:]):
            for a_vals in (base, other):
                a, b, ra, rb = pair(cls, a_vals), pair(cls, other), pair(ref, a_vals), pair(ref, other)
                assert (a == b) == (ra == rb) and (a != b) == (ra != rb), (i, a_vals, other)
    x = pair(cls, base)
    assert x.__eq__(pair(ref, base)) is NotImplemented and x.__eq__(object()) is NotImplemented and x == x
