"""The protocol registry: one ``ProtocolDescriptor`` per protocol wirefall decodes.

Each dissector module defines its own ``DESCRIPTOR`` (near the top, beside its wire
constants); this module only holds the descriptor type and the lookup.  Consumers (the
waterfall's marker kinds, the detail tree's type numbers and flag names, the tshark oracle's
field names) read the registry instead of keeping their own copies.

A descriptor names its display-filter module in ``analyzer/fields``, its hooks module in
``analyzer/protocols`` (Info text, detail-tree nodes) and its oracle module in ``oracle/specs``
as strings, because dissectors import nothing of the analyzer (the layer contract in
pyproject.toml).

The registry is filled lazily on first use: the dissector modules import this module for
``ProtocolDescriptor``, so it cannot import them at its own import time.
"""
from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from enum import IntEnum
from typing import Any

from wirefall.dissectors.dataclass_repr import FACTORY, dataclass_repr

# The dissector modules that define a DESCRIPTOR (one protocol each); adding a protocol is one
# new module here and its DESCRIPTOR.
MODULES = (  # (in this order the display-filter fields are listed: docs/FILTERS.md)
    "wirefall.dissectors.tls",
    "wirefall.dissectors.http1",
    "wirefall.dissectors.http2",
    "wirefall.dissectors.spdy",
    "wirefall.dissectors.quic",
    "wirefall.dissectors.http3",
    "wirefall.dissectors.gquic",
    "wirefall.dissectors.dns",
)


# (eq=False on the three: nothing compares or hashes descriptors, kinds or oracle specs — each
# protocol has one, read by attribute — and the generated __eq__/__hash__ cost every start.
# Not frozen either: nothing assigns to them (a test swaps a descriptor in through
# dataclasses.replace), and frozen=True compiled a __setattr__, a __delattr__ and an __init__
# through object.__setattr__ per class at every start: ~1.3 % of a small capture's run.)
@dataclass(init=False, slots=True, eq=False, repr=False)
class FrameKinds:
    """Which of a protocol's frame types (``Frame.type`` names) play which role.  The
    waterfall draws markers from these; an empty set means the protocol has no such frame."""

    __repr__ = dataclass_repr  # (@dataclass's own text, not compiled at import: dissectors/dataclass_repr.py)

    reset: frozenset[str] = frozenset()  # abort one stream (RST_STREAM, RESET_STREAM, ...)
    priority: frozenset[str] = frozenset()  # reprioritise a stream
    push: frozenset[str] = frozenset()  # announce a server push
    headers: frozenset[str] = frozenset()  # carry a header block
    data: frozenset[str] = frozenset()  # carry body bytes
    settings: frozenset[str] = frozenset()
    goaway: frozenset[str] = frozenset()  # end the connection
    ping: frozenset[str] = frozenset()
    window: frozenset[str] = frozenset()  # flow-control credit as an increment (WINDOW_UPDATE; not QUIC's MAX_DATA limits)
    blocked: frozenset[str] = frozenset()  # the sender says flow control stops it

    # (@dataclass(init=False): written out, not compiled at every start; tests/test_dataclass_init.py)
    def __init__(self, reset: frozenset[str] = frozenset(), priority: frozenset[str] = frozenset(), push: frozenset[str] = frozenset(),
                 headers: frozenset[str] = frozenset(), data: frozenset[str] = frozenset(), settings: frozenset[str] = frozenset(),
                 goaway: frozenset[str] = frozenset(), ping: frozenset[str] = frozenset(), window: frozenset[str] = frozenset(),
                 blocked: frozenset[str] = frozenset()) -> None:
        self.reset = reset
        self.priority = priority
        self.push = push
        self.headers = headers
        self.data = data
        self.settings = settings
        self.goaway = goaway
        self.ping = ping
        self.window = window
        self.blocked = blocked


KIND_NAMES = tuple(f.name for f in fields(FrameKinds))
NO_KINDS = FrameKinds()  # a protocol with no frames of any kind


@dataclass(init=False, slots=True, eq=False, repr=False)
class OracleSpec:
    """How tshark names this protocol: its JSON layer and the fields the oracle compares
    (``fields``: wirefall ``Frame`` attribute -> tshark field; ``type_field``: the frame type)."""

    __repr__ = dataclass_repr  # (@dataclass's own text, not compiled at import: dissectors/dataclass_repr.py)

    layer: str
    type_field: str | None = None
    fields: Mapping[str, str] = field(default_factory=dict)
    # tshark's dissector clears the Info column before it asks TCP for the rest of a PDU, so the
    # segment where a PDU begins (and none ends) shows only TCP's "[TCP segment of a reassembled
    # PDU]" (TLS, SPDY); else the TCP summary stays in front of the marker
    clears_info: bool = False

    # (@dataclass(init=False): written out, not compiled at every start; tests/test_dataclass_init.py)
    def __init__(self, layer: str, type_field: str | None = None, fields: Mapping[str, str] = FACTORY, clears_info: bool = False) -> None:
        self.layer = layer
        self.type_field = type_field
        self.fields = {} if fields is FACTORY else fields
        self.clears_info = clears_info


