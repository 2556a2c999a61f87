"""``dns``: DNS messages over UDP (one ``dns`` frame per message)."""
from __future__ import annotations

import ipaddress

from wirefall.dissectors.dns import RCODE_NAMES, TYPE_NAMES

from ._util import frame_field as F, frames_present
from .types import BOOL, IPV4, IPV6, STRING, UINT, Protocol

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


def _qtype(fr, ctx):
    t = _fl(fr).get("qtype")
    c = TYPE_CODES.get(t) if t is not None else None
    if c is None and isinstance(t, str) and t.startswith("TYPE") and t[4:].isdigit():
        c = int(t[4:])
    return [c] if c is not None else []


PROTOCOL = Protocol("dns", "Domain Name System", frames_present("dns", _is_dns, "a DNS message"), [
    F("dns.id", UINT, _is_dns, lambda fr, ctx: [i] if (i := _fl(fr).get("id")) is not None else [], "transaction id"),
    F("dns.flags.response", BOOL, _is_dns, lambda fr, ctx: [1 if fr.type == "RESPONSE" else 0], "1 for a response"),
    F("dns.flags.rcode", UINT, _is_dns, lambda fr, ctx: [c] if (c := RCODE_CODES.get(_fl(fr).get("rcode"))) is not None else [], "response code (3 NXDOMAIN)"),
    F("dns.qry.name", STRING, _is_dns, lambda fr, ctx: [q] if (q := _fl(fr).get("qname")) else [], "queried name"),
    F("dns.qry.type", UINT, _is_dns, _qtype, "query type (1 A, 28 AAAA, 65 HTTPS…)", names=TYPE_CODES),
    F("dns.a", IPV4, _is_dns, _answers("A", lambda v: int(ipaddress.IPv4Address(v))), "IPv4 address in an answer"),
    F("dns.aaaa", IPV6, _is_dns, _answers("AAAA", lambda v: int(ipaddress.IPv6Address(v))), "IPv6 address in an answer"),
    F("dns.cname", STRING, _is_dns, _answers("CNAME", str), "CNAME target in an answer"),
    F("dns.resp.name", STRING, _is_dns, lambda fr, ctx: [a[0] for a in _fl(fr).get("answers") or () if a], "owner name of an answer"),
    F("dns.count.answers", UINT, _is_dns, lambda fr, ctx: [len(_fl(fr).get("answers") or ())], "answers in the message",
      note="the answers wirefall decoded (at most 512)"),
])
