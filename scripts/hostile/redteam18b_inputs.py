"""Red-team inputs for issue 18 (round 2, second pass): findings 1 and 7-11, built from scratch.

Every capture holds at least one normal HTTP/1.1 exchange (``GET /redteam18b/ok`` → 200 with
the body ``NORMAL_BODY``) on its own TCP connection, so a test can check that good data
survives whatever the rest of the file does.  Packets are packed with ``struct`` (Ethernet,
IPv4, TCP), independently of the other hostile scripts.

    python scripts/hostile/redteam18b_inputs.py OUTDIR      # writes every input, lists them
"""
from __future__ import annotations

import bz2
import gzip
import lzma
import os
import struct
import sys
from pathlib import Path

NORMAL_PATH = "/redteam18b/ok"
NORMAL_HOST = "normal.redteam18b.example"
NORMAL_BODY = b"redteam18b normal body: this exchange must survive\n" * 3
T0 = 1_700_000_000.0


# ------------------------------------------------------------------ packets

def _csum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _ip(src: bytes, dst: bytes, proto: int, payload: bytes, ident: int = 1) -> bytes:
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident & 0xFFFF, 0x4000, 64, proto, 0, src, dst)
    return hdr[:10] + struct.pack("!H", _csum(hdr)) + hdr[12:] + payload


def tcp_frame(src: bytes, dst: bytes, sport: int, dport: int, seq: int, ack: int, flags: int, payload: bytes = b"") -> bytes:
    """An Ethernet/IPv4/TCP frame with correct checksums."""
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0)
    pseudo = struct.pack("!4s4sBBH", src, dst, 0, 6, len(tcp) + len(payload))
    c = _csum(pseudo + tcp + payload)
    tcp = tcp[:16] + struct.pack("!H", c) + tcp[18:]
    eth = b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00"
    return eth + _ip(src, dst, 6, tcp + payload)


def udp_frame(src: bytes, dst: bytes, sport: int, dport: int, payload: bytes) -> bytes:
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    return b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + _ip(src, dst, 17, udp)


SYN, ACK, PSH, FIN = 0x02, 0x10, 0x08, 0x01


def conversation(exchanges: list[tuple[bytes, bytes | None]], cport: int = 41000, sport: int = 80,
                 cip: bytes = b"\x0a\x12\x00\x01", sip: bytes = b"\x0a\x12\x00\x02", t: float = T0,
                 seg: int = 1400) -> tuple[list[tuple[float, bytes]], float]:
    """One TCP connection (handshake, each request/response split into ``seg``-byte segments
    and acknowledged, FIN both ways): a list of (time, frame) and the time after it."""
    out: list[tuple[float, bytes]] = []
    cs, ss = 1000, 900_000

    def send(client: bool, flags: int, payload: bytes = b"") -> None:
        nonlocal t, cs, ss
        if client:
            out.append((t, tcp_frame(cip, sip, cport, sport, cs, ss if flags & ACK else 0, flags, payload)))
            cs += len(payload) + (1 if flags & (SYN | FIN) else 0)
        else:
            out.append((t, tcp_frame(sip, cip, sport, cport, ss, cs, flags, payload)))
            ss += len(payload) + (1 if flags & (SYN | FIN) else 0)
        t += 0.0005

    send(True, SYN)
    send(False, SYN | ACK)
    send(True, ACK)
    for req, resp in exchanges:
        for i in range(0, len(req), seg):
            send(True, PSH | ACK, req[i : i + seg])
        send(False, ACK)
        if resp is not None:
            for i in range(0, len(resp), seg):
                send(False, PSH | ACK, resp[i : i + seg])
            send(True, ACK)
    send(True, FIN | ACK)
    send(False, FIN | ACK)
    send(True, ACK)
    return out, t


