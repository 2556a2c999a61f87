"""DNS in the packet list: ``Standard query[ response] 0xID [rcode] TYPE name`` and each
answer, authority and additional record (``A 1.2.3.4``, ``CNAME x``, ``SOA mname``, ``OPT``),
parsed with dpkt from the datagram (a message dpkt refuses keeps wirefall's ``QUERY[id]``)."""
from __future__ import annotations

from wirefall.analyzer.model import Analysis, Frame
from wirefall.analyzer.packet_record import seconds_text
from wirefall.dissectors.dns import TYPE_NAMES

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


# ---------------------------------------------------------------- the detail tree (Wireshark's)

# packet-dns.c's words: type descriptions (dns_types_description_vals), classes, opcodes, reply codes
_TYPE_WORDS = {1: "A (Host Address)", 2: "NS (authoritative Name Server)", 5: "CNAME (Canonical NAME for an alias)",
               6: "SOA (Start Of a zone of Authority)", 12: "PTR (domain name PoinTeR)", 15: "MX (Mail eXchange)",
               16: "TXT (Text strings)", 28: "AAAA (IPv6 Address)", 33: "SRV (Server Selection)", 41: "OPT",
               64: "SVCB (General Purpose Service Endpoints)", 65: "HTTPS (HTTPS Specific Service Endpoints)"}
_CLASSES = {1: "IN", 3: "CH", 4: "HS", 254: "NONE", 255: "ANY"}
_RCODE_WORDS = {0: "No error", **_DNS_RCODES}
_SECTIONS = ("Answers", "Authoritative nameservers", "Additional records")


def time_text(secs: int) -> str:
    """Seconds as Wireshark writes a TTL or an SOA interval: ``1751 (29 minutes, 11 seconds)``."""
    parts = []
    left = secs
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute"), (1, "second")):
        k, left = divmod(left, size)
        if k:
            parts.append(f"{k} {unit}{'s' if k != 1 else ''}")
    return f"{secs} ({', '.join(parts) or '0 seconds'})"


def _type_text(t: int) -> str:
    return TYPE_NAMES.get(t, f"Unknown ({t})")


