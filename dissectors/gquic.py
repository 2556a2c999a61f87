"""Google QUIC (gQUIC, versions Q0xx) recognition, sans-IO.

No library parses gQUIC (it predates IETF QUIC and only Chromium's C++ speaks it), so the
public header and the unencrypted handshake are parsed here by hand:

- public header of Q043 and older: flags, 8-byte connection ID, version, diversification
  nonce, packet number (1/2/4/6 bytes, big-endian since Q039); Q046+ long headers
  (0xC0 form with the version and CIDs) are recognised from their version;
- a packet is treated as unencrypted ("null encryption") only if its 12-byte message
  authentication hash (FNV-1a 128 over header, payload and "Client"/"Server", Q035+)
  matches; its STREAM frames on stream 1 are reassembled and the handshake messages
  (CHLO, REJ, SHLO, ...) decoded into tags (SNI, UAID, VER, ...);
- everything else is encrypted (QUIC-Crypto; no key log exists for it) and counted.
"""
from __future__ import annotations

from wirefall.dissectors.registry import OracleSpec, ProtocolDescriptor

from .quic import Reassembler

FNV_OFFSET = 0x6C62272E07BB014262B821756295C58D
FNV_PRIME = 0x0000000001000000000000000000013B
M128 = (1 << 128) - 1
MAX_HANDSHAKE = 1 << 16  # bytes of stream 1 reassembled per direction
MAX_HASH_TRIES = 12  # consecutive non-null-encrypted packets after which no more hashing is tried
TEXT_TAGS = {"SNI", "UAID", "VER"}
MESSAGE_TAGS = {"CHLO", "REJ", "SHLO", "SREJ", "SCUP", "PRST"}

DESCRIPTOR = ProtocolDescriptor(  # frames: "PACKET" / "PUBLIC_RESET" per packet, then its handshake message tags
    name="gquic", display="GQUIC", protocols=("gquic",), fields_module="gquic", hooks_module="gquic",
    long_name="GQUIC (Google QUIC)", column_rank=2, over_quic=True,
    oracle=OracleSpec(layer="gquic", fields={"stream_id": "gquic.stream_id"}),
)


def fnv1a_128(data: bytes, h: int = FNV_OFFSET) -> int:
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & M128
    return h


class GquicPacket:
    __slots__ = ("direction", "packet", "flags", "cid", "version", "pn", "size", "encrypted", "messages", "sizes", "error", "reset",
                 "versions")

    def __init__(self, direction, packet):
        self.direction = direction
        self.packet = packet
        self.flags = 0
        self.cid: bytes | None = None
        self.version: str | None = None
        self.pn: int | None = None
        self.size = 0
        self.encrypted = True
        self.messages: list[tuple[str, dict]] = []  # handshake messages completed in this packet
        self.sizes: list[int] = []  # each one's size in bytes (tag, count, entries and values), as tshark's gquic.data_len
        self.error: str | None = None
        self.reset = False
        self.versions: list[str] | None = None

    def __repr__(self):
        return f"<gQUIC cid={self.cid and self.cid.hex()} v={self.version} pn={self.pn} enc={self.encrypted} msgs={[m[0] for m in self.messages]}>"


def is_gquic(data) -> bool:
    if len(data) < 13:
        return False
    b0 = data[0]
    if b0 & 0x80:
        v = bytes(data[1:5])
        return v[:1] in (b"Q", b"T") and v[1:4].isdigit()
    return bool(b0 & 0x08 and b0 & 0x01 and data[9:10] in (b"Q", b"T") and bytes(data[10:13]).isdigit())


def parse_message(data: bytes) -> tuple[str, dict] | None:
    """A QUIC-Crypto handshake message: tag, u16 entry count, u16 padding, (tag, u32 end
    offset) entries, values.  Returns (message tag, {tag: value}) or None if malformed."""
    if len(data) < 8:
        return None
    mtag = data[:4].rstrip(b"\0").decode("ascii", "replace")
    n = int.from_bytes(data[4:6], "little")
    base = 8 + 8 * n
    if base > len(data):
        return None
    tags: dict = {}
    prev = 0
    for i in range(n):
        e = 8 + 8 * i
        tag = data[e : e + 4].rstrip(b"\0").decode("ascii", "replace")
        end = int.from_bytes(data[e + 4 : e + 8], "little")
        if end < prev or base + end > len(data):
            return None
        val = data[base + prev : base + end]
        prev = end
        if tag in TEXT_TAGS:
            tags[tag] = val.decode("ascii", "replace") if tag != "VER" else val.decode("ascii", "replace").rstrip("\0")
        elif tag != "PAD":
            tags[tag] = val.hex() if len(val) <= 64 else f"<{len(val)} bytes>"
    return mtag, tags


def message_size(buf) -> int | None:
    if len(buf) < 8:
        return None
    n = int.from_bytes(buf[4:6], "little")
    if len(buf) < 8 + 8 * n:
        return None
    end = int.from_bytes(buf[8 + 8 * (n - 1) + 4 : 8 + 8 * n], "little") if n else 0
    return 8 + 8 * n + end


