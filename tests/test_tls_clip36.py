"""A handshake message's lines stay inside the message: a hostile length (an extension that
claims 31,898 bytes in a ClientHello of 60) gives a line cut at the message's end, never one that
highlights the next message's bytes or beyond (review of session 36; the extension's own lines
were cut to the extension, the extension's line was not)."""
from __future__ import annotations

import struct

import pytest

from wirefall.analyzer.detail import Node
from wirefall.analyzer.protocols.tls import handshake_nodes


def _client_hello(exts: bytes) -> bytes:
    return b"\x03\x03" + bytes(32) + b"\x00" + struct.pack(">HH", 2, 0x1301) + b"\x01\x00" + struct.pack(">H", len(exts)) + exts


def _nodes(msgs: list[tuple[int, bytes]]) -> list[Node]:
    top = Node("record")

    def add(parent, text, start, size, abbrev=None, value=None):
        n = Node(text, [], start, start + size, abbrev, value)
        parent.children.append(n)
        return n
    handshake_nodes(top, msgs, add, False, True)
    return list(top.walk())[1:]


@pytest.mark.parametrize("ln", [5, 31898, 0xFFFF])
@pytest.mark.parametrize("ext_type", [0, 16, 43, 51, 57, 41, 0x1A1A, 0xFFA5])
def test_lines_stay_inside_their_message(ext_type, ln):
    ch = _client_hello(struct.pack(">HH", ext_type, ln) + b"\x00\x05h3abc")
    fin = bytes(32)
    msgs = [(1, ch), (20, fin)]
    first_end = 4 + len(ch)
    nodes = _nodes(msgs)
    hello = [n for n in nodes if n.start < first_end]
    assert hello and all(n.end <= first_end for n in hello), [(n.label, n.start, n.end) for n in hello if n.end > first_end]
    ext = next(n for n in nodes if n.label.startswith("Extension: "))
    assert ext.end == min(ext.start + 4 + ln, first_end)  # (a length past the message: cut at its end, not dropped)
    assert [n.label for n in nodes if n.start >= first_end][:2] == ["Handshake Protocol: Finished", "Handshake Type: Finished (20)"]