@dataclass(init=False, slots=True, eq=False, repr=False)
class ProtocolDescriptor:
    """What wirefall knows of one protocol: its names, frame types and flags, frame kinds, and the modules that extend it."""

    __repr__ = dataclass_repr  # (@dataclass's own text, not compiled at import: dissectors/dataclass_repr.py)

    name: str  # registry key ("http2", "spdy", "quic", ...)
    display: str  # Wireshark's protocol column name ("HTTP2", "SPDY", ...)
    protocols: tuple[str, ...]  # ``Frame.protocol`` / ``Connection.protocol`` values it decodes
    frame_types: type[IntEnum] | None = None  # wire frame-type numbers (RFC / draft names)
    type_names: Mapping[int, str] = field(default_factory=dict)  # wire number -> ``Frame.type``
    flags: Mapping[str, tuple[tuple[int, str], ...]] = field(default_factory=dict)  # Frame.type -> ((bit, name), ...)
    kinds: FrameKinds = NO_KINDS  # (one object: the default of the field and of __init__)
    fields_module: str | None = None  # module in analyzer/fields holding its display-filter fields
    oracle: OracleSpec | None = None
    long_name: str | None = None  # Wireshark's protocol tree name ("HyperText Transfer Protocol 2"); None: ``display``
    column_rank: int = 3  # which protocol the packet list names: the highest rank on the packet (TLS 1, QUIC 2, HTTP 3)
    frame_header: int = 0  # bytes of a frame before its payload (``Frame.length``): HTTP/2 9, SPDY 8, a TLS record 5
    # The protocol's code above the dissectors, a module name in ``analyzer/protocols`` (a string:
    # dissectors import nothing of the analyzer).  It may define ``summary`` (one frame in the Info
    # column), ``info`` (tshark's Info of a frame completing on a TCP packet), ``datagram_info``
    # (of a UDP datagram), ``frame_node`` / ``type_node`` / ``place`` (the detail tree's node of a
    # frame, its type line and byte ranges) and ``proto_name`` (the protocol column's name).
    hooks_module: str | None = None
    # flow control per ``Frame.protocol`` value: "connection" (stream and connection windows
    # credited by WINDOW_UPDATE), "stream" (stream windows only), "blocked" (the sender says it
    # is blocked: QUIC's *_BLOCKED frames); absent: none (SPDY/2).  ``initial_window_setting``:
    # the SETTINGS id of the initial stream window (HTTP/2 4, SPDY 7).
    flow_control: Mapping[str, str] = field(default_factory=dict)
    initial_window_setting: int | None = None
    # carried in QUIC packets (IETF QUIC, HTTP/3, Google QUIC): no TCP handshake, no TLS records,
    # UDP datagrams (``over_quic``)
    over_quic: bool = False
    # protocol values claimed by prefix beyond ``protocols``: HTTP/3's drafts ("h3-32"), which the
    # connection takes from the negotiated ALPN as it is
    draft_prefix: str | None = None

    # (@dataclass(init=False): written out, not compiled at every start; tests/test_dataclass_init.py)
    def __init__(self, name: str, display: str, protocols: tuple[str, ...], frame_types: type[IntEnum] | None = None,
                 type_names: Mapping[int, str] = FACTORY, flags: Mapping[str, tuple[tuple[int, str], ...]] = FACTORY,
                 kinds: FrameKinds = NO_KINDS, fields_module: str | None = None, oracle: OracleSpec | None = None, long_name: str | None = None, column_rank: int = 3,
                 frame_header: int = 0, hooks_module: str | None = None, flow_control: Mapping[str, str] = FACTORY,
                 initial_window_setting: int | None = None, over_quic: bool = False, draft_prefix: str | None = None) -> None:
        self.name = name
        self.display = display
        self.protocols = protocols
        self.frame_types = frame_types
        self.type_names = {} if type_names is FACTORY else type_names
        self.flags = {} if flags is FACTORY else flags
        self.kinds = kinds
        self.fields_module = fields_module
        self.oracle = oracle
        self.long_name = long_name
        self.column_rank = column_rank
        self.frame_header = frame_header
        self.hooks_module = hooks_module
        self.flow_control = {} if flow_control is FACTORY else flow_control
        self.initial_window_setting = initial_window_setting
        self.over_quic = over_quic
        self.draft_prefix = draft_prefix

    def type_code(self, type_name: str) -> int | None:
        """The wire number of a ``Frame.type`` name (the lowest, for names several numbers share)."""
        codes = [c for c, n in self.type_names.items() if n == type_name]
        return min(codes) if codes else None

    def flag_names(self, type_name: str, flags: int) -> list[str]:
        return [name for bit, name in self.flags.get(type_name, ()) if flags & bit]


