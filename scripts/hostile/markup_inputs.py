"""Captures whose text attacks whoever displays it (issue 18, finding 8).

``build(path)`` writes a small pcap (Ethernet/IPv4/TCP, made with dpkt) holding

1. a normal HTTP/1.1 exchange (``GET /index.html`` → 200, 120-byte body) that must survive,
2. an HTTP/1.1 exchange whose request target, Host, User-Agent, response reason phrase,
   Content-Type and Server carry terminal escapes (OSC 0 window title, CSI clear screen,
   OSC 8 hyperlink, an 8-bit CSI ``\\x9b``, BEL, CR), Rich/Textual markup
   (``[link=…]``, ``[b]``) and HTML / Plotly label markup: ``<a href=…>``,
   ``<span style=…>``, ``<script>``, ``<img onerror>``, ``<br>``, ``<b>``;
3. a TLS ClientHello whose server name (SNI) carries an OSC 0 sequence and ``<a href>``.

``hostile_name()`` is a file name with an escape sequence and a bidi override (U+202E)
for the capture itself (file names are shown by every view).

Run as a script to write the capture: ``python scripts/hostile/markup_inputs.py OUT.pcap``.
"""
from __future__ import annotations

import struct
import sys

ATTACKER = "attacker.example"
ESC_SEQS = [
    "\x1b]0;pwned-title\x07",  # OSC 0: window title
    "\x1b[2J\x1b[H",  # clear screen, cursor home
    f"\x1b]8;;https://{ATTACKER}/osc8\x1b\\osc8-link\x1b]8;;\x1b\\",  # OSC 8 hyperlink
    "\x9b31m",  # 8-bit CSI (latin-1 byte 0x9b)
    "\r\x07",
]
LINK = f'<a href="https://{ATTACKER}/a">click-me</a>'
SPAN = '<span style="position:fixed;top:0;left:0;font-size:90px;color:red;background:yellow">restyled</span>'
SCRIPT = "<script>window.__pwned=1</script>"
IMG = "<img src=x onerror=\"window.__pwned=2\">"
RICH = f"[link=https://{ATTACKER}/rich]rich-link[/link][b]bold[/b]"
# what no output may turn into an element / attribute
MARKUP_WORDS = ("click-me", "restyled")

NORMAL_URL = "http://normal.example/index.html"
HOSTILE_PATH = ("/p" + "".join(ESC_SEQS) + LINK.replace(" ", "\t") + SPAN.replace(" ", "\t") + SCRIPT + IMG.replace(" ", "\t")
                + "<br><b>b</b>" + RICH.replace(" ", "\t"))
HOSTILE_HOST = f"<a href=\"https://{ATTACKER}/h\">host-link</a>" + ESC_SEQS[0]
HOSTILE_UA = ESC_SEQS[0] + ESC_SEQS[1] + " " + SPAN + " " + RICH
HOSTILE_CT = "text/html" + LINK + ESC_SEQS[2]
HOSTILE_SERVER = ESC_SEQS[0] + SCRIPT + IMG + ESC_SEQS[3]
HOSTILE_REASON = "OK" + ESC_SEQS[1] + "<b>bold</b>" + SPAN
HOSTILE_SNI = "evil" + ESC_SEQS[0] + LINK.replace(" ", "") + ".example"
BODY = b"<html><body>" + b"x" * 94 + b"</body></html>"  # 120 bytes


def hostile_name(suffix: str = ".pcap") -> str:
    """A capture file name that carries an OSC 0 sequence and a bidi override."""
    return "cap-\x1b]0;name-title\x07-\u202e<b>x" + suffix


def _lat(s: str) -> bytes:
    return s.encode("latin-1")


def _request(path: str, host: str, extra: list[tuple[str, str]] = ()) -> bytes:
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}", *[f"{k}: {v}" for k, v in extra], "", ""]
    return _lat("\r\n".join(lines))


