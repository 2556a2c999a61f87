"""Each protocol's code above the dissectors: its Info text and its detail-tree nodes.

One module per protocol, named by its registry descriptor (``ProtocolDescriptor.hooks_module``,
a string because dissectors import nothing of the analyzer).  A module defines the hooks it
needs, all optional (the generic code in ``analyzer.detail`` / ``analyzer.info`` serves the
others):

- ``summary(fr) -> str``: one frame in the Info column and in frame lists (``HEADERS[1]: GET /``).
- ``proto_name(analysis, fr) -> str``: the protocol column's name when it is not the
  descriptor's ``display`` (TLS names its version).
- ``info(ctx, fr) -> str | None``: tshark's Info of a frame completing on a TCP packet
  (``ctx``: ``analyzer.info.InfoContext``; None: ``summary``); ``continues(ctx) -> bool``: a
  message of this protocol goes on past the packet (tshark's ``[TCP segment of a reassembled PDU]``).
- ``shown(analysis, n, done) -> list[Frame]``: of the frames completing on TCP packet ``n``, those
  whose text tshark's Info column keeps, when this protocol's dissector clears the column
  (SPDY, once per TLS record).
- ``datagram_info(analysis, n, payload, frames, spanning) -> str | None``: tshark's Info of a
  UDP datagram carrying this protocol.
- ``frame_node(node, fr) -> Node``: the whole detail-tree node of a frame, Wireshark's fields
  (``type_node(node, fr) -> bool``: only its type line, in the generic node).
- ``datagram_node(node, fr, payload, base, fields) -> Node``: the whole detail-tree node of a
  frame that is a UDP datagram's message, read again from the datagram (``payload``, at
  ``base`` of the packet's bytes): Wireshark's tree with byte ranges; ``fields(names)`` gives
  the packet's display-filter values (generated fields: the filter's, so tree and filter agree).
  It stands alone in the tree (not under a protocol group node), as Wireshark's does.
- ``record_node(analysis, node, fr, rb) -> Node``: the whole node of a record whose bytes the
  tree reads again (``rb``: ``analyzer.detail.RecordBytes``: header, wire body, plaintext): TLS.
- ``frame_group(analysis, fr, done) -> list[Node]``: the frame's node stands in a protocol node
  of its own (HTTP/2: one "HyperText Transfer Protocol 2" a frame, as Wireshark's), after the
  nodes returned (HTTP/2's connection preface, ``Stream: Magic``; ``done``: per packet, its own).
- ``message_node(analysis, fr, number) -> list[Node] | None``: the top-level nodes a frame puts
  in packet ``number``'s tree (HTTP/1: a message where it ends, head and body as one, as
  Wireshark's); None: the generic node.
- ``frame_bytes_node(node, fr, raw)``: after ``frame_node``, what only the frame's bytes tell
  (``raw``: the whole frame, header included, when it is whole in one bytes tab or in the TCP
  stream of a connection in the clear), written into its node (HTTP/2: the header block, each
  header's HPACK representation and index).
- ``header_ranges(node, source, start, end)``: byte ranges of the frame header's fields, the
  frame starting at ``start`` of bytes tab ``source``.
- ``place_in_stream(fr, node, spans)``: point a frame's node at its bytes inside the decrypted
  STREAM frames of the datagram (HTTP/3 inside QUIC).

The data a consumer needs (names, type numbers, flags, frame kinds, header length, the
protocol tree's name, tshark's fields) is on the descriptor itself (``dissectors/registry.py``).
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from wirefall.dissectors.registry import find, version


@dataclass(frozen=True, slots=True)
class Hooks:
    summary: Callable[..., str] | None = None
    proto_name: Callable[..., str] | None = None
    info: Callable[..., str | None] | None = None
    continues: Callable[..., bool] | None = None
    shown: Callable[..., list[Any]] | None = None
    datagram_info: Callable[..., str | None] | None = None
    frame_node: Callable[..., Any] | None = None
    datagram_node: Callable[..., Any] | None = None
    record_node: Callable[..., Any] | None = None
    frame_group: Callable[..., list[Any]] | None = None
    message_node: Callable[..., Any] | None = None
    type_node: Callable[..., bool] | None = None
    frame_bytes_node: Callable[..., None] | None = None
    header_ranges: Callable[..., None] | None = None
    place_in_stream: Callable[..., None] | None = None


NONE = Hooks()
_NAMES = tuple(Hooks.__dataclass_fields__)
_CACHE: dict[tuple[str, int], Hooks] = {}


def hooks(protocol: str) -> Hooks:
    """The hooks of the protocol that decodes ``protocol`` (a ``Frame.protocol`` value or a
    registry name); ``NONE`` if it has none or no protocol claims it."""
    key = (protocol, version())
    got = _CACHE.get(key)
    if got is None:
        d = find(protocol)
        got = NONE
        if d is not None and d.hooks_module:
            name = d.hooks_module if "." in d.hooks_module else f"{__name__}.{d.hooks_module}"  # (a dotted name: any module)
            mod = importlib.import_module(name)
            got = Hooks(**{n: getattr(mod, n, None) for n in _NAMES})
        if len(_CACHE) > 256:
            _CACHE.clear()
        _CACHE[key] = got
    return got
