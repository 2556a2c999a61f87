"""``dns``: DNS messages over UDP (one ``dns`` frame per message)."""
from __future__ import annotations

import ipaddress
from bisect import bisect_right

from wirefall.dissectors.dns import RCODE_NAMES, TYPE_NAMES, RRType, classes, layout

from ._util import frame_field as F, frames_present
from .frame import _us
from .types import BOOL, FLOAT, IPV4, IPV6, STRING, UINT, Field, Protocol

TYPE_CODES = {v: k for k, v in TYPE_NAMES.items()}
RCODE_CODES = {v: k for k, v in RCODE_NAMES.items()}


def _is_dns(fr) -> bool:
    return fr.protocol == "dns"


def _fl(fr):
    return fr.fields or {}


def _answers(rtype: str, conv):
    def fn(fr, ctx):
        out = []
        for a in _fl(fr).get("answers") or ():
            if len(a) >= 4 and a[1] == rtype:
                try:
                    out.append(conv(a[3]))
                except ValueError:
                    pass
        return out
    return fn


def _type_code(t) -> int | None:
    """A record type's number from the dissector's name ("AAAA", or "TYPE65" for one it lacks)."""
    c = TYPE_CODES.get(t) if t is not None else None
    if c is None and isinstance(t, str) and t.startswith("TYPE") and t[4:].isdigit():
        c = int(t[4:])
    return c


def _qtype(fr, ctx):
    c = _type_code(_fl(fr).get("qtype"))
    return [c] if c is not None else []


def _transactions(ctx) -> tuple[dict, dict]:
    """(connection, transaction id) -> the packet of its first query, and -> the packets of its
    responses in order (each UDP flow is a connection: a response's query is on its flow, as
    tshark pairs them); one walk over the frames, kept for the capture."""
    t = ctx.cache.get("dns_transactions")
    if t is None:
        q: dict = {}
        r: dict = {}
        for fr in ctx.frames:
            if fr.protocol == "dns":
                key = (fr.connection, _fl(fr).get("id"))
                if fr.type == "RESPONSE":
                    r.setdefault(key, []).append(fr.packet)
                else:
                    q.setdefault(key, fr.packet)
        t = ctx.cache["dns_transactions"] = (q, r)
    return t


def _response_in(pv) -> list:
    """On a query: the packet of the first response after it (same flow and transaction id)."""
    out: list = []
    for fr in pv.frames:
        if fr.protocol == "dns" and fr.type != "RESPONSE":
            got = _transactions(pv.ctx)[1].get((fr.connection, _fl(fr).get("id")))
            if got:
                i = bisect_right(got, pv.n)
                if i < len(got):
                    out.append(got[i])
    return out


def _paired(fn):
    """A field of each response on the packet with the packet of its query (``fn(ctx, n, q)``)."""
    def get(pv) -> list:
        out: list = []
        for fr in pv.frames:
            if fr.protocol == "dns" and fr.type == "RESPONSE":
                q = _transactions(pv.ctx)[0].get((fr.connection, _fl(fr).get("id")))
                if q is not None and q <= pv.n:
                    out.append(fn(pv.ctx, pv.n, q))
        return out
    return get


def _classes(i: int):
    """Question (``i`` 0) or record (1) classes of the packet's DNS message, read again from its
    UDP payload (mDNS: without the top bit, its QU / cache-flush flag, as tshark shows them)."""
    def get(pv) -> list:
        L = pv.layers
        if L.udp is None or not any(fr.protocol == "dns" for fr in pv.frames):
            return []
        out = classes(pv.data[L.udp_off + 8 : L.l4_end])[i]
        return [c & 0x7FFF for c in out] if 5353 in L.udp[:2] else out
    return get


_ANSWERS_ONLY = "the answer section's records (tshark also lists the authority and additional sections')"
_FRAMES_ANSWERS = "frames -Y: the answer section's records only"


