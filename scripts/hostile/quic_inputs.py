"""Hostile QUIC / HTTP/3 / QPACK captures (issue 18), built here rather than committed.

Every packet is really protected: Initial packets with the Initial keys of a chosen DCID
(RFC 9001 §5.2 — anyone can derive them, so an attack in Initial packets needs no key log),
1-RTT packets with traffic secrets this script chooses and writes to a key log.  Packet
protection uses the project's own ``dissectors.quic_crypto.PacketKeys`` (AEAD and header-
protection keys), the inverse of what the dissector does.  Each capture starts with the
packets of a real sample (``sample_captures/quic/aioquic-h3.pcap``) and its key log comes
first, so a test can check that the real connection's requests survive next to the attack.

Functions (each returns ``(pcap bytes, key log text)``):

- ``qpack_bomb(blocks, epoch)`` — QPACK header blocks of 1-byte references to a 60 KB
  dynamic-table entry, on request streams carried by STREAM frames in Initial packets
  (``epoch="initial"``; RFC 9000 §12.4 forbids them there) or 1-RTT packets (``"1rtt"``).
- ``ping_flood(nbytes, shape)`` — QUIC packets full of 1-byte PING frames; ``shape`` is
  ``"1rtt"`` (1 200 PINGs per 1-RTT packet), ``"initial"`` (the same in Initial packets),
  ``"coalesced"`` (many tiny Initial packets of one PING each in every datagram) or
  ``"acks"`` (ACK frames with many ranges).
- ``qpack_long_value(length, huffman)`` — an encoder-stream insert of a ``length``-byte
  value (pylsqpack keeps string lengths in 16 bits) referenced by a request's HEADERS.

``python scripts/hostile/quic_inputs.py OUTDIR`` writes each as ``OUTDIR/NAME.pcap`` with
``OUTDIR/NAME.keys``.
"""
from __future__ import annotations

import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from wirefall.dissectors import quic_crypto as qc  # noqa: E402
from wirefall.dissectors.quic_crypto import PacketKeys  # noqa: E402

SAMPLE_PCAP = ROOT / "sample_captures" / "quic" / "aioquic-h3.pcap"
SAMPLE_KEYS = ROOT / "sample_captures" / "quic" / "aioquic-h3.keys"
BIG_ENTRY = 60_000  # below 65 535: what pylsqpack represents exactly


# ---------------------------------------------------------------- encodings
def varint(v: int) -> bytes:
    """QUIC variable-length integer (RFC 9000 §16), shortest form."""
    if v < 1 << 6:
        return bytes([v])
    if v < 1 << 14:
        return struct.pack(">H", v | 0x4000)
    if v < 1 << 30:
        return struct.pack(">I", v | 0x80000000)
    return struct.pack(">Q", v | 0xC000000000000000)


def qint(v: int, n: int, flags: int = 0) -> bytes:
    """QPACK prefixed integer (RFC 9204 §4.1.1) with an n-bit prefix under ``flags``."""
    m = (1 << n) - 1
    if v < m:
        return bytes([flags | v])
    out = [flags | m]
    v -= m
    while v >= 128:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def qstr(s: bytes, n: int = 7, flags: int = 0, huffman: bool = False) -> bytes:
    """QPACK string literal: H bit just above an n-bit length prefix."""
    if huffman:
        from hpack.huffman import HuffmanEncoder
        from hpack.huffman_constants import REQUEST_CODES, REQUEST_CODES_LENGTH

        s = HuffmanEncoder(REQUEST_CODES, REQUEST_CODES_LENGTH).encode(s)
        flags |= 1 << n
    return qint(len(s), n, flags) + s


def h3_frame(ftype: int, payload: bytes) -> bytes:
    return varint(ftype) + varint(len(payload)) + payload


def settings(**kv) -> bytes:
    ids = {"QPACK_MAX_TABLE_CAPACITY": 0x01, "QPACK_BLOCKED_STREAMS": 0x07}
    return h3_frame(0x04, b"".join(varint(ids[k]) + varint(v) for k, v in kv.items()))


