"""DNS in the packet list: ``Standard query[ response] 0xID [rcode] TYPE name`` and each
answer, authority and additional record (``A 1.2.3.4``, ``CNAME x``, ``SOA mname``, ``OPT``),
parsed with dpkt from the datagram (a message dpkt refuses keeps wirefall's ``QUERY[id]``)."""
from __future__ import annotations

from wirefall.analyzer.model import Analysis, Frame

_DNS_OPCODES = {0: "Standard query", 1: "Inverse query", 2: "Server status request", 4: "Zone change notification", 5: "Dynamic update"}
_DNS_RCODES = {1: "Format error", 2: "Server failure", 3: "No such name", 4: "Not implemented", 5: "Refused"}
_DNS_TYPES = {1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 12: "PTR", 13: "HINFO", 15: "MX", 16: "TXT", 28: "AAAA", 33: "SRV", 35: "NAPTR",
              39: "DNAME", 41: "OPT", 43: "DS", 46: "RRSIG", 47: "NSEC", 48: "DNSKEY", 64: "SVCB", 65: "HTTPS", 255: "ANY", 257: "CAA"}


def _dns_name(name: str) -> str:
    return name if name else "<Root>"


def message_info(payload: bytes) -> str | None:
    """tshark's Info of a DNS message (None: dpkt cannot parse it)."""
    import socket

    import dpkt

    try:
        m = dpkt.dns.DNS(payload)
    except Exception:  # noqa: BLE001 - dpkt raises many kinds on bad input; the caller keeps its own text
        return None
    s = _DNS_OPCODES.get(m.opcode, f"Unknown operation ({m.opcode})") + (" response" if m.qr else "") + f" 0x{m.id:04x}"
    if m.qr and m.rcode:
        s += " " + _DNS_RCODES.get(m.rcode, f"Unknown error ({m.rcode})")
    for q in m.qd:
        s += f" {_DNS_TYPES.get(q.type, f'Unknown ({q.type})')} {_dns_name(q.name)}"
    for rr in list(m.an) + list(m.ns) + list(m.ar):
        t = rr.type
        s += " " + _DNS_TYPES.get(t, f"Unknown ({t})")
        try:
            if t == 1 and len(rr.rdata) == 4:
                s += " " + socket.inet_ntoa(rr.rdata)
            elif t == 28 and len(rr.rdata) == 16:
                s += " " + socket.inet_ntop(socket.AF_INET6, rr.rdata)
            elif t == 5:
                s += " " + _dns_name(rr.cname)
            elif t == 2:
                s += " " + _dns_name(rr.nsname)
            elif t == 12:
                s += " " + _dns_name(rr.ptrname)
            elif t == 6:
                s += " " + _dns_name(rr.mname)
            elif t == 15:
                s += f" {rr.preference} {_dns_name(rr.mxname)}"
            elif t == 33:
                s += f" {rr.priority} {rr.weight} {rr.port} {_dns_name(rr.srvname)}"
        except AttributeError:
            pass
    return s


def datagram_info(analysis: Analysis, n: int, payload: bytes, frames: list[Frame], spanning: list[Frame] | None = None) -> str | None:
    return message_info(payload)


def frame_node(node, fr: Frame):
    """A DNS message with Wireshark's field names (dns.*): its transaction ID (the frame's
    stream_id, which a DNS message does not have), query or response, the question, the answers."""
    from wirefall.analyzer.detail import value_nodes

    f = dict(fr.fields or {})
    what = ("response" if fr.type == "RESPONSE" else "query") + (f" 0x{fr.stream_id:04x}" if fr.stream_id is not None else "")
    node.label = f"DNS: {what}" + (f" {f['qname']}" if f.get("qname") is not None else "")
    if fr.stream_id is not None:
        node.add(f"Transaction ID: 0x{fr.stream_id:04x}", abbrev="dns.id", value=f"0x{fr.stream_id:04x}")
    resp = fr.type == "RESPONSE"
    node.add(f"Flags: {'response' if resp else 'query'}", abbrev="dns.flags.response", value="1" if resp else "0")
    node.add(f"Direction: {'client → server' if fr.direction == 0 else 'server → client'}")
    node.add(f"Length: {fr.length}")
    if f.get("qname") is not None:
        node.add(f"Query: {f['qname']}" + (f" type {f['qtype']}" if f.get("qtype") else ""), abbrev="dns.qry.name", value=f["qname"])
    if resp and f.get("rcode") is not None:
        node.add(f"Reply code: {f['rcode']}")
    if fr.error:
        node.add(f"[Error: {fr.error}]")
    for k, v in f.items():
        if k not in ("id", "qname", "qtype", "rcode"):
            value_nodes(node, k, v)
    return node
