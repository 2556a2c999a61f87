"""The registry of display-filter fields: one module per protocol, each declaring
``PROTOCOL = Protocol(name, description, present_field, [fields…])`` (see ``types.py``).

``lookup(name)`` finds a field (or a protocol's own presence field) by its Wireshark name
(or one of wirefall's own the detail tree shows, ``OWN``: ``wirefall.type`` …),
including families named by prefix (``http2.headers.<name>``); ``unsupported(name)`` says
why a known-but-unsupported name (``tcp.analysis.*``) cannot be used; ``names()`` lists every
name for suggestions and docs.  The per-protocol modules are meant to move into each
protocol's descriptor later: nothing here depends on which module a protocol lives in.
"""
from __future__ import annotations

import importlib

from wirefall.dissectors.registry import REGISTRY

from .types import Field, Protocol
from .wirefall import TREE

# the packet's own layers, then each protocol's module as its registry descriptor names it
# (``ProtocolDescriptor.fields_module``): a new protocol's fields need no edit here
LAYERS = ("frame", "null", "eth", "ip", "ipv6", "tcp", "udp")
PSEUDO = ("wsexpert",)  # fields of no protocol: Wireshark's _ws.expert.* (read from the expert items; last)
MODULES = LAYERS + tuple(d.fields_module for d in REGISTRY.values() if d.fields_module) + PSEUDO

PROTOCOLS: dict[str, Protocol] = {}
FIELDS: dict[str, Field] = {}


def register(p: Protocol) -> None:
    PROTOCOLS[p.name] = p
    FIELDS[p.name] = p.present
    for f in p.fields:
        FIELDS[f.name] = f


for _m in MODULES:
    register(importlib.import_module(f"{__name__}.{_m}").PROTOCOL)


# wirefall's own fields the detail tree names (``wirefall.type`` …): filter fields, not tshark's
OWN: dict[str, Field] = {f.name: f for f in TREE.fields}


def lookup(name: str) -> Field | None:
    f = FIELDS.get(name) or OWN.get(name)
    if f is not None:
        return f
    for p in PROTOCOLS.values():
        for prefix, factory in p.prefixes.items():
            if name.startswith(prefix) and len(name) > len(prefix):
                return factory(name[len(prefix):])
    return None


def unsupported(name: str) -> str | None:
    for p in PROTOCOLS.values():
        for prefix, why in p.unsupported_prefixes.items():
            if name == prefix or name.startswith(prefix + "."):
                return why
    f = FIELDS.get(name)
    return f.unsupported if f is not None and f.unsupported else None


def names() -> list[str]:
    return list(FIELDS) + list(OWN)