def stream_frame(sid: int, off: int, data: bytes, fin: bool = False) -> bytes:
    return varint(0x08 | 0x04 | 0x02 | int(fin)) + varint(sid) + varint(off) + varint(len(data)) + data


def crypto_frame(off: int, data: bytes) -> bytes:
    return varint(0x06) + varint(off) + varint(len(data)) + data


def ack_frame(largest: int, ranges: int) -> bytes:
    """ACK with ``ranges`` extra ranges of one packet each (2 bytes per range)."""
    out = varint(0x02) + varint(largest) + varint(0) + varint(ranges) + varint(0)
    return out + b"\x00\x00" * ranges


REQUEST_HEAD = (bytes([0xD1, 0xD7, 0xC1])  # :method GET, :scheme https, :path / (static table)
                + qint(0, 4, 0x50) + qstr(b"hostile.example"))  # :authority, literal value


# ---------------------------------------------------------------- TLS handshake messages
def client_hello(random: bytes, alpn: bytes = b"h3") -> bytes:
    sni = b"hostile.example"
    ext_sni = struct.pack(">HHHBH", 0, len(sni) + 5, len(sni) + 3, 0, len(sni)) + sni
    ext_alpn = struct.pack(">HHHB", 16, len(alpn) + 3, len(alpn) + 1, len(alpn)) + alpn
    ext_ver = struct.pack(">HHBH", 43, 3, 2, 0x0304)
    exts = ext_sni + ext_alpn + ext_ver
    body = b"\x03\x03" + random + b"\x00" + struct.pack(">HH", 2, 0x1301) + b"\x01\x00" + struct.pack(">H", len(exts)) + exts
    return b"\x01" + len(body).to_bytes(3, "big") + body


def server_hello(random: bytes) -> bytes:
    exts = struct.pack(">HHH", 43, 2, 0x0304)
    body = b"\x03\x03" + random + b"\x00" + struct.pack(">H", 0x1301) + b"\x00" + struct.pack(">H", len(exts)) + exts
    return b"\x02" + len(body).to_bytes(3, "big") + body


# ---------------------------------------------------------------- QUIC packets
def protect(keys: PacketKeys, header: bytes, pn_off: int, pn: int, pn_len: int, payload: bytes) -> bytes:
    """AEAD-seal ``payload`` under ``header`` and apply header protection (RFC 9001 §5.3-5.4)."""
    nonce = (keys.iv ^ pn).to_bytes(12, "big")
    ct = keys.aead.encrypt(nonce, payload, header)
    sample = ct[4 - pn_len : 20 - pn_len]  # the sample starts 4 bytes after the packet number
    mask = keys.mask(sample)
    h = bytearray(header)
    h[0] ^= mask[0] & (0x0F if h[0] & 0x80 else 0x1F)
    for i in range(pn_len):
        h[pn_off + i] ^= mask[1 + i]
    return bytes(h) + ct


