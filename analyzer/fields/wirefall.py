"""wirefall's own short names on a packet (the packet list's filter before Wireshark's
names existed): ``packet``, ``connection``, ``protocol`` (the list column and the protocols
of the frames on it), and, as lists over the frames that complete on the packet, ``type``,
``stream_id``, ``direction``, ``flags``, and their requests' ``method``, ``url``,
``status``, ``authority``; ``source``, ``destination``, ``info``, ``time`` and ``length`` are
the packet-list columns.  Untyped: compared as the JSON values are (see analyzer.filter).

``TREE``: the fields the detail tree names ``wirefall.*`` on a frame's node (a protocol
without Wireshark fields of its own there): ``wirefall.protocol``, ``.type``, ``.stream``,
``.flags``, ``.length`` — typed, on the packet where the frame completes (where the tree
shows them), and on each frame for ``frames -Y``.  ``wirefall.length`` is the frame's
length, not the packet's (``length``)."""
from __future__ import annotations

from ._util import frame_field as F
from .types import PROTO_OPAQUE, STRING, UINT, Field, Protocol


def _frames(pv):
    return pv.frames


def _protocols(pv) -> list:
    from wirefall.analyzer.detail import frame_proto_name
    from wirefall.analyzer.model import PROTO_NAMES

    out = [PROTO_NAMES[pv.ctx.idx.proto[pv.n - 1]]]
    for f in pv.frames:
        out.append(f.protocol)
        out.append(frame_proto_name(pv.ctx.an, f))
    out.append(pv.row[4])
    return out


def _ex(attr):
    def get(pv):
        out = []
        for f in pv.frames:
            if f.stream_id is not None:
                e = pv.ctx.exchange(f.connection, f.stream_id)
                if e is not None:
                    v = getattr(e, attr)
                    if v is not None and v != "":
                        out.append(v)
        return out
    return get


SHORT = {
    "packet": lambda pv: [pv.n],
    "connection": lambda pv: [pv.conn_id] if pv.conn_id >= 0 else [],
    "protocol": _protocols,
    "type": lambda pv: [f.type for f in pv.frames],
    "stream_id": lambda pv: [f.stream_id for f in pv.frames if f.stream_id is not None],
    "direction": lambda pv: [("c2s", "s2c")[f.direction] for f in pv.frames],
    "flags": lambda pv: [f.flags for f in pv.frames],
    "method": _ex("method"),
    "url": _ex("url"),
    "status": _ex("status"),
    "authority": _ex("authority"),
    "source": lambda pv: [pv.row[2]] if pv.row[2] else [],
    "destination": lambda pv: [pv.row[3]] if pv.row[3] else [],
    "info": lambda pv: [pv.row[6]],
    "time": lambda pv: [pv.row[1]],
    "length": lambda pv: [pv.ctx.idx.origlen[pv.n - 1]],
}


def _any(fr) -> bool:
    return True


_OWN = "wirefall's own: tshark has no such field"
# Not in the registry of Wireshark's fields (``fields.FIELDS``: tshark's names only): ``fields.lookup``
# finds these too, and docs/FILTERS.md lists them after Wireshark's.
TREE = Protocol("wirefall", "wirefall's own fields of a protocol frame, as the detail tree names them",
                Field("wirefall", PROTO_OPAQUE, lambda pv: [True] if pv.frames else [], "a protocol frame completes here",
                      frame=lambda fr: [True]), [
    F("wirefall.protocol", STRING, _any, lambda fr, ctx: [fr.protocol], "the frame's protocol (h2, h3, quic, tls, http/1.1 …)", note=_OWN),
    F("wirefall.type", STRING, _any, lambda fr, ctx: [fr.type], "the frame's type (HEADERS, DATA, STREAM, ACK …)", note=_OWN),
    F("wirefall.stream", UINT, lambda fr: fr.stream_id is not None, lambda fr, ctx: [fr.stream_id], "the frame's stream ID", note=_OWN),
    F("wirefall.flags", UINT, lambda fr: bool(fr.flags), lambda fr, ctx: [fr.flags], "the frame's flags (where not 0)", note=_OWN),
    F("wirefall.length", UINT, _any, lambda fr, ctx: [fr.length], "the frame's length (its payload; the packet's is `length`)", note=_OWN),
])