class GquicDissector:
    """One gQUIC connection (both directions)."""

    def __init__(self):
        self.cid: bytes | None = None
        self.version: str | None = None
        self.sni: str | None = None
        self.uaid: str | None = None
        self.streams = [Reassembler(MAX_HANDSHAKE), Reassembler(MAX_HANDSHAKE)]
        self.hs_buf = [bytearray(), bytearray()]
        self.misses = [0, 0]
        self.largest_pn = [-1, -1]
        self.messages: list[tuple[int, int, str, dict]] = []  # (direction, packet, tag, tags)

    def datagram(self, direction: int, data, packet: int) -> GquicPacket:
        data = bytes(data)
        gp = GquicPacket(direction, packet)
        gp.size = len(data)
        try:
            self._parse(direction, data, gp)
        except (IndexError, ValueError) as e:
            gp.error = f"malformed gQUIC packet: {e}"
        return gp

    def _parse(self, d, data, gp):
        b0 = data[0]
        gp.flags = b0
        if b0 & 0x80:  # Q046+ long header: version and CIDs in the clear, the rest encrypted
            gp.version = data[1:5].decode("ascii", "replace")
            dl = data[5]
            gp.cid = data[6 : 6 + dl] if dl else None
            self.version = self.version or gp.version
            if gp.cid and d == 0 and self.cid is None:
                self.cid = gp.cid
            return
        if b0 & 0x40 and not b0 & 0x08:  # Q046+ short header
            return
        p = 1
        if b0 & 0x08:
            gp.cid = data[p : p + 8]
            p += 8
            if self.cid is None:
                self.cid = gp.cid
        if b0 & 0x02:
            gp.reset = True
            gp.encrypted = False
            return
        if b0 & 0x01:
            if d == 1:  # version negotiation from the server
                gp.versions = [data[i : i + 4].decode("ascii", "replace") for i in range(p, len(data) - 3, 4)]
                gp.encrypted = False
                return
            gp.version = data[p : p + 4].decode("ascii", "replace")
            self.version = self.version or gp.version
            p += 4
        if b0 & 0x04 and d == 1:
            p += 32  # diversification nonce
        pnl = (1, 2, 4, 6)[(b0 >> 4) & 3]
        tpn = int.from_bytes(data[p : p + pnl], "big")
        p += pnl
        gp.pn = _full_pn(tpn, pnl, self.largest_pn[d])
        if gp.pn > self.largest_pn[d]:
            self.largest_pn[d] = gp.pn
        if self.misses[d] >= MAX_HASH_TRIES or len(data) < p + 12:
            return
        h = fnv1a_128(data[p + 12 :], fnv1a_128(data[:p]))
        h = fnv1a_128(b"Client" if d == 0 else b"Server", h)
        if (h & ((1 << 96) - 1)).to_bytes(12, "little") != data[p : p + 12]:
            self.misses[d] += 1
            return
        self.misses[d] = 0
        gp.encrypted = False
        self._frames(d, data, p + 12, gp)

    def _frames(self, d, data, p, gp):
        n = len(data)
        while p < n:
            t = data[p]
            if t & 0x80:  # STREAM: 1 F D OOO SS
                sl = (t & 3) + 1
                ol = (t >> 2) & 7
                ol = ol + 1 if ol else 0
                p += 1
                sid = int.from_bytes(data[p : p + sl], "big")
                p += sl
                off = int.from_bytes(data[p : p + ol], "big") if ol else 0
                p += ol
                if t & 0x20:
                    ln = int.from_bytes(data[p : p + 2], "big")
                    p += 2
                else:
                    ln = n - p
                chunk = data[p : p + ln]
                p += ln
                if sid == 1:
                    self._handshake(d, off, chunk, gp)
            elif t == 0x00:  # PADDING: rest of the packet
                return
            elif t == 0x06:  # STOP_WAITING: least unacked delta, packet-number length
                p += 1 + (1, 2, 4, 6)[(gp.flags >> 4) & 3]
            elif t == 0x07:  # PING
                p += 1
            elif t == 0x04:  # WINDOW_UPDATE
                p += 1 + 4 + 8
            elif t == 0x05:  # BLOCKED
                p += 1 + 4
            else:
                return  # ACK and the rest: not needed for the handshake tags

    def _handshake(self, d, off, chunk, gp):
        buf = self.hs_buf[d]
        for _o, c, _p in self.streams[d].add(off, chunk, gp.packet):
            buf += c
        while True:
            size = message_size(buf)
            if size is None or size > len(buf):
                if size is not None and size > MAX_HANDSHAKE:
                    buf.clear()
                    gp.error = "handshake message larger than the buffer limit"
                return
            msg = parse_message(bytes(buf[:size]))
            del buf[:size]
            if msg is None:
                gp.error = "malformed handshake message"
                buf.clear()
                return
            tag, tags = msg
            gp.messages.append(msg)
            gp.sizes.append(size)
            self.messages.append((d, gp.packet, tag, tags))
            if tag == "CHLO":
                self.sni = self.sni or tags.get("SNI")
                self.uaid = self.uaid or tags.get("UAID")
                if tags.get("VER"):
                    self.version = tags["VER"]


def _full_pn(tpn: int, pnl: int, largest: int) -> int:
    win = 1 << (8 * pnl)
    if pnl >= 6 or largest < 0:
        return tpn
    expected = largest + 1
    cand = (expected & ~(win - 1)) | tpn
    if cand + win // 2 <= expected:
        cand += win
    elif cand > expected + win // 2 and cand >= win:
        cand -= win
    return cand