def datagram_node(node, fr: Frame, payload: bytes, base: int, fields) -> object:
    """The DNS message of a UDP datagram as Wireshark's tree shows it (``dns.*`` fields, with
    their bytes: ``payload`` starts at ``base`` of the packet), read again from the datagram;
    the query/response pairing (Request In, Response In, Time) is the display filter's
    (``fields(names)``: analyzer.fields.dns).  A message that stops reading says where."""
    from wirefall.dissectors.dns import layout

    from ..detail import Node, bit_node, wirefall_node

    lay = layout(payload)
    resp = bool(lay.flags & 0x8000)
    b = base
    node.label = f"Domain Name System ({'response' if resp else 'query'})"
    node.start, node.end = b, b + len(payload)
    node.children = []

    def leaf(parent, text: str, start: int, size: int, abbrev: str | None = None, value=None):
        return parent.add(text, b + start, b + start + size, abbrev, value)

    if len(payload) >= 12:
        leaf(node, f"Transaction ID: 0x{lay.id:04x}", 0, 2, "dns.id", f"0x{lay.id:04x}")
        f = lay.flags
        opcode, rcode = f >> 11 & 0xF, f & 0xF
        what = _DNS_OPCODES.get(opcode, f"Unknown operation ({opcode})")
        fn = leaf(node, f"Flags: 0x{f:04x} {what}" + (f" response, {_RCODE_WORDS.get(rcode, f'Unknown error ({rcode})')}" if resp else ""),
                  2, 2, "dns.flags", f"0x{f:04x}")
        bits = [(0x8000, "dns.flags.response", "Response", "Message is a response", "Message is a query", True),
                (0x7800, "dns.flags.opcode", "Opcode", None, None, True),
                (0x0400, "dns.flags.authoritative", "Authoritative", "Server is an authority for domain",
                 "Server is not an authority for domain", resp),
                (0x0200, "dns.flags.truncated", "Truncated", "Message is truncated", "Message is not truncated", True),
                (0x0100, "dns.flags.recdesired", "Recursion desired", "Do query recursively", "Don't do query recursively", True),
                (0x0080, "dns.flags.recavail", "Recursion available", "Server can do recursive queries",
                 "Server can't do recursive queries", resp),
                (0x0040, "dns.flags.z", "Z", None, None, True),
                (0x0020, "dns.flags.authenticated", "Answer authenticated", "Answer/authority portion was authenticated by the server",
                 "Answer/authority portion was not authenticated by the server", resp),
                (0x0010, "dns.flags.checkdisable", "Non-authenticated data", "Acceptable", "Unacceptable", True),
                (0x000F, "dns.flags.rcode", "Reply code", None, None, resp)]
        for mask, abbrev, name, yes, no, shown in bits:
            if not shown:
                continue
            v = (f & mask) >> (mask & -mask).bit_length() - 1
            if abbrev == "dns.flags.opcode":
                text = f"{_DNS_OPCODES.get(v, 'Unknown operation')} ({v})"
            elif abbrev == "dns.flags.z":
                text = f"reserved ({v})"
            elif abbrev == "dns.flags.rcode":
                text = f"{_RCODE_WORDS.get(v, 'Unknown error')} ({v})"
            else:
                text = (yes if v else no) or ""
            bit_node(fn, f, mask, 16, name, text, b + 2, b + 4, abbrev)
        for i, (name, abbrev) in enumerate((("Questions", "dns.count.queries"), ("Answer RRs", "dns.count.answers"),
                                            ("Authority RRs", "dns.count.auth_rr"), ("Additional RRs", "dns.count.add_rr"))):
            leaf(node, f"{name}: {lay.counts[i]}", 4 + 2 * i, 2, abbrev, str(lay.counts[i]))
    if lay.questions:
        qs = lay.questions
        qn = leaf(node, "Queries", qs[0].start, qs[-1].end - qs[0].start)
        for q in qs:
            name = q.name.text or "<Root>"
            cls = _CLASSES.get(q.cls, f"Unknown ({q.cls})") if q.cls & 0x7FFF == q.cls else f"0x{q.cls:04x}"
            e = leaf(qn, f"{name}: type {_type_text(q.type)}, class {cls}", q.start, q.end - q.start)
            n0, n1 = q.name.start, q.name.end
            leaf(e, f"Name: {name}", n0, n1 - n0, "dns.qry.name", name)
            leaf(e, f"[Name Length: {len(name)}]", n0, n1 - n0, "dns.qry.name.len", str(len(name)))
            leaf(e, f"[Label Count: {q.name.labels}]", n0, n1 - n0, "dns.count.labels", str(q.name.labels))
            leaf(e, f"Type: {_TYPE_WORDS.get(q.type, _type_text(q.type))} ({q.type})", n1, 2, "dns.qry.type", str(q.type))
            leaf(e, f"Class: {_CLASSES.get(q.cls, 'Unknown')} (0x{q.cls:04x})", n1 + 2, 2, "dns.qry.class", f"0x{q.cls:04x}")
    for section, title in enumerate(_SECTIONS):
        rrs = [r for r in lay.records if r.section == section]
        if not rrs:
            continue
        sn = leaf(node, title, rrs[0].start, rrs[-1].end - rrs[0].start)
        for r in rrs:
            _record_node(sn, r, payload, leaf)
    if lay.error is not None:
        node.add(f"[Malformed Packet: DNS: {lay.error}]", b + max(lay.error_at, 0), b + len(payload), "_ws.malformed")
    node.children.append(wirefall_node(fr))
    got = fields(("dns.response_in", "dns.response_to", "dns.time"))
    for v in got.get("dns.response_in", [])[:1]:
        node.children.append(Node(f"[Response In: {v}]", [], -1, -1, "dns.response_in", str(v)))
    for v in got.get("dns.response_to", [])[:1]:
        node.children.append(Node(f"[Request In: {v}]", [], -1, -1, "dns.response_to", str(v)))
    for v in got.get("dns.time", [])[:1]:
        node.children.append(Node(f"[Time: {seconds_text(v, 9)} seconds]", [], -1, -1, "dns.time", seconds_text(v, 9)))
    return node