def _records(pv) -> list[tuple[str, int, int]]:
    """(owner name, type, ttl) of every resource record of the packet's DNS message — answer,
    authority and additional sections, as tshark lists them (the root is tshark's "<Root>";
    an OPT record has no ttl: -1), read again from its UDP payload, once per packet."""
    cache = pv.ctx.cache
    hit = cache.get("dns_rr")
    if hit is not None and hit[0] == pv.n:
        return hit[1]
    out: list[tuple[str, int, int]] = []
    L = pv.layers
    if L.udp is not None and any(fr.protocol == "dns" for fr in pv.frames):
        out = [(r.name.text or "<Root>", r.type, -1 if r.type == RRType.OPT else r.ttl)
               for r in layout(pv.data[L.udp_off + 8 : L.l4_end]).records]
    cache["dns_rr"] = (pv.n, out)
    return out


def _all_sections(i: int, frame_fn):
    """A field of every resource record (``i``: 0 name, 1 type, 2 ttl) on packets; on a frame
    (frames -Y) ``frame_fn``'s answers."""
    def get(pv) -> list:
        return [r[i] for r in _records(pv) if r[i] != -1]

    def frame(fr) -> list:
        return list(frame_fn(fr, None)) if _is_dns(fr) else []
    return {"get": get, "frame": frame}


def _ttl(fr, ctx):
    return [a[2] for a in _fl(fr).get("answers") or () if len(a) >= 4 and isinstance(a[2], int)]


def _rtype(fr, ctx):
    return [c for a in _fl(fr).get("answers") or () if len(a) >= 2 and (c := _type_code(a[1])) is not None]


PROTOCOL = Protocol("dns", "Domain Name System", frames_present("dns", _is_dns, "a DNS message"), [
    F("dns.id", UINT, _is_dns, lambda fr, ctx: [i] if (i := _fl(fr).get("id")) is not None else [], "transaction id", size=2),
    F("dns.flags.response", BOOL, _is_dns, lambda fr, ctx: [1 if fr.type == "RESPONSE" else 0], "1 for a response"),
    F("dns.flags.rcode", UINT, _is_dns, lambda fr, ctx: [c] if fr.type == "RESPONSE" and (c := RCODE_CODES.get(_fl(fr).get("rcode"))) is not None
      else [], "a response's code (3 NXDOMAIN; not on queries, as tshark)", size=2),
    F("dns.qry.name", STRING, _is_dns, lambda fr, ctx: [q] if (q := _fl(fr).get("qname")) else [], "queried name"),
    F("dns.qry.type", UINT, _is_dns, _qtype, "query type (1 A, 28 AAAA, 65 HTTPS…)", size=2),
    Field("dns.qry.class", UINT, _classes(0), "query class (1 IN, 3 CH…)", size=2),
    F("dns.a", IPV4, _is_dns, _answers("A", lambda v: int(ipaddress.IPv4Address(v))), "IPv4 address in an answer"),
    F("dns.aaaa", IPV6, _is_dns, _answers("AAAA", lambda v: int(ipaddress.IPv6Address(v))), "IPv6 address in an answer"),
    F("dns.cname", STRING, _is_dns, _answers("CNAME", str), "CNAME target in an answer"),
    Field("dns.resp.name", STRING, **_all_sections(0, lambda fr, ctx: [a[0] for a in _fl(fr).get("answers") or () if a]),
          desc="owner name of a resource record, in every section (<Root> for the root: an EDNS OPT record's)", note=_FRAMES_ANSWERS),
    Field("dns.resp.type", UINT, **_all_sections(1, _rtype), desc="type of a resource record, in every section (5 CNAME, 1 A, 41 OPT…)", note=_FRAMES_ANSWERS, size=2),
    Field("dns.resp.class", UINT, _classes(1), "class of a resource record (1 IN), in every section", size=2),
    Field("dns.resp.ttl", UINT, **_all_sections(2, _ttl), desc="time to live of a resource record (not an OPT record), seconds, "
          "in every section", note=_FRAMES_ANSWERS, size=4),
    Field("dns.time", FLOAT, _paired(lambda ctx, n, q: _us(ctx.idx.ts[n - 1] - ctx.idx.ts[q - 1])),
          "on a response: seconds since its query (same flow and transaction id)"),
    Field("dns.response_to", UINT, _paired(lambda ctx, n, q: q), "on a response: the packet of its query", size=4),
    Field("dns.response_in", UINT, _response_in, "on a query: the packet of its response (the first after it; tshark -2)", size=4),
    F("dns.count.answers", UINT, _is_dns, lambda fr, ctx: [len(_fl(fr).get("answers") or ())], "answers in the message",
      note="the answers wirefall decoded (at most 512)", size=2),
])
