"""``frame``: the captured packet (tshark's frame.* fields), read from the packet index."""
from __future__ import annotations

from wirefall.dissectors.registry import find

from ._util import packet_field as P
from .types import ABSTIME, BOOL, FLOAT, PROTO, STRING, UINT, Protocol

_LINK = {"eth": "eth:ethertype", "sll": "sll:ethertype", "sll2": "sll:ethertype", "null": "null", "raw": "raw"}


def protocols(pv) -> str:
    L = pv.layers
    parts = [_LINK[L.link]] if L.link else []
    if L.ip is not None:
        parts.append("ip")
    elif L.ip6 is not None:
        parts.append("ipv6")
    if L.tcp is not None:
        parts.append("tcp")
    elif L.udp is not None:
        parts.append("udp")
    apps: list[str] = []
    inner: dict[str, bool] = {}
    h3 = None
    for fr in pv.frames:
        # frame.protocols names the analysis protocols by tshark's layer (the descriptor's
        # oracle layer); the security and transport layers (TLS, QUIC) before what they carry
        d = find(fr.protocol)
        name = d.oracle.layer if d is not None and d.oracle is not None else None
        if name == "http3":  # (on the packets the ``http3`` field is present on, below)
            h3 = d
            continue
        if name == "http":  # (on the packets an HTTP/1 message ends on, as the ``http`` field, below: not where its head
            continue        # was decoded — tshark names http on the packet of a message's last byte; review 26)
        if name and name not in apps:
            apps.append(name)
            inner[name] = d is not None and d.column_rank >= 3
    if "tls" not in apps and (L.tcp is not None or L.udp is not None):
        from .tls import _waiting

        # tshark's TLS dissector also ran where a record spanning segments begins (it read the
        # header and asked TCP for the rest): the `tls` field is there, and so is the layer
        if pv.n in _waiting(pv.ctx):
            apps.append("tls")
            inner["tls"] = False
    if "quic" in apps or h3 is not None:
        from .http3 import PROTOCOL as HTTP3

        if HTTP3.present.get(pv):
            apps.append("http3")
            inner["http3"] = True
    if L.tcp is not None:
        from .http import PROTOCOL as HTTP1

        if HTTP1.present.get(pv):
            apps.append("http")
            inner["http"] = True
    apps.sort(key=lambda a: inner[a])
    return ":".join(parts + apps)


# Times are float epoch seconds (about 0.2 µs of precision today): differences are rounded to
# the microsecond, so that 0.13 - 0.12 compares as the 0.01 tshark computes in integers.
def _us(x: float) -> float:
    # (+ 0.0: a difference that rounds to -0.0 — timestamps finer than tshark's nanosecond — is 0, as tshark prints it)
    return round(x, 6) + 0.0


def _delta(pv) -> list:
    i = pv.n - 1
    ts = pv.ctx.idx.ts
    return [_us(ts[i] - ts[i - 1]) if i else 0.0]


PROTOCOL = Protocol("frame", "every captured packet", P("frame", PROTO, lambda pv: [pv.data], "the packet's captured bytes"), [
    P("frame.number", UINT, lambda pv: [pv.n], "packet number (1-based, file order)", size=4),
    P("frame.time", ABSTIME, lambda pv: [_us(pv.ctx.idx.ts[pv.n - 1])], "arrival time; compare with \"2026-11-29 18:17:59\" or \"Nov 29, 2026 18:17:59.1\" (UTC)",
      note="a literal without a zone is read as UTC (tshark reads it in the local zone)"),
    P("frame.time_epoch", FLOAT, lambda pv: [_us(pv.ctx.idx.ts[pv.n - 1])], "arrival time, seconds since 1970"),
    P("frame.time_relative", FLOAT, lambda pv: [_us(pv.ctx.idx.ts[pv.n - 1] - pv.ctx.t0)], "seconds since the first packet"),
    P("frame.time_delta", FLOAT, _delta, "seconds since the previous captured packet"),
    P("frame.time_delta_displayed", FLOAT, lambda pv: [], "seconds since the previous displayed packet",
      unsupported="frame.time_delta_displayed is not a filter field in wirefall: under -Y tshark computes it against the "
                  "previous packet the same filter displayed, so its value depends on the filter's own result "
                  "('frame.time_delta_displayed > 0' selects nothing in tshark 4.0); use frame.time_delta"),
    P("frame.marked", BOOL, lambda pv: [0], "whether the packet is marked (never, in a file read: always 0)"),
    P("frame.len", UINT, lambda pv: [pv.ctx.idx.origlen[pv.n - 1]], "length on the wire", size=4),
    P("frame.cap_len", UINT, lambda pv: [pv.ctx.idx.caplen[pv.n - 1]], "captured length", size=4),
    # (tshark has it on pcapng packets only: a classic pcap file has no interfaces)
    P("frame.interface_id", UINT, lambda pv: [pv.ctx.idx.interface[pv.n - 1]] if pv.ctx.an.capture_format == "pcapng" else [],
      "pcapng interface", size=4),
    P("frame.protocols", STRING, lambda pv: [protocols(pv)], "protocols in the packet, e.g. eth:ethertype:ip:tcp:tls:http2",
      note="lists the layers wirefall decodes (tshark also names e.g. data, x509sat, quic's tls)"),
])