class Connection:
    """One crafted QUIC v1 connection: its CIDs, Initial keys, client random and 1-RTT
    secrets (``keylog()``), and a packet-number counter per space and direction."""

    PN_LEN = 2

    def __init__(self, n: int):
        seed = n.to_bytes(4, "big")
        self.n = n
        self.client = (f"10.99.{n // 200}.{n % 200 + 10}", 40000 + n % 20000)
        self.server = ("10.99.250.1", 443)
        self.dcid = b"\xd0\xc1" + seed + b"\x00\x01"  # the client's first DCID: Initial keys
        self.cid = (b"\xc1" + seed + b"\x00\x00\x01", b"\x5e" + seed + b"\x00\x00\x02")  # each end's SCID
        self.random = seed * 8
        self.initial = qc.initial_keys(qc.VERSION_1, self.dcid)
        self.secrets = (bytes([n & 0xFF, 0xC7]) * 16, bytes([n & 0xFF, 0x57]) * 16)
        self.one_rtt = tuple(PacketKeys(0x1301, s, qc.VERSION_1) for s in self.secrets)
        self.pn = {}

    def keylog(self) -> str:
        cr = self.random.hex()
        return (f"CLIENT_TRAFFIC_SECRET_0 {cr} {self.secrets[0].hex()}\n"
                f"SERVER_TRAFFIC_SECRET_0 {cr} {self.secrets[1].hex()}\n")

    def _next(self, space: str, d: int) -> int:
        pn = self.pn.get((space, d), 0)
        self.pn[(space, d)] = pn + 1
        return pn

    def initial_packet(self, d: int, frames: bytes) -> bytes:
        pn, pl = self._next("initial", d), self.PN_LEN
        if len(frames) < 4:
            frames += b"\x00" * (4 - len(frames))  # room for the header-protection sample
        dcid = self.dcid if d == 0 else self.cid[0]
        head = (bytes([0xC0 | (pl - 1)]) + struct.pack(">I", qc.VERSION_1) + bytes([len(dcid)]) + dcid
                + bytes([len(self.cid[d])]) + self.cid[d] + b"\x00"  # no token
                + struct.pack(">H", 0x4000 | (pl + len(frames) + 16)))
        pn_off = len(head)
        return protect(self.initial[d], head + pn.to_bytes(pl, "big"), pn_off, pn, pl, frames)

    def short_packet(self, d: int, frames: bytes) -> bytes:
        pn, pl = self._next("1rtt", d), self.PN_LEN
        if len(frames) < 4:
            frames += b"\x00" * (4 - len(frames))
        head = bytes([0x40 | (pl - 1)]) + self.cid[1 - d]  # DCID: the receiver's CID
        return protect(self.one_rtt[d], head + pn.to_bytes(pl, "big"), len(head), pn, pl, frames)

    def handshake(self) -> list[tuple[int, bytes]]:
        """Client Initial (ClientHello offering only h3) and server Initial (ServerHello):
        enough for the dissector to name the 1-RTT secrets and the cipher suite."""
        ch = client_hello(self.random)
        sh = server_hello(bytes(32 - 1) + b"\x01")
        return [(0, self.initial_packet(0, crypto_frame(0, ch))), (1, self.initial_packet(1, crypto_frame(0, sh)))]


def _packets(conn: Connection, epoch: str, d: int, frames: list[bytes], size: int = 1400) -> list[tuple[int, bytes]]:
    """Frames packed into packets of about ``size`` bytes of plaintext, one packet per datagram."""
    make = conn.initial_packet if epoch == "initial" else conn.short_packet
    out, cur = [], b""
    for f in frames:
        if cur and len(cur) + len(f) > size:
            out.append((d, make(d, cur)))
            cur = b""
        cur += f
    if cur:
        out.append((d, make(d, cur)))
    return out


def _stream_chunks(sid: int, data: bytes, fin: bool = False, chunk: int = 1300) -> list[bytes]:
    out = []
    for off in range(0, len(data), chunk):
        part = data[off : off + chunk]
        out.append(stream_frame(sid, off, part, fin and off + chunk >= len(data)))
    return out or [stream_frame(sid, 0, b"", fin)]


# ---------------------------------------------------------------- capture writing
def _eth_udp(src, dst, payload: bytes) -> bytes:
    import dpkt

    udp = dpkt.udp.UDP(sport=src[1], dport=dst[1], data=payload)
    udp.ulen = 8 + len(payload)
    ip = dpkt.ip.IP(src=bytes(map(int, src[0].split("."))), dst=bytes(map(int, dst[0].split("."))), p=17, data=udp, ttl=64)
    ip.len = 20 + len(bytes(udp))
    eth = dpkt.ethernet.Ethernet(src=b"\x02\x00\x00\x00\x00\x01", dst=b"\x02\x00\x00\x00\x00\x02", type=0x0800, data=ip)
    return bytes(eth)


