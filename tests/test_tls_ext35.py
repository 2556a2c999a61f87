"""TLS extension contents in the detail tree on hostile bytes: lengths that overrun their
extension, lists cut in the middle, empty bodies — the tree says what the bytes hold and stops,
never raises, and never reads past the extension (its lines' byte ranges stay inside it).  The
lines on real captures are compared with tshark in tests/test_tls_tree34.py."""
from __future__ import annotations

import itertools

import pytest

from wirefall.analyzer.detail import Node
from wirefall.analyzer.protocols.tls import _extensions


def _tree(exts: bytes, msg: int = 1) -> list[Node]:
    body = len(exts).to_bytes(2, "big") + exts
    top = Node("hello")

    def add(parent, text, start, size, abbrev=None, value=None):
        n = Node(text, [], start, start + size, abbrev, value)
        parent.children.append(n)
        return n
    _extensions(top, body, 0, 0, add, msg)
    return list(top.walk())[1:]


def _ext(t: int, data: bytes) -> bytes:
    return t.to_bytes(2, "big") + len(data).to_bytes(2, "big") + data


def test_sni_alpn_and_groups_read_as_tshark_words():
    sni = _ext(0, b"\x00\x0e\x00\x00\x0bexample.com")
    alpn = _ext(16, b"\x00\x0c\x02h2\x08http/1.1")
    groups = _ext(10, b"\x00\x06\x0a\x0a\x00\x1d\x11\xec")
    labels = [n.label for n in _tree(sni + alpn + groups)]
    assert "Server Name: example.com" in labels and "Server Name Type: host_name (0)" in labels
    assert labels.count("ALPN string length: 2") == 1 and "ALPN Next Protocol: http/1.1" in labels
    assert ["Supported Group: Reserved (GREASE) (0x0a0a)", "Supported Group: x25519 (0x001d)",
            "Supported Group: Unknown (0x11ec)"] == [x for x in labels if x.startswith("Supported Group: ")]


@pytest.mark.parametrize("t", [0, 5, 10, 11, 13, 16, 21, 27, 35, 41, 43, 45, 51, 13172, 65281, 0x0a0a, 0x1234])
@pytest.mark.parametrize("msg", [1, 2, 6])
def test_hostile_contents_stay_inside_their_extension(t, msg):
    for data in (b"", b"\xff", b"\xff\xff", b"\x00\x10abc", b"\xff" * 40, bytes(range(256)) * 3,
                 b"\x00\x05\x00\x00\x09abc", b"\x00\x02\x01"):
        ext = _ext(t, data)
        nodes = _tree(ext, msg)  # (never raises)
        assert all(0 <= n.start and n.end <= len(ext) + 2 for n in nodes if n.start >= 0), (t, data)
        assert len(nodes) <= 5 + 3 * len(data)


def test_extension_lengths_past_the_message_are_not_read():
    # an extension whose length runs past the message: its header lines, no contents
    body = _ext(0, b"\x00\x0e\x00\x00\x0bexample.com")[:-4]
    labels = [n.label for n in _tree(body)]
    assert not any(x.startswith("Server Name: ") for x in labels)
    for a, b in itertools.combinations(range(0, 12), 2):  # every cut of a key share
        _tree(_ext(51, (b"\x00\x24\x00\x1d\x00\x20" + bytes(32))[a:b]))