def http1_request(path: str = NORMAL_PATH, host: str = NORMAL_HOST, extra: list[tuple[str, str]] | None = None) -> bytes:
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}", "User-Agent: redteam18b", "Accept: */*",
             *[f"{k}: {v}" for k, v in extra or []], "", ""]
    return "\r\n".join(lines).encode("utf-8", "surrogateescape")


def http1_response(body: bytes = NORMAL_BODY, reason: str = "OK", extra: list[tuple[str, str]] | None = None) -> bytes:
    lines = [f"HTTP/1.1 200 {reason}", "Content-Type: text/plain", *[f"{k}: {v}" for k, v in extra or []],
             f"Content-Length: {len(body)}", "", ""]
    return "\r\n".join(lines).encode("utf-8", "surrogateescape") + body


def normal_packets(t: float = T0, cport: int = 41000) -> list[tuple[float, bytes]]:
    """The normal exchange every capture keeps."""
    return conversation([(http1_request(), http1_response())], cport=cport, t=t)[0]


def many_normal_packets(n: int, t: float = T0) -> list[tuple[float, bytes]]:
    """``n`` normal exchanges, each on its own connection (ports 41000 + i; the first one is ``normal_packets``')."""
    out = []
    for i in range(n):
        p, t = conversation([(http1_request(f"{NORMAL_PATH}/{i}" if i else NORMAL_PATH), http1_response())], cport=41000 + i, t=t)
        out += p
    return out


# ------------------------------------------------------------------ files

def pcap(packets: list[tuple[float, bytes]], linktype: int = 1) -> bytes:
    parts = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, linktype)]
    for ts, data in packets:
        sec = int(ts)
        parts.append(struct.pack("<IIII", sec, int(round((ts - sec) * 1e6)), len(data), len(data)) + data)
    return b"".join(parts)


def _block(btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = len(body) + 12
    return struct.pack("<II", btype, n) + body + struct.pack("<I", n)


def _opt(code: int, value: bytes) -> bytes:
    return struct.pack("<HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def shb() -> bytes:
    return _block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))


def idb(linktype: int = 1, tsresol: int | None = None, tsoffset: int | None = None, name: str | None = None) -> bytes:
    opts = b""
    if name is not None:
        opts += _opt(2, name.encode("utf-8", "surrogateescape"))
    if tsresol is not None:
        opts += _opt(9, bytes([tsresol]))
    if tsoffset is not None:
        opts += _opt(14, struct.pack("<q", tsoffset))
    if opts:
        opts += _opt(0, b"")
    return _block(1, struct.pack("<HHI", linktype, 0, 262144) + opts)


def epb(iid: int, ticks: int, data: bytes) -> bytes:
    ticks &= (1 << 64) - 1
    return _block(6, struct.pack("<IIIII", iid, ticks >> 32, ticks & 0xFFFFFFFF, len(data), len(data)) + data)


def epbs_us(iid: int, packets: list[tuple[float, bytes]]) -> bytes:
    """Packets on interface ``iid`` with the default microsecond resolution."""
    return b"".join(epb(iid, int(round(ts * 1e6)), d) for ts, d in packets)


def write(path: str | Path, data: bytes) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


# ------------------------------------------------------------------ finding 1: damaged compressed captures

def compress(data: bytes, fmt: str) -> bytes:
    if fmt == "gz":
        return gzip.compress(data, 6, mtime=0)
    if fmt == "xz":
        return lzma.compress(data)
    if fmt == "bz2":
        return bz2.compress(data, 9)
    import zstandard

    return zstandard.ZstdCompressor(level=3, write_content_size=True, write_checksum=True).compress(data)


def compressed_variants(out: str | Path, n: int = 40) -> dict[str, Path]:
    """``normal.pcap`` (n exchanges, the first one ``normal_packets``) and, for each of gz,
    xz, bz2, zst: the whole file, cut at 1/3 and 2/3 and a few bytes before the end, cut
    inside the compression header (12 bytes), damaged (16 bytes inverted at 50 %), with
    garbage after the end, and two concatenated streams.  Keys: ``FMT-how``."""
    out = Path(out)
    plain = pcap(many_normal_packets(n))
    res = {"plain": write(out / "normal.pcap", plain)}
    for fmt in ("gz", "xz", "bz2", "zst"):
        c = compress(plain, fmt)
        res[f"{fmt}-whole"] = write(out / f"whole.pcap.{fmt}", c)
        res[f"{fmt}-cut33"] = write(out / f"cut33.pcap.{fmt}", c[: len(c) // 3])
        res[f"{fmt}-cut66"] = write(out / f"cut66.pcap.{fmt}", c[: 2 * len(c) // 3])
        res[f"{fmt}-cutend"] = write(out / f"cutend.pcap.{fmt}", c[:-3])
        res[f"{fmt}-cuthead"] = write(out / f"cuthead.pcap.{fmt}", c[:12])
        d = bytearray(c)
        mid = len(d) // 2
        for i in range(mid, mid + 16):
            d[i] ^= 0xFF
        res[f"{fmt}-damaged"] = write(out / f"damaged.pcap.{fmt}", bytes(d))
        res[f"{fmt}-trailing"] = write(out / f"trailing.pcap.{fmt}", c + b"GARBAGE-AFTER-THE-END" * 10)
        half = len(plain) // 2
        res[f"{fmt}-concat"] = write(out / f"concat.pcap.{fmt}", compress(plain[:half], fmt) + compress(plain[half:], fmt))
    # the wrong magic for its name, and a compressed non-capture
    res["gz-notcapture"] = write(out / "notcapture.pcap.gz", gzip.compress(b"hello, this is not a capture\n" * 50))
    res["zst-empty"] = write(out / "empty.pcap.zst", compress(b"", "zst"))
    return res


# ------------------------------------------------------------------ finding 7: odd pcapng

def many_interfaces(out: str | Path, n: int = 70_000) -> Path:
    """``n`` IDBs; the normal exchange on the last one (id n-1 > 65535), a packet on an
    undeclared interface id (n + 5)."""
    p = normal_packets()
    body = shb() + idb() * n + epbs_us(n - 1, p) + epb(n + 5, int(T0 * 1e6), p[0][1])
    return write(out, body)


def odd_timestamps(out: str | Path) -> Path:
    """Interfaces with if_tsresol 0 (seconds), 2^-127, 10^-127 and 10^127 (127: byte 0x7f),
    huge and negative if_tsoffset, and ticks of 2^64-1; the normal exchange on a sane
    interface (0) and again, shifted, on the odd ones."""
    p = normal_packets()
    ifs = [idb(),  # 0: sane
           idb(tsresol=0),  # 1: 1 s ticks
           idb(tsresol=0xFF),  # 2: 2^-127 s
           idb(tsresol=0x7F),  # 3: 10^-127 s
           idb(tsresol=0, tsoffset=-(1 << 63)),  # 4: most negative offset
           idb(tsoffset=(1 << 63) - 1),  # 5: most positive offset
           idb(tsresol=0x80),  # 6: 2^0 = 1 s
           idb(tsresol=0x80 | 64, tsoffset=-T0.__int__())]  # 7: 2^-64 s, offset back to 1970
    blocks = [shb(), *ifs, epbs_us(0, p)]
    # the normal packets again on each odd interface, with extreme ticks
    for iid, ticks in ((1, (1 << 64) - 1), (2, (1 << 64) - 1), (3, 12345), (4, 0), (5, (1 << 64) - 1),
                       (6, (1 << 63) + 5), (7, 1)):
        blocks.append(b"".join(epb(iid, ticks + i, d) for i, (_, d) in enumerate(p[:3])))
    # a second section: interfaces reset; its packets name interface 0 of the new section
    blocks += [shb(), idb(tsresol=0), epb(0, (1 << 64) - 1, p[0][1])]
    return write(out, b"".join(blocks))


# ------------------------------------------------------------------ finding 8: markup and escapes

EVIL = "attacker18b.example"
ESC = {
    "osc0": "\x1b]0;RT18B-TITLE\x07",
    "osc8": f"\x1b]8;;https://{EVIL}/osc8\x1b\\RT18B-OSC8\x1b]8;;\x1b\\",
    "clear": "\x1b[2J\x1b[3J\x1bc",
    "c1csi": "\u009b31m",  # U+009B (C1 CSI) as UTF-8
    "bidi": "\u202eRT18B-BIDI\u202c\u2066x\u2069",
    "sep": "\u2028\u2029",
    "del": "\x7f\x08",
}
LINK = f'<a href="https://{EVIL}/plotly">RT18B-LINK</a>'
STYLE = '<span style="font-size:80px;color:red">RT18B-STYLE</span>'
BR_B = "<br><b>RT18B-BOLD</b><i>i</i><sub>s</sub>"
RICH = f"[link=https://{EVIL}/rich]RT18B-RICH[/link][bold red]x[/]"
ALL_ESC = "".join(ESC.values())
MARKUP = LINK + STYLE + BR_B + RICH


def markup_name(suffix: str = ".pcap") -> str:
    """A file name carrying OSC 0, CSI clear, bidi and Plotly markup (no '/')."""
    return "rt18b-\x1b]0;NAME-TITLE\x07\x1b[2J\u202e<b>N<br>\x9b1m" + suffix


def _client_hello(sni: bytes) -> bytes:
    sni_ext = struct.pack("!HBH", len(sni) + 3, 0, len(sni)) + sni
    alpn = b"\x00\x10" + struct.pack("!HHB", 9, 7, 6) + b"h\x1b]0;2"
    exts = struct.pack("!HH", 0, len(sni_ext)) + sni_ext + alpn
    body = (b"\x03\x03" + bytes(32) + b"\x00" + struct.pack("!H", 2) + b"\x13\x01" + b"\x01\x00"
            + struct.pack("!H", len(exts)) + exts)
    hs = b"\x01" + len(body).to_bytes(3, "big") + body
    return b"\x16\x03\x01" + struct.pack("!H", len(hs)) + hs


def markup_packets() -> list[tuple[float, bytes]]:
    p = normal_packets()
    t = p[-1][0] + 0.01
    # hostile text in the request target, Host, a header name and value, reason phrase,
    # Content-Type, Server and the body; raw 8-bit C1 bytes (latin-1 0x9b, 0x9d) too
    path = "/rt18b/" + ESC["osc0"] + LINK.replace(" ", "%20") + ESC["osc8"] + STYLE.replace(" ", "%20") + BR_B + ESC["bidi"]
    host = EVIL + ESC["osc0"] + "<b>H</b>"
    req = http1_request(path, host, [("X-Evil" + ESC["c1csi"], ALL_ESC + MARKUP), ("Referer", f"https://{EVIL}/" + LINK),
                                     ("X-Raw-C1", "\udc9b31m\udc9d0;RAWC1\x07")])
    resp = http1_response(b"<html>" + MARKUP.encode() + b"</html>", reason="OK" + ESC["clear"] + STYLE + ESC["sep"],
                          extra=[("Server", ESC["osc0"] + LINK), ("X-Evil", ALL_ESC + MARKUP)])
    resp = resp.replace(b"Content-Type: text/plain", ("Content-Type: text/html" + ESC["osc8"] + LINK).encode())
    a, t = conversation([(req, resp)], cport=41100, t=t)
    # a TLS ClientHello with a hostile SNI (raw bytes, escapes and markup)
    sni = ("rt18b" + ESC["osc0"] + LINK.replace(" ", "") + ESC["bidi"]).encode("utf-8")
    b, t = conversation([(_client_hello(sni), None)], cport=41101, sport=443, sip=b"\x0a\x12\x00\x03", t=t + 0.01)
    # a damaged exchange to make notes and errors: a response whose status line carries escapes
    bad = (b"HTTP/1.1 2\x1b]0;BADSTATUS\x07 <a href=x>s</a>\r\nContent-Length: 5\r\n\r\nhello")
    c, t = conversation([(http1_request("/rt18b/bad" + ESC["osc0"]), bad)], cport=41102, t=t + 0.01)
    return p + a + b + c


def markup_capture(out: str | Path) -> Path:
    return write(out, pcap(markup_packets()))


# ------------------------------------------------------------------ finding 10: decompression bombs

def _zero_record_stream(n_records: int) -> bytes:
    """pcap record headers of 0-byte packets (16 bytes each, all zero: ts 0)."""
    return b"\0" * (16 * n_records)


def bomb(out: str | Path, fmt: str, n_records: int = 4 << 20) -> Path:
    """A small compressed capture: the normal exchange, then ``n_records`` empty records
    (16 zero bytes each: 64 MiB for 4 Mi) — a ratio of thousands to one."""
    head = pcap(normal_packets())
    if fmt == "bz2":
        c = bz2.BZ2Compressor(9)
    elif fmt == "gz":
        import zlib

        c = zlib.compressobj(9, wbits=31)
    elif fmt == "xz":
        c = lzma.LZMACompressor()
    else:
        import zstandard

        c = zstandard.ZstdCompressor(level=19).compressobj()
    parts = [c.compress(head)]
    block = _zero_record_stream(1 << 16)  # 1 MiB
    for _ in range(n_records >> 16):
        parts.append(c.compress(block))
    parts.append(c.flush())
    return write(out, b"".join(parts))


def zeros_after_normal(out: str | Path, fmt: str, zeros: int = 1 << 30, record: int = 0x3FFFFFF) -> Path:
    """The normal exchange, then ``zeros`` bytes in records of ``record`` zero bytes each (just
    under the reader's 64 MiB plausibility bound): few packets, many decompressed bytes."""
    head = pcap(normal_packets())
    if fmt == "bz2":
        c = bz2.BZ2Compressor(9)
    else:
        import zlib

        c = zlib.compressobj(9, wbits=31)
    parts = [c.compress(head)]
    block = bytes(1 << 20)
    left = zeros
    while left > 0:
        n = min(record, left)
        parts.append(c.compress(struct.pack("<IIII", int(T0) + 10, 0, n, n)))
        for i in range(0, n, len(block)):
            parts.append(c.compress(block[: min(len(block), n - i)]))
        left -= n
    parts.append(c.flush())
    return write(out, b"".join(parts))


# ------------------------------------------------------------------ finding 11: silent data loss

def h2c_damaged_length(out: str | Path, sample: str | Path, flip: tuple[int, int] = (0x7F, 0xFF)) -> tuple[Path, int]:
    """The largest HTTP/2 DATA frame of a real h2c capture gets a length of ``flip`` (two
    damaged bytes in its 24-bit length: over the 16384 maximum frame size); the capture's
    own normal exchange is appended as a separate connection.  Returns the path and the
    packet number damaged."""
    import dpkt

    with open(sample, "rb") as f:
        pkts = [(ts, bytes(buf)) for ts, buf in dpkt.pcap.Reader(f)]
    # a server-to-client segment starting with a frame header of type DATA (0) on a stream
    best = None
    for i, (_, buf) in enumerate(pkts):
        eth = dpkt.ethernet.Ethernet(buf)
        if not isinstance(eth.data, dpkt.ip.IP) or not isinstance(eth.data.data, dpkt.tcp.TCP):
            continue
        tcp = eth.data.data
        d = bytes(tcp.data)
        if len(d) >= 9 and d[3] == 0 and int.from_bytes(d[:3], "big") == 16384 and tcp.sport != 80 + 0 * 1:
            pass
        if len(d) >= 9 and d[3] == 0 and 0 < int.from_bytes(d[:3], "big") <= 16384 and int.from_bytes(d[5:9], "big") & 0x7FFFFFFF:
            best = i
            break
    assert best is not None, "no DATA frame header at a segment start"
    ts, buf = pkts[best]
    eth = dpkt.ethernet.Ethernet(buf)
    tcp = eth.data.data
    d = bytearray(tcp.data)
    d[0], d[1] = flip
    tcp.data = bytes(d)
    tcp.sum = 0
    eth.data.sum = 0
    eth.data.len = 0
    pkts[best] = (ts, bytes(eth))
    last = pkts[-1][0] + 0.1
    pkts += normal_packets(t=last, cport=41200)
    return write(out, pcap(pkts)), best + 1


def deep_filter(depth: int = 5000) -> list[str]:
    """Display filters nested ``depth`` deep, each a different way."""
    return ["(" * depth + "http" + ")" * depth,
            "not " * depth + "http",
            "!" * depth + "http",
            "frame.len == " + "(" * depth + "1" + ")" * depth,
            "frame.len == " + "-" * depth + "1",
            "frame.len == " + "+".join(["1"] * depth),
            " && ".join(["http"] * depth),
            "http " + "and (" * depth + "tcp" + ")" * depth,
            "{" * depth + "1" + "}" * depth]


def all_inputs(out: str | Path) -> dict[str, Path]:
    out = Path(out)
    res = compressed_variants(out / "compressed")
    res["many_interfaces"] = many_interfaces(out / "many-interfaces.pcapng")
    res["odd_timestamps"] = odd_timestamps(out / "odd-timestamps.pcapng")
    res["markup"] = markup_capture(out / "markup.pcap")
    res["markup_named"] = markup_capture(out / markup_name())
    for fmt in ("bz2", "gz", "xz", "zst"):
        res[f"bomb-{fmt}"] = bomb(out / f"bomb.pcap.{fmt}", fmt)
    res["zeros-bz2"] = zeros_after_normal(out / "zeros.pcap.bz2", "bz2")
    root = Path(__file__).resolve().parents[2]
    res["h2c_damaged"], _ = h2c_damaged_length(out / "h2c-damaged.pcap", root / "sample_captures/http/h2c-nghttp.pcap")
    return res


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    for k, p in all_inputs(argv[1]).items():
        print(f"{k}\t{os.path.getsize(p)}\t{p}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))


def big_upload(out: str | Path, size: int = 190 << 20) -> Path:
    """A ``size``-byte pcap for the web upload: the normal exchange, then UDP datagrams of
    60 KB random bytes to port 9 (discard) up to ``size``."""
    head = pcap(normal_packets())
    p = Path(out)
    with open(p, "wb") as f:
        f.write(head)
        n = len(head)
        t = T0 + 1
        while n < size:
            frame = udp_frame(b"\x0a\x12\x00\x05", b"\x0a\x12\x00\x06", 40000, 9, os.urandom(min(60000, size - n)))
            rec = struct.pack("<IIII", int(t), 0, len(frame), len(frame)) + frame
            f.write(rec)
            n += len(rec)
            t += 0.001
    return p


# ------------------------------------------------------------------ the two bounds once strict xfails

def _h2frame(ftype: int, flags: int, stream: int, payload: bytes) -> bytes:
    return len(payload).to_bytes(3, "big") + bytes([ftype, flags]) + struct.pack("!I", stream) + payload


H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def settings_flood(out: str | Path, n: int = 200_000) -> Path:
    """An h2c connection whose client sends ``n`` SETTINGS frames that the server never
    acknowledges, then a PING; and the normal HTTP/1 exchange on its own connection."""
    one = _h2frame(4, 0, 0, struct.pack("!HI", 1, 4096) * 2)
    client = H2_PREFACE + _h2frame(4, 0, 0, b"") + one * n + _h2frame(6, 0, 0, b"redteam!")
    server = _h2frame(4, 0, 0, b"") + _h2frame(6, 1, 0, b"redteam!")
    p = normal_packets()
    c, _ = conversation([(client, server)], cport=41400, sport=8080, t=p[-1][0] + 0.01, seg=60000)
    return write(out, pcap(p + c))


def many_header_fields(out: str | Path, n: int = 20_000) -> Path:
    """An HTTP/1.1 request with ``n`` header fields (over http1_header_count, under
    http1_header_bytes) answered 200, then a second, normal request on the same connection;
    and the normal exchange on its own connection."""
    big = http1_request("/redteam18b/many", extra=[(f"X-{i}", "v") for i in range(n)])
    p = normal_packets()
    c, _ = conversation([(big, http1_response(b"many")), (http1_request("/redteam18b/after"), http1_response(b"after"))],
                        cport=41401, t=p[-1][0] + 0.01, seg=1400)
    return write(out, pcap(p + c))
