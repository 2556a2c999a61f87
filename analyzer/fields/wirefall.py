"""wirefall's own short names on a packet (the packet list's filter before Wireshark's
names existed): ``packet``, ``connection``, ``protocol`` (the list column and the protocols
of the frames on it), and, as lists over the frames that complete on the packet, ``type``,
``stream_id``, ``direction``, ``flags``, and their requests' ``method``, ``url``,
``status``, ``authority``; ``source``, ``destination``, ``info``, ``time`` and ``length`` are
the packet-list columns.  Untyped: compared as the JSON values are (see analyzer.filter)."""
from __future__ import annotations


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