def capture(conns: list[tuple[Connection, list[tuple[int, bytes]]]], sample: bool = True) -> tuple[bytes, str]:
    """A pcap (Ethernet): the real sample's packets first (if ``sample``), then each crafted
    connection's datagrams; and the key log (sample's first, then each connection's)."""
    import io

    import dpkt

    buf = io.BytesIO()
    w = dpkt.pcap.Writer(buf, linktype=1, snaplen=262144)
    t = 1.0e9
    keys = ""
    if sample:
        with open(SAMPLE_PCAP, "rb") as fh:
            for ts, pkt in dpkt.pcap.Reader(fh):
                w.writepkt(pkt, ts=ts)
                t = ts
        keys = SAMPLE_KEYS.read_text()
    for conn, dgrams in conns:
        keys += conn.keylog()
        for d, payload in dgrams:
            t += 1e-5
            src, dst = (conn.client, conn.server) if d == 0 else (conn.server, conn.client)
            w.writepkt(_eth_udp(src, dst, payload), ts=t)
    return buf.getvalue(), keys


# ---------------------------------------------------------------- the attacks
def _h3_setup(entry: bytes, entry_name: bytes = b"x-big", huffman: bool = False) -> list[tuple[int, int, bytes]]:
    """(direction, stream id, bytes): both control streams (the server allows a 1 MiB
    QPACK table) and the client's encoder stream inserting one entry."""
    enc = b"\x02" + qint(1 << 20, 5, 0x20) + qint(len(entry_name), 5, 0x40) + entry_name + qstr(entry, huffman=huffman)
    return [(0, 2, b"\x00" + settings()),
            (1, 3, b"\x00" + settings(QPACK_MAX_TABLE_CAPACITY=1 << 20, QPACK_BLOCKED_STREAMS=100)),
            (0, 6, enc)]


# the only entry inserted: Required Insert Count 1, encoded as 1 mod 2*MaxEntries + 1 = 2
# (MaxEntries = 1 MiB / 32), Base = 1; relative index 0 is the entry (RFC 9204 §4.5.1)
DYN_PREFIX = bytes([0x02, 0x00])


def qpack_bomb(blocks: int, epoch: str = "initial", refs: int | None = None, conns: int = 1) -> tuple[bytes, str]:
    """``blocks`` request HEADERS per connection, each ``refs`` 1-byte references to one
    60 KB entry (by default as many as the pre-decode bound of 16 x 1 MiB lets through),
    over ``conns`` connections."""
    if refs is None:
        refs = (16 << 20) // (BIG_ENTRY + 64 + 32) - 8
    block = DYN_PREFIX + REQUEST_HEAD + b"\x80" * refs
    out = []
    for c in range(conns):
        conn = Connection(c + 1)
        dg = conn.handshake()
        for d, sid, data in _h3_setup(b"A" * BIG_ENTRY):
            dg += _packets(conn, epoch, d, _stream_chunks(sid, data))
        frames = [stream_frame(4 * i, 0, h3_frame(0x01, block), fin=True) for i in range(blocks)]
        dg += _packets(conn, epoch, 0, frames)
        out.append((conn, dg))
    return capture(out)