def _record_node(parent, r, payload: bytes, leaf) -> None:
    """One resource record: its summary line and fields, as Wireshark's (``dns.resp.*``, and
    the data of the types a page load meets; any other type's data as bytes)."""
    import socket
    import struct

    from wirefall.dissectors.dns import DnsError, RRType, _name

    from ..detail import bit_text

    name = r.name.text or "<Root>"
    n0, n1 = r.name.start, r.name.end
    d0, d1 = r.rdata, r.end
    data = payload[d0:d1]
    cls = _CLASSES.get(r.cls, f"Unknown ({r.cls})")
    if r.type == RRType.OPT:
        e = leaf(parent, f"{name}: type OPT", r.start, r.end - r.start)
        leaf(e, f"Name: {name}", n0, n1 - n0, "dns.resp.name", name)
        leaf(e, "Type: OPT (41)", n1, 2, "dns.resp.type", "41")
        leaf(e, f"UDP payload size: {r.cls}", n1 + 2, 2, "dns.rr.udp_payload_size", str(r.cls))
        leaf(e, f"Higher bits in extended RCODE: 0x{r.ttl >> 24:02x}", n1 + 4, 1, "dns.resp.ext_rcode", f"0x{r.ttl >> 24:02x}")
        leaf(e, f"EDNS0 version: {r.ttl >> 16 & 0xFF}", n1 + 5, 1, "dns.resp.edns0_version", str(r.ttl >> 16 & 0xFF))
        z = r.ttl & 0xFFFF
        zn = leaf(e, f"Z: 0x{z:04x}", n1 + 6, 2, "dns.resp.z", f"0x{z:04x}")
        leaf(zn, f"{bit_text(z, 0x8000, 16)} = DO bit: {'Accepts' if z & 0x8000 else 'Cannot handle'} DNSSEC security RRs", n1 + 6, 2,
             "dns.resp.z.do", str(z >> 15))
        leaf(zn, f"{bit_text(z, 0x7FFF, 16)} = Reserved: 0x{z & 0x7FFF:04x}", n1 + 6, 2, "dns.resp.z.reserved", f"0x{z & 0x7FFF:04x}")
        leaf(e, f"Data length: {d1 - d0}", n1 + 8, 2, "dns.resp.len", str(d1 - d0))
        if data:
            leaf(e, f"Option data ({d1 - d0} bytes)", d0, d1 - d0, "dns.opt", data.hex())
        return
    summary = f"{name}: type {_type_text(r.type)}, class {cls}"
    rows: list[tuple[str, int, int, str, str]] = []  # (text, start, size, abbrev, value) of the data's fields

    def named(at: int) -> tuple[str, int]:
        text, end = _name(payload, at)
        return text or "<Root>", end

    try:
        if r.type == RRType.A and len(data) == 4:
            a = socket.inet_ntoa(data)
            summary += f", addr {a}"
            rows.append((f"Address: {a}", d0, 4, "dns.a", a))
        elif r.type == RRType.AAAA and len(data) == 16:
            a = socket.inet_ntop(socket.AF_INET6, data)
            summary += f", addr {a}"
            rows.append((f"AAAA Address: {a}", d0, 16, "dns.aaaa", a))
        elif r.type in (RRType.CNAME, RRType.NS, RRType.PTR):
            t, _ = named(d0)
            word, abbrev, short = {RRType.CNAME: ("CNAME", "dns.cname", "cname"), RRType.NS: ("Name Server", "dns.ns", "ns"),
                                   RRType.PTR: ("Domain Name", "dns.ptr.domain_name", "")}[RRType(r.type)]
            summary += f", {short} {t}" if short else f", {t}"
            rows.append((f"{word}: {t}", d0, d1 - d0, abbrev, t))
        elif r.type == RRType.MX and len(data) >= 3:
            pref = struct.unpack_from("!H", payload, d0)[0]
            t, _ = named(d0 + 2)
            summary += f", preference {pref}, mx {t}"
            rows += [(f"Preference: {pref}", d0, 2, "dns.mx.preference", str(pref)), (f"Mail Exchange: {t}", d0 + 2, d1 - d0 - 2, "dns.mx.mail_exchange", t)]
        elif r.type == RRType.SOA:
            m, at = named(d0)
            rn, at2 = named(at)
            if at2 + 20 > d1:
                raise DnsError("SOA record shorter than its fields")
            summary += f", mname {m}"
            rows += [(f"Primary name server: {m}", d0, at - d0, "dns.soa.mname", m),
                     (f"Responsible authority's mailbox: {rn}", at, at2 - at, "dns.soa.rname", rn)]
            serial, refresh, retry, expire, minimum = struct.unpack_from("!IIIII", payload, at2)
            rows.append((f"Serial Number: {serial}", at2, 4, "dns.soa.serial_number", str(serial)))
            for i, (word, abbrev, v) in enumerate((("Refresh Interval", "dns.soa.refresh_interval", refresh),
                                                   ("Retry Interval", "dns.soa.retry_interval", retry),
                                                   ("Expire limit", "dns.soa.expire_limit", expire),
                                                   ("Minimum TTL", "dns.soa.minimum_ttl", minimum))):
                rows.append((f"{word}: {time_text(v)}", at2 + 4 + 4 * i, 4, abbrev, str(v)))
        elif r.type == RRType.TXT:
            at = d0
            while at < d1:
                ln = payload[at]
                txt = payload[at + 1 : min(at + 1 + ln, d1)].decode("utf-8", "replace")
                rows += [(f"TXT Length: {ln}", at, 1, "dns.txt.length", str(ln)), (f"TXT: {txt}", at + 1, min(ln, d1 - at - 1), "dns.txt", txt)]
                at += 1 + ln
        elif data:
            rows.append((f"Data ({len(data)} bytes)", d0, len(data), "dns.data", data.hex()))
    except (DnsError, ValueError, struct.error, OSError):
        rows.append((f"[Malformed record data ({len(data)} bytes)]", d0, len(data), "_ws.malformed", ""))
    e = leaf(parent, summary, r.start, r.end - r.start)
    leaf(e, f"Name: {name}", n0, n1 - n0, "dns.resp.name", name)
    leaf(e, f"Type: {_TYPE_WORDS.get(r.type, _type_text(r.type))} ({r.type})", n1, 2, "dns.resp.type", str(r.type))
    leaf(e, f"Class: {_CLASSES.get(r.cls, 'Unknown')} (0x{r.cls:04x})", n1 + 2, 2, "dns.resp.class", f"0x{r.cls:04x}")
    leaf(e, f"Time to live: {time_text(r.ttl)}", n1 + 4, 4, "dns.resp.ttl", str(r.ttl))
    leaf(e, f"Data length: {d1 - d0}", n1 + 8, 2, "dns.resp.len", str(d1 - d0))
    for text, start, size, abbrev, value in rows:
        leaf(e, text, start, size, abbrev, value)
