"""SPDY in the detail tree: the type line with the control frame's number, as Wireshark's
``spdy.type`` (DATA frames have no type number on the wire)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from wirefall.analyzer.model import Frame
from wirefall.dissectors.registry import descriptor

if TYPE_CHECKING:
    from wirefall.analyzer.detail import Node

TYPES = {n: c for c, n in descriptor("spdy").type_names.items()}  # control frames


def type_node(node: Node, fr: Frame) -> bool:
    code = TYPES.get(fr.type)
    if code is None:
        return False
    node.add(f"Type: {fr.type} ({code})", abbrev="spdy.type", value=str(code))
    return True