def ping_flood(nbytes: int, shape: str = "1rtt") -> tuple[bytes, str]:
    """About ``nbytes`` of frames that cost 1-2 bytes each (see the module docstring)."""
    conn = Connection(1)
    dg = conn.handshake()
    if shape in ("1rtt", "initial"):
        per = 1200
        make = conn.short_packet if shape == "1rtt" else conn.initial_packet
        dg += [(0, make(0, b"\x01" * per)) for _ in range(max(1, nbytes // per))]
    elif shape == "coalesced":  # tiny Initial packets, one PING each, coalesced 40 to a datagram
        n = 0
        while n < nbytes:
            dgram = b"".join(conn.initial_packet(0, b"\x01\x00\x00\x00") for _ in range(40))
            dg.append((0, dgram))
            n += len(dgram)
    elif shape == "acks":  # one ACK frame per packet, 590 ranges of 2 bytes
        for i in range(max(1, nbytes // 1200)):
            dg.append((1, conn.short_packet(1, ack_frame(10_000 + i, 590))))
    else:
        raise ValueError(shape)
    return capture([(conn, dg)])


def qpack_long_value(length: int = 500_000, huffman: bool = False) -> tuple[bytes, str]:
    """One entry of a ``length``-byte value (``"0"`` * length, Huffman-coded if asked: 5 bits
    a byte), referenced by the request on stream 0, then a normal request on stream 4."""
    conn = Connection(1)
    dg = conn.handshake()
    for d, sid, data in _h3_setup(b"0" * length, b"x-long", huffman):
        dg += _packets(conn, "1rtt", d, _stream_chunks(sid, data))
    dg += _packets(conn, "1rtt", 0, [stream_frame(0, 0, h3_frame(0x01, DYN_PREFIX + REQUEST_HEAD + b"\x80"), fin=True),
                                     stream_frame(4, 0, h3_frame(0x01, b"\x00\x00" + REQUEST_HEAD), fin=True)])
    resp = h3_frame(0x01, b"\x00\x00" + bytes([0xD9]))  # :status 200 (static 25)
    dg += _packets(conn, "1rtt", 1, [stream_frame(0, 0, resp, fin=True), stream_frame(4, 0, resp, fin=True)])
    return capture([(conn, dg)])


def crypto_scatter(packets: int, per: int, start: int = 1, seed: int = 2) -> tuple[bytes, str]:
    """A client Initial CRYPTO stream of one-byte frames at shuffled offsets from ``start`` on
    (1: offset 0 never comes, so a reader that reassembles holds every frame), ``per`` frames
    a packet, ``packets`` packets (the detail tree of the last one reassembles the stream)."""
    import random

    rnd = random.Random(seed)
    conn = Connection(1)
    offs = list(range(start, start + packets * per))
    rnd.shuffle(offs)
    dg = [(0, conn.initial_packet(0, b"".join(crypto_frame(o, b"\x01") for o in offs[k * per : (k + 1) * per])))
          for k in range(packets)]
    return capture([(conn, dg)], sample=False)


def split_server_hello(cut: int, hrr: bool = False) -> tuple[bytes, str]:
    """A ClientHello, then the server's ServerHello (HelloRetryRequest's, with ``hrr``) cut
    at byte ``cut`` over two Initial packets: a handshake message a reader reassembles from
    two CRYPTO frames."""
    from wirefall.dissectors.tls import HRR_RANDOM

    conn = Connection(1)
    sh = server_hello(HRR_RANDOM if hrr else bytes(31) + b"\x01")
    dg = [(0, conn.initial_packet(0, crypto_frame(0, client_hello(conn.random)))),
          (1, conn.initial_packet(1, crypto_frame(0, sh[:cut]))), (1, conn.initial_packet(1, crypto_frame(cut, sh[cut:])))]
    return capture([(conn, dg)], sample=False)


BUILDERS = {
    "qpack_bomb_initial": lambda: qpack_bomb(540, "initial"),  # ~154 KB of QPACK, as in the finding
    "qpack_bomb_1rtt": lambda: qpack_bomb(540, "1rtt"),
    "qpack_bomb_1rtt_conns": lambda: qpack_bomb(60, "1rtt", conns=12),
    "ping_flood_1rtt": lambda: ping_flood(6_000_000, "1rtt"),
    "ping_flood_initial": lambda: ping_flood(6_000_000, "initial"),
    "ping_flood_coalesced": lambda: ping_flood(2_000_000, "coalesced"),
    "ack_ranges": lambda: ping_flood(2_000_000, "acks"),
    "qpack_long_value": lambda: qpack_long_value(500_000),
    "qpack_long_value_huffman": lambda: qpack_long_value(500_000, huffman=True),
    "crypto_scatter": lambda: crypto_scatter(20, 150),
    "split_hrr": lambda: split_server_hello(30, hrr=True),
}


def main(argv: list[str]) -> int:
    out = Path(argv[1] if len(argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    names = argv[2:] or list(BUILDERS)
    for name in names:
        pcap, keys = BUILDERS[name]()
        (out / f"{name}.pcap").write_bytes(pcap)
        (out / f"{name}.keys").write_text(keys)
        print(f"{out / name}.pcap: {len(pcap)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