class _Table(dict[str, ProtocolDescriptor]):
    """The descriptors by name; ``version`` changes with every assignment (a test that swaps a
    descriptor in), so the cached kind unions are recomputed."""

    version = 0

    def __setitem__(self, key: str, value: ProtocolDescriptor) -> None:
        super().__setitem__(key, value)
        self.version += 1

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self.version += 1

    def update(self, *a: Any, **kw: Any) -> None:
        super().update(*a, **kw)
        self.version += 1


_DESCRIPTORS = _Table()


def _load() -> dict[str, ProtocolDescriptor]:
    if not _DESCRIPTORS:
        found = {}
        for mod in MODULES:
            d = importlib.import_module(mod).DESCRIPTOR
            found[d.name] = d
        _DESCRIPTORS.update(found)
    return _DESCRIPTORS


class _Registry(Mapping[str, ProtocolDescriptor]):
    """``REGISTRY[name]``: read-only, filled on first use."""

    def __getitem__(self, name: str) -> ProtocolDescriptor:
        return _load()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(_load())

    def __len__(self) -> int:
        return len(_load())


REGISTRY: Mapping[str, ProtocolDescriptor] = _Registry()


def descriptor(name: str) -> ProtocolDescriptor:
    """A descriptor by registry name ("http2") or by a ``Frame.protocol`` value ("h2c",
    "spdy/3.1", "h3-29").  KeyError if no protocol claims it."""
    reg = _load()
    if name in reg:
        return reg[name]
    for d in reg.values():
        if name in d.protocols:
            return d
    for d in reg.values():
        if d.draft_prefix and name.startswith(d.draft_prefix):
            return d
    raise KeyError(name)


def find(name: str) -> ProtocolDescriptor | None:
    """``descriptor(name)``, or None if no protocol claims it (memoised: the packet list and
    the detail tree ask once per frame)."""
    _load()
    key = (name, _DESCRIPTORS.version)
    got = _FIND_CACHE.get(key, _NONE)
    if got is _NONE:
        try:
            got = descriptor(name)
        except KeyError:
            got = None
        if len(_FIND_CACHE) > 256:
            _FIND_CACHE.clear()
        _FIND_CACHE[key] = got
    return got  # type: ignore[return-value]


def over_quic(protocol: str | None) -> bool:
    """Whether a ``Connection.protocol`` / ``Frame.protocol`` value is carried by QUIC (IETF
    QUIC, HTTP/3 of any draft, Google QUIC): the one answer to "is this QUIC" (the statistics'
    TLS overhead, the completeness reasons, the qlog export and the browser logs ask it)."""
    d = find(protocol) if protocol else None
    return d is not None and d.over_quic


def version() -> int:
    """Changes whenever a descriptor is replaced (caches built from the registry key on it)."""
    _load()
    return _DESCRIPTORS.version


_NONE = object()
_FIND_CACHE: dict[tuple[str, int], object] = {}


def frame_kind(protocol: str, type_name: str) -> set[str]:
    """The kinds (``FrameKinds`` field names) a frame type has in a protocol; empty if none
    or if the protocol is unknown."""
    d = find(protocol)
    if d is None:
        return set()
    return {k for k in KIND_NAMES if type_name in getattr(d.kinds, k)}


def kind_types(kind: str) -> frozenset[str]:
    """Every protocol's frame-type names of one kind (the union over the registry)."""
    reg = _load()
    key = (kind, _DESCRIPTORS.version)  # (a descriptor replaced, e.g. by a test, is seen)
    got = _KIND_CACHE.get(key)
    if got is None:
        if kind not in KIND_NAMES:
            raise KeyError(kind)
        out: set[str] = set()
        for d in reg.values():
            out |= getattr(d.kinds, kind)
        if len(_KIND_CACHE) > 64:
            _KIND_CACHE.clear()
        got = _KIND_CACHE[key] = frozenset(out)
    return got


_KIND_CACHE: dict[tuple[str, int], frozenset[str]] = {}


def names_of(enum: type[IntEnum], rename: Mapping[int, str] | None = None) -> dict[int, str]:
    """``{value: name}`` of an IntEnum, with ``rename`` overriding the names some values show
    as (e.g. QUIC's ACK_ECN is shown as "ACK")."""
    out = {int(m): m.name for m in enum}
    if rename:
        out.update(rename)
    return out