def _response(reason: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
    lines = [f"HTTP/1.1 200 {reason}", *[f"{k}: {v}" for k, v in headers], f"Content-Length: {len(body)}", "", ""]
    return _lat("\r\n".join(lines)) + body


def _client_hello(sni: str) -> bytes:
    name = sni.encode("ascii")
    sni_ext = struct.pack("!HBH", len(name) + 3, 0, len(name)) + name
    exts = struct.pack("!HH", 0, len(sni_ext)) + sni_ext
    body = (b"\x03\x03" + bytes(range(32)) + b"\x00" + struct.pack("!H", 2) + b"\x13\x01" + b"\x01\x00"
            + struct.pack("!H", len(exts)) + exts)
    hs = b"\x01" + len(body).to_bytes(3, "big") + body
    return b"\x16\x03\x01" + struct.pack("!H", len(hs)) + hs


def _conversation(cport: int, sport: int, cip: bytes, sip: bytes, exchanges: list[tuple[bytes, bytes | None]], t: float):
    """(time, ethernet frame bytes) of one TCP connection: handshake, each request and
    response (acknowledged), FIN both ways."""
    import dpkt

    out = []
    cseq, sseq = 1000, 5000

    def pkt(src_is_client: bool, flags: int, payload: bytes = b""):
        nonlocal t, cseq, sseq
        if src_is_client:
            tcp = dpkt.tcp.TCP(sport=cport, dport=sport, seq=cseq, ack=sseq if flags & dpkt.tcp.TH_ACK else 0, flags=flags,
                               win=65535, data=payload)
            ip = dpkt.ip.IP(src=cip, dst=sip, p=6, ttl=64, data=tcp)
            cseq += len(payload) + (1 if flags & (dpkt.tcp.TH_SYN | dpkt.tcp.TH_FIN) else 0)
        else:
            tcp = dpkt.tcp.TCP(sport=sport, dport=cport, seq=sseq, ack=cseq, flags=flags, win=65535, data=payload)
            ip = dpkt.ip.IP(src=sip, dst=cip, p=6, ttl=64, data=tcp)
            sseq += len(payload) + (1 if flags & (dpkt.tcp.TH_SYN | dpkt.tcp.TH_FIN) else 0)
        ip.len = 20 + len(bytes(tcp))
        eth = dpkt.ethernet.Ethernet(src=b"\x02\x00\x00\x00\x00\x01" if src_is_client else b"\x02\x00\x00\x00\x00\x02",
                                     dst=b"\x02\x00\x00\x00\x00\x02" if src_is_client else b"\x02\x00\x00\x00\x00\x01",
                                     type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
        out.append((t, bytes(eth)))
        t += 0.001

    S, A, P, F = dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK, dpkt.tcp.TH_PUSH, dpkt.tcp.TH_FIN
    pkt(True, S)
    pkt(False, S | A)
    pkt(True, A)
    for req, resp in exchanges:
        pkt(True, P | A, req)
        pkt(False, A)
        if resp is not None:
            pkt(False, P | A, resp)
            pkt(True, A)
    pkt(True, F | A)
    pkt(False, F | A)
    pkt(True, A)
    return out, t


def packets() -> list[tuple[float, bytes]]:
    cip, sip, tip = b"\x0a\x00\x00\x01", b"\x0a\x00\x00\x02", b"\x0a\x00\x00\x03"
    normal = (_request("/index.html", "normal.example", [("User-Agent", "wirefall-test"), ("Accept", "*/*")]),
              _response("OK", [("Content-Type", "text/html"), ("Server", "normal")], BODY))
    hostile = (_request(HOSTILE_PATH, HOSTILE_HOST, [("User-Agent", HOSTILE_UA), ("X-Markup", LINK + " " + SPAN + " " + IMG)]),
               _response(HOSTILE_REASON, [("Content-Type", HOSTILE_CT), ("Server", HOSTILE_SERVER)], BODY))
    t = 1_700_000_000.0
    a, t = _conversation(40001, 80, cip, sip, [normal], t)
    b, t = _conversation(40002, 80, cip, sip, [hostile], t + 0.01)
    c, t = _conversation(40003, 443, cip, tip, [(_client_hello(HOSTILE_SNI), None)], t + 0.01)
    return a + b + c


def build(path: str) -> str:
    """Write the capture to ``path`` (pcap, Ethernet) and return ``path``."""
    import dpkt

    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        for ts, frame in packets():
            w.writepkt(frame, ts=ts)
    return path


if __name__ == "__main__":
    print(build(sys.argv[1] if len(sys.argv) > 1 else "markup.pcap"))
