"""IETF QUIC dissector (RFC 8999/9000/9001/9221/9369, drafts 21-34), sans-IO.

One ``QuicConnectionDissector`` per QUIC connection.  It is fed UDP payloads with the
direction (0 = client to server) and the number of the packet that carried them, and
returns ``QuicPacket`` objects (header facts, decrypted ``QuicFrame`` list, or the reason
the packet could not be decrypted).  Side results are queued as events (``pop_events``):

- ``("tls", direction, epoch, msg_type, info, first_packet, packet)`` a TLS handshake
  message reassembled from CRYPTO frames (``info`` is a dict: client_random, sni, alpn...)
- ``("stream", direction, stream_id, offset, data, fin, packet)`` STREAM data in order;
  ``packet`` is where the bytes became readable in order (bytes that waited for a hole to
  be filled are readable at the filling packet); on a connection joined mid-way (keys found
  by trial) a stream's first event may start at ``offset`` > 0
- ``("reset", direction, stream_id, error_code, final_size, packet)``
- ``("stop_sending", direction, stream_id, error_code, packet)``
- ``("keys", direction, epoch, ok, reason)`` the first time keys of an epoch are tried

Headers and frames are parsed here by hand: aioquic's ``pull_quic_header`` rejects draft
versions and raises on malformed input, and its frame handling lives inside the stateful
``QuicConnection`` (it acts on frames instead of returning them).  aioquic's C ``Buffer``
reads the variable-length integers of a packet's frames (and an Initial's Token Length); the
header's Length, one integer at an offset, is read by ``quic_varint`` (dissectors/quic_varint.py,
the one reader of QUIC's integers outside a ``Buffer``).  Keys come from ``quic_crypto``.
"""
from __future__ import annotations

import heapq
from collections.abc import Callable
from enum import IntEnum
from typing import Any

from aioquic.buffer import Buffer, BufferReadError

from . import quic_crypto as qc
from .quic_crypto import DecryptError, PacketKeys
from .quic_varint import quic_varint

INITIAL, ZERO_RTT, HANDSHAKE, RETRY, ONE_RTT, VERSION_NEGOTIATION = "Initial", "0-RTT", "Handshake", "Retry", "1-RTT", "Version Negotiation"
# long-header type bits -> packet type
_TYPES_V1 = (INITIAL, ZERO_RTT, HANDSHAKE, RETRY)
_TYPES_V2 = (RETRY, INITIAL, ZERO_RTT, HANDSHAKE)
EPOCH = {INITIAL: 0, ZERO_RTT: 1, HANDSHAKE: 2, ONE_RTT: 3}
SPACE = {INITIAL: 0, HANDSHAKE: 1, ZERO_RTT: 2, ONE_RTT: 2}



# RFC 9000 §19 (Table 3 in §12.4), RFC 9221 DATAGRAM, draft-ietf-quic-ack-frequency: wire type
# by name.  The IntEnum ``QuicFrameType`` and ``DESCRIPTOR`` (for the protocol registry and the
# views) are made of it on first use (module ``__getattr__``), not at import: making the enum was
# ~0.6 ms of every start that decodes QUIC, and the analysis needs only the names (FRAME_NAMES).
_FRAME_TYPES = {
    "PADDING": 0x00,
    "PING": 0x01,
    "ACK": 0x02,
    "ACK_ECN": 0x03,
    "RESET_STREAM": 0x04,
    "STOP_SENDING": 0x05,
    "CRYPTO": 0x06,
    "NEW_TOKEN": 0x07,
    "STREAM": 0x08,  # 0x08-0x0f: the low bits are OFF, LEN, FIN
    "MAX_DATA": 0x10,
    "MAX_STREAM_DATA": 0x11,
    "MAX_STREAMS_BIDI": 0x12,
    "MAX_STREAMS_UNI": 0x13,
    "DATA_BLOCKED": 0x14,
    "STREAM_DATA_BLOCKED": 0x15,
    "STREAMS_BLOCKED_BIDI": 0x16,
    "STREAMS_BLOCKED_UNI": 0x17,
    "NEW_CONNECTION_ID": 0x18,
    "RETIRE_CONNECTION_ID": 0x19,
    "PATH_CHALLENGE": 0x1A,
    "PATH_RESPONSE": 0x1B,
    "CONNECTION_CLOSE": 0x1C,
    "CONNECTION_CLOSE_APP": 0x1D,
    "HANDSHAKE_DONE": 0x1E,
    "IMMEDIATE_ACK": 0x1F,
    "DATAGRAM": 0x30,
    "DATAGRAM_LEN": 0x31,
    "ACK_FREQUENCY": 0xAF,
}

# wire type -> Frame.type: the variants of one frame share its name (what names_of(QuicFrameType, ...) gives)
FRAME_NAMES = {v: k for k, v in _FRAME_TYPES.items()}
FRAME_NAMES.update({
    0x03: "ACK", 0x12: "MAX_STREAMS", 0x13: "MAX_STREAMS", 0x16: "STREAMS_BLOCKED", 0x17: "STREAMS_BLOCKED",
    0x1D: "CONNECTION_CLOSE", 0x31: "DATAGRAM", **dict.fromkeys(range(0x08, 0x10), "STREAM"),
})


def _descriptor() -> None:
    """Make ``QuicFrameType`` and ``DESCRIPTOR`` (see _FRAME_TYPES)."""
    from wirefall.dissectors.registry import FrameKinds, OracleSpec, ProtocolDescriptor

    ft = IntEnum("QuicFrameType", list(_FRAME_TYPES.items()), module=__name__, qualname="QuicFrameType")  # type: ignore[misc]
    ft.__doc__ = "RFC 9000 §19 (Table 3 in §12.4), RFC 9221 DATAGRAM, draft-ietf-quic-ack-frequency."
    globals()["DESCRIPTOR"] = ProtocolDescriptor(
        name="quic",
        display="QUIC",
        protocols=("quic",),
        over_quic=True,
        frame_types=ft,
        type_names=FRAME_NAMES,
        kinds=FrameKinds(
            reset=frozenset({"RESET_STREAM", "STOP_SENDING"}),
            data=frozenset({"STREAM"}),
            goaway=frozenset({"CONNECTION_CLOSE"}),
            ping=frozenset({"PING"}),
            blocked=frozenset({"DATA_BLOCKED", "STREAM_DATA_BLOCKED", "STREAMS_BLOCKED", "STREAMS_BLOCKED_BIDI", "STREAMS_BLOCKED_UNI"}),
        ),
        fields_module="quic",
        long_name="QUIC IETF", column_rank=2, hooks_module="quic", flow_control={"quic": "blocked"},
        oracle=OracleSpec(layer="quic", type_field="quic.frame_type", fields={"stream_id": "quic.stream.stream_id"}),
    )
    globals()["QuicFrameType"] = ft


def __getattr__(name: str) -> Any:
    if name in ("QuicFrameType", "DESCRIPTOR"):
        _descriptor()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


TLS_MSG = {1: "ClientHello", 2: "ServerHello", 4: "NewSessionTicket", 5: "EndOfEarlyData", 8: "EncryptedExtensions",
           11: "Certificate", 13: "CertificateRequest", 15: "CertificateVerify", 20: "Finished", 24: "KeyUpdate"}
HRR_RANDOM = bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")
MAX_CRYPTO_BUFFER = 1 << 20  # bytes of one CRYPTO stream held (out of order or incomplete message)
MAX_HELD_PACKETS = 256  # packets held while waiting for keys (e.g. Handshake before ServerHello)
MAX_CIDS = 256  # connection IDs remembered per endpoint (for routing datagrams from a new address)
MAX_ACK_RANGES = 64  # ACK ranges listed per ACK frame (``ack_range_count`` says how many it had)
# RFC 9000 §12.4 Table 3: the only frames an Initial or Handshake packet may carry; 0-RTT
# packets may carry any frame but these.  Anyone can derive Initial keys, so a frame that its
# packet type forbids is shown (marked PROTOCOL_VIOLATION) but its data and effects go nowhere.
ALLOWED_IN_HANDSHAKE = frozenset((0x00, 0x01, 0x02, 0x03, 0x06, 0x1C))
FORBIDDEN_IN_0RTT = frozenset((0x02, 0x03, 0x06, 0x07, 0x19, 0x1B, 0x1E))
EPOCH_NAMES = (INITIAL, ZERO_RTT, HANDSHAKE, ONE_RTT)
_pull_uint_var = Buffer.pull_uint_var  # (see _frames)
_BYTE = [bytes((i,)) for i in range(256)]  # one-byte bytes by value (no tuple and bytes() call per packet)
_from_bytes = int.from_bytes  # (a global: ``int.from_bytes`` is a class attribute lookup Python 3.11 does not specialise)

SECRET_LABELS = {  # (epoch, direction) -> key-log label
    (1, 0): "CLIENT_EARLY_TRAFFIC_SECRET",
    (2, 0): "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
    (2, 1): "SERVER_HANDSHAKE_TRAFFIC_SECRET",
    (3, 0): "CLIENT_TRAFFIC_SECRET_0",
    (3, 1): "SERVER_TRAFFIC_SECRET_0",
}


def version_name(v: int | None) -> str | None:
    if v is None:
        return None
    if v == qc.VERSION_1:
        return "1"
    if v == qc.VERSION_2:
        return "2"
    if v & 0xFFFFFF00 == 0xFF000000:
        return f"draft-{v & 0xFF}"
    if v & 0x0F0F0F0F == 0x0A0A0A0A:
        return f"grease-0x{v:08x}"
    b = v.to_bytes(4, "big")
    if b[:1] in (b"Q", b"T") and b[1:].isdigit():
        return b.decode()
    return f"0x{v:08x}"


_TEXT_BYTES = bytes(range(0x20, 0x7F)) + b"\r\n\t"


def looks_like_quic(data) -> str | None:
    """'ietf', 'gquic' or None from the first bytes of a UDP payload (RFC 8999 invariants)."""
    if len(data) < 7:
        return None
    b0 = data[0]
    if b0 & 0x80:
        v = bytes(data[1:5])
        if v[:1] in (b"Q", b"T") and v[1:4].isdigit():
            return "gquic"  # Q046+ / T0xx use a long header
        if data[5] > 20:
            return None
        return "ietf"
    if b0 & 0x40:
        # a short header: all of it after the first byte and the DCID is ciphertext, so a
        # datagram of text (SSDP "M-SEARCH * HTTP/1.1", SIP, syslog: a first byte 0x40-0x7f)
        # is not one (tshark leaves it to its own dissector); 48 random bytes are all
        # printable with odds of ~1e-20
        head = bytes(data[:64])
        if len(head) >= 16 and len(head.translate(None, _TEXT_BYTES)) * 10 <= len(head):
            return None
        return "ietf"  # short header
    if b0 & 0x08 and b0 & 0x01 and len(data) >= 13 and data[9:10] in (b"Q", b"T") and bytes(data[10:13]).isdigit():
        return "gquic"  # Q043 and older public header with CID and version
    return None


class QuicFrame:
    __slots__ = ("type", "code", "stream_id", "offset", "length", "fin", "fields", "data", "error", "count", "forbidden")

    def __init__(self, ftype: str, code: int, stream_id=None, offset=-1, length=0, fin=False, fields=None, data=None):
        self.type = ftype
        self.code = code
        self.stream_id = stream_id
        self.offset = offset
        self.length = length
        self.fin = fin
        self.fields = fields
        self.data = data
        self.error: str | None = None
        self.count = 1  # a run of consecutive PING frames is one QuicFrame (its positions are in ``starts``)
        self.forbidden = False  # its packet type may not carry it (RFC 9000 §12.4): its data went nowhere

    def __repr__(self):
        return f"<{self.type} sid={self.stream_id} off={self.offset} len={self.length}>"


class QuicPacket:
    __slots__ = ("direction", "packet", "type", "version", "dcid", "scid", "pn", "key_phase", "spin",
                 "size", "frames", "error", "token", "retry_valid", "versions", "ack_eliciting",
                 "ack_only", "offset", "hdr_len", "pn_len", "keys", "starts")

    def __init__(self, direction, packet, ptype, version=None, dcid=b"", scid=None):
        self.direction = direction
        self.packet = packet
        self.type = ptype
        self.version = version
        self.dcid = dcid
        self.scid = scid
        self.pn: int | None = None
        self.key_phase: int | None = None
        self.spin: int | None = None
        self.size = 0
        self.frames: list[QuicFrame] = []
        self.error: str | None = None
        self.token: bytes | None = None
        self.retry_valid: bool | None = None
        self.versions: list[int] | None = None
        self.ack_eliciting = False
        self.ack_only = False  # frames decrypted, all of them PADDING or ACK
        # where the packet is and what opened it (for decrypting it again on demand):
        self.offset = 0  # position of the packet in its UDP payload
        self.hdr_len = 0  # header length up to and including the packet number; 0: not decrypted
        self.pn_len = 0
        self.keys: PacketKeys | None = None  # the keys that decrypted it
        self.starts: list[int] | None = None  # position of each frame in the plaintext

    def __repr__(self):
        return f"<QuicPacket {self.type} pn={self.pn} frames={self.frames} error={self.error}>"


class Reassembler:
    """In-order delivery of one byte stream (CRYPTO or STREAM) from offset-tagged chunks.
    ``add`` returns the chunks that became deliverable as (offset, data, packet)."""

    __slots__ = ("next", "pending", "pending_bytes", "limit", "dup_bytes", "final", "fin_sent", "seq", "overflow")

    def __init__(self, limit: int):
        self.next = 0
        self.pending: list = []
        self.pending_bytes = 0
        self.limit = limit
        self.dup_bytes = 0  # bytes received again (retransmissions)
        self.final: int | None = None
        self.fin_sent = False
        self.seq = 0
        self.overflow = False

    def add(self, offset: int, data, packet: int) -> list:
        end = offset + len(data)
        out: list[tuple[int, Any, int]] = []  # (offset, bytes or memoryview, packet)
        if end <= self.next:
            self.dup_bytes += len(data)
            return out
        if offset < self.next:
            self.dup_bytes += self.next - offset
            data = data[self.next - offset :]
            offset = self.next
        if offset == self.next:
            out.append((offset, data, packet))
            self.next = end
            while self.pending and self.pending[0][0] <= self.next:
                o, _, d, p = heapq.heappop(self.pending)
                self.pending_bytes -= len(d)
                e = o + len(d)
                if e <= self.next:
                    self.dup_bytes += len(d)
                    continue
                if o < self.next:
                    self.dup_bytes += self.next - o
                    d = d[self.next - o :]
                    o = self.next
                out.append((o, d, p))
                self.next = e
        else:
            if self.pending_bytes + len(data) > self.limit:
                self.overflow = True
                return out
            self.seq += 1
            heapq.heappush(self.pending, (offset, self.seq, bytes(data), packet))
            self.pending_bytes += len(data)
        return out


class _Dir:
    """Per-direction protection state."""

    __slots__ = ("largest", "keys", "reasons", "prev", "cur_first_pn", "key_updates", "crypto", "tlsbuf", "cids", "cid_lens")

    def __init__(self):
        self.largest = [-1, -1, -1]  # per packet-number space
        self.keys: list[PacketKeys | None] = [None, None, None, None]  # per epoch
        self.reasons: list[str | None] = [None, None, None, None]
        self.prev: PacketKeys | None = None  # 1-RTT keys of the previous key phase
        self.cur_first_pn = 0
        self.key_updates = 0
        self.crypto = [None, None, None, None]  # Reassembler per epoch
        self.tlsbuf = [None, None, None, None]  # (bytearray, first packet) per epoch
        self.cids: set[bytes] = set()  # connection IDs this endpoint chose (SCIDs, NEW_CONNECTION_ID)
        self.cid_lens: set[int] = set()  # their lengths (0 included: zero-length CIDs)


class QuicConnectionDissector:
    """Sans-IO dissector of one QUIC connection (both directions)."""

    def __init__(self, secret=None, stream_limit: int = 16 << 20, tls=None, candidates=None, trial_budget=None,
                 no_secrets=None):
        """``secret(label, client_random) -> bytes | None`` looks up key-log secrets;
        ``no_secrets() -> str | None`` says, when the key log holds no secret at all, why in a few
        words ("no key log given"), so that a packet's reason does not read as if a key log had
        been searched (None: it holds some, or not known);
        ``trial_budget``: a ``dissectors.budget.Budget`` of AEAD attempts for finding keys by
        trial (``quic_trial``; None: ``TRIAL_BUDGET`` per connection);
        ``candidates(label) -> [client_random]`` lists the key log's client randoms having a
        secret of that label (for a connection whose handshake the capture missed);
        ``tls`` is a module with parse_client_hello/parse_server_hello/parse_encrypted_extensions
        (dissectors.tls) or None to import it lazily."""
        self.secret = secret or (lambda label, cr: None)
        self.no_secrets: Callable[[], str | None] = no_secrets or (lambda: None)
        self.candidates: Callable[[str], list[bytes]] = candidates or (lambda label: [])
        self.trials = [0, 0]  # packets tried against the whole key log, per direction
        self.trial_cost = 0  # AEAD attempts spent on it
        self.trial_budget = trial_budget
        self.short_heads: list[bytes | None] = [None, None]  # first bytes after the flags of the last short header of unknown DCID length
        self.flipped: int | None = None  # packet at which the endpoints' roles turned out reversed
        # keys found by trial: the capture joined the connection mid-way, so a stream first
        # seen at offset N > 0 began before the capture and is delivered from N on (its
        # "stream" events then start at offset N; bytes below N arriving later are duplicates)
        self.joined_late = False
        self.stream_limit = stream_limit
        self.dirs = (_Dir(), _Dir())
        self.version: int | None = None
        self.odcid: bytes | None = None  # DCID of the client's first Initial
        self.initial_dcid: bytes | None = None  # DCID the Initial keys come from
        self.rekey_initial = False  # Retry or Version Negotiation seen: next client Initial sets keys
        self.client_random: bytes | None = None
        self.suite: int | None = None
        self.early_suite: int | None = None
        self.hello: dict = {}
        self.streams: dict[tuple[int, int], Reassembler] = {}
        self.events: list = []
        self.held: list = []  # (direction, packet bytes, pcap packet, ptype, ...) waiting for keys
        self.handshake_done_packet: int | None = None
        self.retry_count = 0
        self.stats = {"packets": [0, 0], "ack_only": [0, 0], "undecrypted": [0, 0], "stream_dup_bytes": [0, 0],
                      "crypto_dup_bytes": [0, 0], "key_updates": [0, 0], "padding_bytes": [0, 0],
                      "forbidden_frames": [0, 0]}
        # frames their packet type forbids (RFC 9000 §12.4): (frame type, packet type) ->
        # [count, first packet, message] (a list: the count goes up in place)
        self.violations: dict[tuple[str, str], list[Any]] = {}
        self._tls = tls
        # a connection ID was added to dirs[].cids since a user last cleared this (the QUIC
        # session routes by them and looks at the sets only then, not at every datagram)
        self.cids_grew = True

    # -- public -----------------------------------------------------------------------
    def pop_events(self) -> list:
        ev, self.events = self.events, []
        return ev

    def datagram(self, direction: int, data, packet: int) -> list[QuicPacket]:
        if type(data) is not bytes:  # (bytes(data) of a bytes is itself: the call, ~0.1 us, only when needed)
            data = bytes(data)
        out: list[QuicPacket] = []
        pos = 0
        n = len(data)
        while pos < n:
            b0 = data[pos]
            if b0 == 0 and not any(data[pos:]):
                break  # datagram padding after the last packet
            try:
                qp, end = self._packet(direction, data, pos, packet)
            except (IndexError, ValueError, BufferReadError) as e:
                qp = QuicPacket(direction, packet, "?", self.version)
                qp.error = f"malformed packet header ({e.__class__.__name__})"
                qp.size = n - pos
                out.append(qp)
                break
            if qp is not None:
                qp.offset = pos
                out.append(qp)
                direction = qp.direction  # the roles may have turned out reversed (see _find_dcid_len)
            if end <= pos:
                break
            pos = end
        return out

    # -- packets ----------------------------------------------------------------------
    def _packet(self, direction, data, pos, packet):
        b0 = data[pos]
        n = len(data)
        d = self.dirs[direction]
        if b0 & 0x80:
            version = int.from_bytes(data[pos + 1 : pos + 5], "big")
            p = pos + 5
            dl = data[p]
            if dl > 20 and version in (qc.VERSION_1, qc.VERSION_2):
                raise ValueError("DCID longer than 20 bytes")
            dcid = data[p + 1 : p + 1 + dl]
            p += 1 + dl
            sl = data[p]
            scid = data[p + 1 : p + 1 + sl]
            p += 1 + sl
            if p > n:
                raise IndexError("truncated long header")
            if version == 0:
                qp = QuicPacket(direction, packet, VERSION_NEGOTIATION, 0, dcid, scid)
                qp.versions = [int.from_bytes(data[i : i + 4], "big") for i in range(p, n - 3, 4)]
                qp.size = n - pos
                self.rekey_initial = True
                return qp, n
            if not qc.is_supported(version):
                qp = QuicPacket(direction, packet, "Long", version, dcid, scid)
                qp.error = f"unsupported QUIC version {version_name(version)}"
                qp.size = n - pos
                return qp, n
            types = _TYPES_V2 if version == qc.VERSION_2 else _TYPES_V1
            ptype = types[(b0 >> 4) & 3]
            if self.version is None:
                self.version = version
            d.cid_lens.add(len(scid))
            if scid:
                d.cids.add(scid)
                self.cids_grew = True
            qp = QuicPacket(direction, packet, ptype, version, dcid, scid)
            if ptype == RETRY:
                qp.token = data[p : n - 16]
                qp.size = n - pos
                odcid = self.odcid or b""
                qp.retry_valid = qc.check_retry(version, odcid, data[pos:n])
                if qp.retry_valid is False:
                    qp.error = "Retry integrity tag does not match the original DCID"
                self.retry_count += 1
                self.rekey_initial = True
                self.dirs[1].cids.add(scid)
                self.cids_grew = True
                self.dirs[1].cid_lens.add(len(scid))
                return qp, n
            buf = Buffer(data=data[p : min(n, p + 16 + 8 + 4096)]) if ptype == INITIAL else None
            if ptype == INITIAL:
                tl = buf.pull_uint_var()
                p += buf.tell()
                qp.token = data[p : p + tl]
                p += tl
            length, p = quic_varint(data, p)  # (IndexError if cut: a malformed header, as datagram() says)
            pn_off = p
            end = p + length
            if end > n:
                qp.error = f"packet length {length} runs past the end of the datagram"
                end = n
            qp.size = end - pos
            done = False
            if ptype == INITIAL and direction == 0:
                if self.odcid is None:
                    self.odcid = dcid
                if self.initial_dcid is None or self.rekey_initial:
                    if self.rekey_initial or self.version != version:
                        self.version = version
                    self._set_initial(version, dcid)
                    self.rekey_initial = False
        else:
            ptype = ONE_RTT
            lens = self.dirs[1 - direction].cid_lens
            if len(lens) == 1:  # (the usual case, as _short_dcid_len finds it, without the call)
                (dl,) = lens
            else:
                dl = self._short_dcid_len(direction, data, pos)
            qp = QuicPacket(direction, packet, ptype, self.version, None, None)
            if dl is None:
                dl = self._find_dcid_len(direction, data, pos, packet)
                if dl is not None and self.flipped == packet:
                    direction = qp.direction = 1 - direction  # its sender is the other role
            if dl is None:
                qp.error = "short header with unknown connection ID length (connection start not captured)"
                qp.size = n - pos
                self._count(direction, qp)
                return qp, n
            qp.dcid = data[pos + 1 : pos + 1 + dl]
            qp.spin = (b0 >> 5) & 1
            pn_off = pos + 1 + dl
            end = n
            qp.size = end - pos
            done = False
            # nearly every packet: 1-RTT, AES keys in use with their cipher objects made, the
            # same key phase.  What _decrypt (with PacketKeys.unprotect_header and .decrypt) does
            # then, inline: three calls and their tuples fewer per packet.  Any other case, or
            # any failure (nothing is changed before the plaintext is in hand), goes the general
            # way, which computes it all again and says why it failed.
            keys = d.keys[3]
            c = keys._c if keys is not None else None
            if c is not None and c[1] is not None and pn_off + 20 <= end:
                plain = None
                try:
                    mask = c[1].update(data[pn_off + 4 : pn_off + 20])
                    b0 ^= mask[0] & 0x1F
                    pn_len = (b0 & 3) + 1
                    hend = pn_off + pn_len
                    phase = (b0 >> 2) & 1
                    if phase == keys.phase:
                        tpn = _from_bytes(data[pn_off:hend], "big") ^ _from_bytes(mask[1 : 1 + pn_len], "big")
                        header = _BYTE[b0] + data[pos + 1 : pn_off] + tpn.to_bytes(pn_len, "big")
                        largest = d.largest
                        pn = qc.decode_packet_number(tpn, pn_len, largest[2])
                        plain = c[0].decrypt((keys._iv ^ pn).to_bytes(12, "big"), data[hend:end], header)
                except Exception:
                    plain = None
                if plain is not None:
                    qp.pn = pn
                    qp.key_phase = phase
                    if pn > largest[2]:
                        largest[2] = pn
                    qp.hdr_len = hend - pos
                    qp.pn_len = pn_len
                    qp.keys = keys
                    self._frames(direction, qp, plain, 3, packet)
                    done = True
        if not done:
            self._decrypt(direction, qp, data[pos:end], pn_off - pos, packet)
        if ptype == ONE_RTT and qp.hdr_len and qp.dcid:
            # a connection ID the packet's AEAD check vouches for (its header is authenticated):
            # one issued in a NEW_CONNECTION_ID the capture may not hold (sent before it began),
            # which a datagram from a new address (NAT rebinding, migration) is routed by
            rc = self.dirs[1 - qp.direction].cids
            dcid = qp.dcid if type(qp.dcid) is bytes else bytes(qp.dcid)  # (a slice of a bytes: no bytes() call per packet)
            if len(rc) < MAX_CIDS and dcid not in rc:
                rc.add(dcid)
                self.cids_grew = True
        # _count, inline (the roles may have turned out reversed: qp.direction)
        st = self.stats
        st["packets"][qp.direction] += 1
        if qp.error and not qp.frames:
            st["undecrypted"][qp.direction] += 1
        elif qp.ack_only:
            st["ack_only"][qp.direction] += 1
        return qp, end

    def _count(self, direction, qp):  # (also inline at the end of _packet)
        st = self.stats
        st["packets"][direction] += 1
        if qp.error and not qp.frames:
            st["undecrypted"][direction] += 1
        elif qp.ack_only:
            st["ack_only"][direction] += 1

    def _short_dcid_len(self, direction, data, pos) -> int | None:
        # the receiver's connection IDs: for client->server packets those the server chose
        peer = self.dirs[1 - direction]
        cids = peer.cids
        lens = peer.cid_lens  # (every CID's length is in it: added with the CID, never removed)
        if not lens:
            return None
        if len(lens) == 1:
            for ln in lens:
                return ln
        for ln in sorted(lens, reverse=True):
            if data[pos + 1 : pos + 1 + ln] in cids:
                return ln
        return max(lens)

    TRIAL_PACKETS = 3  # packets per direction tried against every key-log secret
    TRIAL_BUDGET = 4096  # AEAD attempts per connection without a trial_budget (the session passes quic_trial's)
    TRIAL_DCID_LENS = (8, 0, 16, 20, 4, 5, 10, 12, 14, 18, 1, 2, 3, 6, 7, 9, 11, 13, 15, 17, 19)

    def _find_dcid_len(self, direction, data, pos, packet) -> int | None:
        """A 1-RTT packet whose connection ID length is unknown (the capture missed the
        connection's start): the length is found with the packet's keys, see ``_trial``.
        The connection ID is the same in every packet of a direction (until it changes) and
        the packet number after it is protected (random-looking), so the bytes this packet
        shares with the previous one from the same sender bound the length: the lengths up
        to that common prefix are tried first, the most common length (8) first otherwise."""
        if self.client_random is not None and (self.suite is None or self._keys(direction, 3) is None):
            return None
        head = bytes(data[pos + 1 : pos + 21])
        prev = self.short_heads[direction]
        self.short_heads[direction] = head
        lens = list(self.TRIAL_DCID_LENS)
        if prev is not None:
            lcp = 0
            while lcp < min(len(head), len(prev)) and head[lcp] == prev[lcp]:
                lcp += 1
            first = [ln for ln in range(lcp, lcp - 3, -1) if ln >= 0]
            lens = first + [ln for ln in lens if ln not in first]
        hit = self._trial(direction, data[pos:], [1 + dl for dl in lens], 3, packet)
        if hit is None:
            return None
        dl = hit - 1
        role = 1 - direction if self.flipped == packet else direction  # the sender, once the roles were put right
        peer = self.dirs[1 - role]
        peer.cid_lens.add(dl)
        if dl:  # a zero-length connection ID identifies nothing
            cid = bytes(data[pos + 1 : pos + 1 + dl])
            peer.cids.add(cid)
            self.cids_grew = True
            peer.cid_lens.add(len(cid))
        return dl

    def _trial(self, direction, pkt, pn_offs, epoch, packet) -> int | None:
        """The capture missed the connection's start: without the ClientHello, which key-log
        secret protects this packet is unknown (and, for a short header, where its packet
        number starts).  Each candidate (client random, cipher suite, key phase, packet-number
        offset) is tried on it; only the right one passes the AEAD check.  The sender's role is
        a guess too (the first sender was taken for the client): its own label is tried first,
        then the other role's, which swaps the directions.  Packet-number offsets are the outer
        loop (the likeliest first), then the sender's own role, AES before ChaCha20, then the
        secrets: a key log of hundreds of secrets costs about one AEAD attempt for each four of
        them at the right offset.  Returns the packet-number offset."""
        searching = self.client_random is None  # (once the secret is known, trying lengths is cheap)
        if not searching:
            tries = [(direction, self.client_random)]
        else:
            b = self.trial_budget
            if self.trials[direction] >= self.TRIAL_PACKETS or (b.hit if b is not None else self.trial_cost >= self.TRIAL_BUDGET):
                return None
            self.trials[direction] += 1
            tries = [(r, cr) for r in (direction, 1 - direction) for cr in self.candidates(SECRET_LABELS.get((epoch, r), ""))]
        version = self.version or qc.VERSION_1
        order = []  # (role, client random, suite, keys made on first use or the known ones)
        for role, cr in tries:
            label = SECRET_LABELS.get((epoch, role))
            secret = self.secret(label, cr) if label else None
            if not secret:
                continue
            known = self.dirs[direction].keys[epoch] if role == direction and cr == self.client_random else None
            suites = (known.suite,) if known else (self.suite,) if self.suite is not None else \
                (0x1301, 0x1303) if len(secret) == 32 else (0x1302,) if len(secret) == 48 else ()
            for suite in suites:
                if suite in qc.SUITES:
                    order.append([role, cr, suite, known, secret])
        order.sort(key=lambda o: (o[0] != direction, o[2] == 0x1303))
        for pn_off in pn_offs:
            for o in order:
                role, cr, suite, known, secret = o
                k0 = o[3]
                if k0 is None:
                    k0 = o[3] = PacketKeys(suite, secret, version)
                try:
                    tpn, pn_len, header = k0.unprotect_header(pkt, pn_off)
                except DecryptError:
                    continue
                if header[0] & (0x0C if header[0] & 0x80 else 0x18):
                    continue  # reserved bits set: not this key or offset (RFC 9000 17.2, 17.3.1)
                keys = [k0]
                if epoch == 3:  # key updates before the capture began: the phase bit tells which
                    phase = (header[0] >> 2) & 1
                    keys = [k0, k0.next_phase().next_phase()] if phase == k0.phase else [k0.next_phase()]
                for k in keys:
                    for m in range(4 if pn_len <= 2 else 1):  # the full number may have wrapped
                        pn = tpn + (m << (8 * pn_len))
                        if searching:
                            self.trial_cost += 1
                            b = self.trial_budget
                            if (not b.take(1)) if b is not None else self.trial_cost > self.TRIAL_BUDGET:
                                return None
                        try:
                            k.decrypt(pkt[len(header):], header, pn)
                        except DecryptError:
                            continue
                        if role != direction:  # the other role sent it: swap what each direction holds
                            self.dirs = (self.dirs[1], self.dirs[0])
                            for v in self.stats.values():
                                v.reverse()
                            self.trials.reverse()
                            self.short_heads.reverse()
                            self.flipped = packet
                        d = self.dirs[role]
                        if self.client_random is None:
                            self.client_random = cr
                            self.suite = suite
                            self.joined_late = True
                            self.events.append(("trial_keys", role, packet))
                        if k is not known:
                            d.keys[epoch] = k  # (for 1-RTT: the key phase in use when the capture began)
                            d.reasons[epoch] = None
                        space = 1 if epoch == 2 else 2
                        d.largest[space] = max(d.largest[space], pn - 1)
                        return pn_off
        return None

    def _set_initial(self, version, dcid):
        keys = qc.initial_keys(version, bytes(dcid))
        self.initial_dcid = dcid
        for i in (0, 1):
            di = self.dirs[i]
            di.keys[0] = keys[i] if keys else None
            di.reasons[0] = None if keys else f"no Initial salt for version {version_name(version)}"
            if keys:
                di.largest[0] = -1 if di.largest[0] < 0 else di.largest[0]

    def _keys(self, direction, epoch) -> PacketKeys | None:
        d = self.dirs[direction]
        k = d.keys[epoch]
        if k is not None or epoch == 0:
            return k
        label = SECRET_LABELS.get((epoch, direction))
        if label is None:
            d.reasons[epoch] = "server does not send 0-RTT packets"
            return None
        if self.client_random is None:
            d.reasons[epoch] = "client random unknown (ClientHello not captured)"
            return None
        secret = self.secret(label, self.client_random)
        if secret is None:
            none = self.no_secrets()
            d.reasons[epoch] = f"{none} ({label} needed)" if none else f"no {label} in the key log for this client random"
            return None
        suite = self.suite if epoch != 1 else (self.early_suite or self.suite)
        if suite is None and epoch != 1:
            d.reasons[epoch] = "cipher suite unknown (ServerHello not decoded yet)"
            return None
        version = self.version or qc.VERSION_1
        if epoch == 1 and suite is None:
            k = PacketKeys(0x1301 if len(secret) == 32 else 0x1302, secret, version)
        else:
            if suite not in qc.SUITES:
                d.reasons[epoch] = f"cipher suite 0x{suite:04x} is not a QUIC suite"
                return None
            k = PacketKeys(suite, secret, version)
        d.keys[epoch] = k
        d.reasons[epoch] = None
        self.events.append(("keys", direction, epoch, True, None))
        return k

    def _decrypt(self, direction, qp: QuicPacket, pkt: bytes, pn_off: int, packet: int, held=False):
        epoch = EPOCH[qp.type]
        space = SPACE[qp.type]
        d = self.dirs[direction]
        keys = d.keys[epoch]
        if keys is None and epoch:
            keys = self._keys(direction, epoch)
        if keys is None and epoch >= 2 and self.client_random is None:  # the handshake is not in the capture
            if self._trial(direction, pkt, [pn_off], epoch, packet) is not None:
                if self.flipped == packet:
                    direction = qp.direction = 1 - direction
                    d = self.dirs[direction]
                keys = self._keys(direction, epoch)
        if keys is None:
            reason = d.reasons[epoch] or "no keys"
            if not held and epoch >= 2 and self.client_random is not None and self.suite is None and len(self.held) < MAX_HELD_PACKETS:
                pass  # keys may come with a later ServerHello; shown as undecrypted nonetheless
            qp.error = qp.error or f"cannot decrypt {qp.type} packet: {reason}"
            return
        try:
            tpn, pn_len, header = keys.unprotect_header(pkt, pn_off)
        except DecryptError as e:
            qp.error = f"cannot decrypt {qp.type} packet: {e}"
            return
        pn = qp.pn = qc.decode_packet_number(tpn, pn_len, d.largest[space])
        payload = pkt[len(header):]
        used = keys
        if epoch == 3:
            phase = (header[0] >> 2) & 1
            qp.key_phase = phase
            if phase != keys.phase:
                if d.prev is not None and d.prev.phase == phase and pn < d.cur_first_pn:
                    use = d.prev
                else:
                    use = keys.next_phase()
                try:
                    plain = use.decrypt(payload, header, pn)
                except DecryptError as e:
                    qp.error = f"cannot decrypt 1-RTT packet (key phase {phase}): {e}"
                    return
                used = use
                if use is not d.prev:
                    d.prev = keys
                    d.keys[3] = use
                    d.cur_first_pn = pn
                    d.key_updates += 1
                    self.stats["key_updates"][direction] += 1
            else:
                try:
                    plain = keys.decrypt(payload, header, pn)
                except DecryptError as e:
                    qp.error = f"cannot decrypt 1-RTT packet: {e}"
                    return
        else:
            try:
                plain = keys.decrypt(payload, header, pn)
            except DecryptError as e:
                if epoch == 1 and self.early_suite is None:
                    early = self._try_early_suites(direction, payload, header, pn)
                    if early is None:
                        qp.error = f"cannot decrypt 0-RTT packet: {e}"
                        return
                    plain, used = early
                elif epoch == 0 and direction == 0 and qp.dcid != self.initial_dcid:
                    # a client Initial of a new connection attempt on this flow
                    self._set_initial(qp.version, qp.dcid)
                    return self._decrypt(direction, qp, pkt, pn_off, packet, held)
                else:
                    qp.error = f"cannot decrypt {qp.type} packet: {e}"
                    return
            if epoch == 1:
                self.early_suite = used.suite  # (d.keys[1]: the keys used)
        if pn > d.largest[space]:
            d.largest[space] = pn
        qp.hdr_len = len(header)
        qp.pn_len = pn_len
        qp.keys = used
        self._frames(direction, qp, plain, epoch, packet)

    def _try_early_suites(self, direction, payload, header, pn) -> tuple[bytes, PacketKeys] | None:
        """The 0-RTT packet decrypted with the early secret under each TLS 1.3 suite in turn:
        (plaintext, the keys that worked, now the direction's 0-RTT keys) or None."""
        secret = self.secret("CLIENT_EARLY_TRAFFIC_SECRET", self.client_random)
        if secret is None:  # (not met: the 0-RTT keys that failed were made from this secret)
            return None
        for suite in (0x1301, 0x1302, 0x1303):
            if qc.HASH_LEN[qc.SUITES[suite][0]] != len(secret):
                continue
            k = PacketKeys(suite, secret, self.version or qc.VERSION_1)
            try:
                plain = k.decrypt(payload, header, pn)
            except DecryptError:
                continue
            self.dirs[direction].keys[1] = k
            self.early_suite = suite
            return plain, k
        return None

    # -- frames -----------------------------------------------------------------------
    def _frames(self, direction, qp: QuicPacket, plain: bytes, epoch: int, packet: int):
        buf = Buffer(0, plain)  # (positional: the keyword form costs ~0.5 us more per packet in its argument parsing)
        n = len(plain)
        frames = qp.frames
        # (Buffer.pull_uint_var unbound, pull(buf); buf.tell() and starts.append() called as methods:
        # taking a bound method is an attribute lookup Python 3.11 does not specialise, dearer than
        # the few calls of a packet's one or two frames)
        pull = _pull_uint_var
        starts = qp.starts = []  # frames are contiguous: frame i is plain[starts[i]:starts[i + 1]]
        allowed = ALLOWED_IN_HANDSHAKE if epoch in (0, 2) else None
        try:
            while True:
                start = buf.tell()
                if start >= n:
                    break
                starts.append(start)
                t = pull(buf)
                if t == 0:
                    i = start + 1
                    while i < n and plain[i] == 0:
                        i += 1
                    buf.seek(i)
                    frames.append(QuicFrame("PADDING", 0, length=i - start))
                    self.stats["padding_bytes"][direction] += i - start
                    continue
                if t == 0x01 and plain[start] == 0x01:
                    # a run of 1-byte PINGs is one QuicFrame with a count (a flood costs a byte
                    # each here); each PING's position is still listed in ``starts``
                    i = start + 1
                    while i < n and plain[i] == 0x01:
                        i += 1
                    if i > start + 1:
                        starts.extend(range(start + 1, i))
                        buf.seek(i)
                    f = QuicFrame("PING", 1)
                    f.count = i - start
                    frames.append(f)
                    continue
                # a frame its packet type forbids is decoded for display, but its data and
                # effects (stream bytes, resets, connection IDs...) go nowhere
                ok = t in allowed if allowed is not None else not (epoch == 1 and t in FORBIDDEN_IN_0RTT)
                if 0x08 <= t <= 0x0F:
                    sid = pull(buf)
                    off = pull(buf) if t & 0x04 else 0
                    ln = pull(buf) if t & 0x02 else n - buf.tell()
                    data = buf.pull_bytes(ln)  # (BufferReadError if it runs past the packet)
                    fin = bool(t & 1)
                    f = QuicFrame("STREAM", t, sid, off, ln, fin, None, data if ok else None)
                    frames.append(f)
                    if ok:
                        r = self.streams.get((direction, sid))
                        if r is not None and off == r.next and ln and not r.pending and not r.overflow:
                            # _stream's in-order case (nearly every frame), inline: one call fewer
                            if fin:
                                r.final = off + ln
                            end = r.next = off + ln
                            final = r.final
                            done = final is not None and end >= final
                            self.events.append(("stream", direction, sid, off, data, done, packet))
                            if done:
                                r.fin_sent = True
                        else:
                            self._stream(direction, sid, off, data, fin, packet, f)
                elif t in (0x02, 0x03):
                    largest = pull(buf)
                    delay = pull(buf)
                    count = pull(buf)
                    first = pull(buf)
                    ranges = [(largest - first, largest)]
                    smallest = largest - first
                    for i in range(count):
                        gap = pull(buf)
                        rl = pull(buf)
                        if i < MAX_ACK_RANGES:
                            hi = smallest - gap - 2
                            smallest = hi - rl
                            ranges.append((smallest, hi))
                    fields = {"largest_acknowledged": largest, "ack_delay": delay, "ack_range_count": count, "ranges": ranges}
                    if t == 3:
                        fields["ecn"] = (pull(buf), pull(buf), pull(buf))
                    frames.append(QuicFrame("ACK", t, None, -1, 0, False, fields))
                elif t == 0x06:
                    off = pull(buf)
                    ln = pull(buf)
                    p = buf.tell()
                    if p + ln > n:
                        raise BufferReadError("CRYPTO data runs past the packet")
                    data = plain[p : p + ln]
                    buf.seek(p + ln)
                    f = QuicFrame("CRYPTO", 6, None, off, ln, False, None, data if ok else None)
                    frames.append(f)
                    if ok:
                        self._crypto(direction, epoch, off, data, packet, f)
                elif t == 0x01:
                    frames.append(QuicFrame("PING", 1))  # (a PING type in a longer encoding)
                elif t == 0x04:
                    sid, code, final = pull(buf), pull(buf), pull(buf)
                    frames.append(QuicFrame("RESET_STREAM", 4, sid, fields={"error_code": code, "final_size": final}))
                    if ok:
                        self._reset(direction, sid, code, final, packet)
                elif t == 0x05:
                    sid, code = pull(buf), pull(buf)
                    frames.append(QuicFrame("STOP_SENDING", 5, sid, fields={"error_code": code}))
                    if ok:
                        self.events.append(("stop_sending", direction, sid, code, packet))
                elif t == 0x07:
                    ln = pull(buf)
                    tok = buf.pull_bytes(ln)
                    frames.append(QuicFrame("NEW_TOKEN", 7, length=ln, fields={"token": tok.hex()}))
                elif t == 0x10:
                    frames.append(QuicFrame("MAX_DATA", t, fields={"maximum_data": pull(buf)}))
                elif t == 0x11:
                    sid = pull(buf)
                    frames.append(QuicFrame("MAX_STREAM_DATA", t, sid, fields={"maximum_stream_data": pull(buf)}))
                elif t in (0x12, 0x13):
                    frames.append(QuicFrame("MAX_STREAMS", t, fields={"maximum_streams": pull(buf), "bidi": t == 0x12}))
                elif t == 0x14:
                    frames.append(QuicFrame("DATA_BLOCKED", t, fields={"limit": pull(buf)}))
                elif t == 0x15:
                    sid = pull(buf)
                    frames.append(QuicFrame("STREAM_DATA_BLOCKED", t, sid, fields={"limit": pull(buf)}))
                elif t in (0x16, 0x17):
                    frames.append(QuicFrame("STREAMS_BLOCKED", t, fields={"limit": pull(buf), "bidi": t == 0x16}))
                elif t == 0x18:
                    seq, rpt = pull(buf), pull(buf)
                    cl = buf.pull_uint8()
                    cid = buf.pull_bytes(cl)
                    token = buf.pull_bytes(16)
                    if ok:
                        self.dirs[direction].cids.add(cid)
                        self.cids_grew = True
                        self.dirs[direction].cid_lens.add(len(cid))
                    frames.append(QuicFrame("NEW_CONNECTION_ID", t, fields={"sequence": seq, "retire_prior_to": rpt, "connection_id": cid.hex(), "reset_token": token.hex()}))
                elif t == 0x19:
                    frames.append(QuicFrame("RETIRE_CONNECTION_ID", t, fields={"sequence": pull(buf)}))
                elif t in (0x1A, 0x1B):
                    frames.append(QuicFrame(FRAME_NAMES[t], t, fields={"data": buf.pull_bytes(8).hex()}))
                elif t in (0x1C, 0x1D):
                    code = pull(buf)
                    ftype = pull(buf) if t == 0x1C else None
                    rl = pull(buf)
                    reason = buf.pull_bytes(rl).decode("utf-8", "replace")
                    fields = {"error_code": code, "reason": reason, "application": t == 0x1D}
                    if ftype is not None:
                        fields["offending_frame_type"] = ftype
                    frames.append(QuicFrame("CONNECTION_CLOSE", t, fields=fields))
                elif t == 0x1E:
                    frames.append(QuicFrame("HANDSHAKE_DONE", t))
                    if ok and self.handshake_done_packet is None:
                        self.handshake_done_packet = packet
                elif t in (0x30, 0x31):
                    ln = pull(buf) if t == 0x31 else n - buf.tell()
                    data = buf.pull_bytes(ln)
                    frames.append(QuicFrame("DATAGRAM", t, length=ln, data=data if ok else None))
                elif t == 0xAF:  # ACK_FREQUENCY (draft-ietf-quic-ack-frequency)
                    frames.append(QuicFrame("ACK_FREQUENCY", t, fields={"sequence": pull(buf), "threshold": pull(buf), "max_ack_delay": pull(buf), "reordering": pull(buf)}))
                elif t == 0x1F:
                    frames.append(QuicFrame("IMMEDIATE_ACK", t))
                else:
                    f = QuicFrame(f"UNKNOWN_0x{t:x}", t, length=n - buf.tell())
                    f.error = f"unknown frame type 0x{t:x}; rest of the packet not decoded"
                    frames.append(f)
                    qp.error = f.error
                    break
                if not ok:
                    self._forbidden(direction, frames[-1], EPOCH_NAMES[epoch], packet)
        except BufferReadError:
            f = QuicFrame("MALFORMED", -1, length=n - start)
            f.error = "frame truncated or malformed"
            frames.append(f)
            qp.error = f.error
        elicits = False
        only_ack = True  # (one pass for both facts, usually over one or two frames)
        for f in frames:
            c = f.code
            if c != 0 and c != 2 and c != 3:
                only_ack = False
                if c != 0x1C and c != 0x1D:
                    elicits = True
                    break
        qp.ack_eliciting = elicits
        qp.ack_only = only_ack and bool(frames)

    def _forbidden(self, direction, f: QuicFrame, ptype: str, packet: int) -> None:
        """A frame that its packet type may not carry (RFC 9000 §12.4): marked, counted per
        (frame type, packet type) for one note per connection; its data went nowhere."""
        self.stats["forbidden_frames"][direction] += 1
        f.forbidden = True
        v = self.violations.get((f.type, ptype))
        if v is None:
            msg = (f"{f.type} frame not allowed in {'an' if ptype[0] in 'AEIOU' else 'a'} {ptype} packet "
                   f"(PROTOCOL_VIOLATION, RFC 9000 §12.4): not passed on")
            v = self.violations[(f.type, ptype)] = [0, packet, msg]  # (one message string for all of them)
        v[0] += 1
        f.error = v[2]

    # -- CRYPTO and TLS -----------------------------------------------------------------
    def _crypto(self, direction, epoch, off, data, packet, frame):
        d = self.dirs[direction]
        r = d.crypto[epoch]
        if r is None:
            r = d.crypto[epoch] = Reassembler(MAX_CRYPTO_BUFFER)
        before = r.dup_bytes
        chunks = r.add(off, data, packet)
        self.stats["crypto_dup_bytes"][direction] += r.dup_bytes - before
        if r.overflow:
            frame.error = "CRYPTO data out of order beyond the buffer limit"
        for _o, chunk, p in chunks:
            tb = d.tlsbuf[epoch]
            if tb is None:
                tb = d.tlsbuf[epoch] = [bytearray(), p]
            if not tb[0]:
                tb[1] = p
            tb[0] += chunk
            # a message completes in the datagram that made its bytes deliverable (the one that
            # filled the hole), which is where tshark shows it, not where its last byte in
            # stream order arrived (Chrome sends CRYPTO frames out of order)
            self._tls_messages(direction, epoch, tb, packet)

    def _tls_messages(self, direction, epoch, tb, packet):
        buf = tb[0]
        while len(buf) >= 4:
            mlen = int.from_bytes(buf[1:4], "big")
            if mlen > MAX_CRYPTO_BUFFER:
                self.events.append(("tls", direction, epoch, -1, {"error": "TLS message too long"}, tb[1], packet))
                buf.clear()
                return
            if len(buf) < 4 + mlen:
                return
            mtype = buf[0]
            body = bytes(buf[4 : 4 + mlen])
            first = tb[1]
            del buf[: 4 + mlen]
            tb[1] = packet
            info = self._tls_message(direction, epoch, mtype, body)
            self.events.append(("tls", direction, epoch, mtype, info, first, packet))

    def _tls_module(self):
        if self._tls is None:
            try:
                from . import tls as tlsmod  # the TLS helper's handshake parsers
            except Exception:
                tlsmod = False
            self._tls = tlsmod
        return self._tls or None

    def _tls_message(self, direction, epoch, mtype, body) -> dict:
        info: dict = {"name": TLS_MSG.get(mtype, f"handshake_{mtype}"), "length": len(body)}
        tlsmod = self._tls_module()
        try:
            if mtype == 1 and len(body) >= 34:
                if self.client_random is None:
                    self.client_random = body[2:34]
                info["client_random"] = body[2:34]
                if tlsmod is not None and hasattr(tlsmod, "parse_client_hello"):
                    info.update(_as_dict(tlsmod.parse_client_hello(body)))
                self.hello.update({k: v for k, v in info.items() if k in ("sni", "alpn_offered", "alpn", "transport_parameters")})
            elif mtype == 2 and len(body) >= 38:
                rnd = body[2:34]
                sl = body[34]
                suite = int.from_bytes(body[35 + sl : 37 + sl], "big")
                info["hello_retry"] = rnd == HRR_RANDOM
                info["cipher_suite"] = suite
                if tlsmod is not None and hasattr(tlsmod, "parse_server_hello"):
                    info.update(_as_dict(tlsmod.parse_server_hello(body)))
                    suite = info.get("cipher_suite_id", info.get("cipher_suite", suite))
                    if not isinstance(suite, int):
                        suite = int.from_bytes(body[35 + sl : 37 + sl], "big")
                        info["cipher_suite"] = suite
                self.suite = suite
                self.hello["cipher_suite"] = suite
            elif mtype == 11 and tlsmod is not None and hasattr(tlsmod, "parse_certificate"):
                cert = _as_dict(tlsmod.parse_certificate(body, tls13=True, subject=False))  # subject: on demand
                info["certificates"] = len(cert.get("certificates") or [])
                if cert.get("certificates"):
                    info["certificate_der"] = cert["certificates"][0]
            elif mtype == 8 and tlsmod is not None and hasattr(tlsmod, "parse_encrypted_extensions"):
                info.update(_as_dict(tlsmod.parse_encrypted_extensions(body)))
                if info.get("alpn"):
                    self.hello["alpn_selected"] = info["alpn"]
            elif mtype == 8:
                alpn = _alpn_from_extensions(body)
                if alpn:
                    info["alpn"] = alpn
                    self.hello["alpn_selected"] = alpn
        except Exception as e:  # a bad handshake message must not stop the connection
            info["error"] = f"{info['name']} not decoded: {e.__class__.__name__}: {e}"
        return info

    # -- STREAM ---------------------------------------------------------------------------
    def _stream(self, direction, sid, off, data, fin, packet, frame):
        key = (direction, sid)
        r = self.streams.get(key)
        if r is None:
            r = self.streams[key] = Reassembler(self.stream_limit)
            if self.joined_late and off > 0:
                r.next = off  # began before the capture (see joined_late)
        if fin:
            r.final = off + len(data)
        if off == r.next and data and not r.pending and not r.overflow:
            # in order with nothing waiting (nearly every frame): Reassembler.add's first case,
            # without its bookkeeping (no duplicate bytes, one chunk, readable at this packet)
            end = r.next = off + len(data)
            final = r.final
            done = final is not None and end >= final
            self.events.append(("stream", direction, sid, off, data, done, packet))
            if done:
                r.fin_sent = True
            return
        before = r.dup_bytes
        chunks = r.add(off, data, packet)
        self.stats["stream_dup_bytes"][direction] += r.dup_bytes - before
        if r.overflow and frame is not None and frame.error is None:
            frame.error = "STREAM data out of order beyond quic_stream_buffer; stream not reassembled"
        ev = self.events
        # bytes that waited for a hole to be filled are readable from the filling packet on
        # (where tshark and the receiving application see them, as for TCP and CRYPTO)
        for o, chunk, _carrier in chunks:
            ev.append(("stream", direction, sid, o, chunk, r.final is not None and o + len(chunk) >= r.final, packet))
        if r.final is not None and r.next >= r.final and not r.fin_sent:
            r.fin_sent = True
            if not chunks:
                ev.append(("stream", direction, sid, r.next, b"", True, packet))

    def _reset(self, direction, sid, code, final, packet):
        r = self.streams.get((direction, sid))
        if r is not None:
            r.pending.clear()
            r.pending_bytes = 0
            r.fin_sent = True
        self.events.append(("reset", direction, sid, code, final, packet))


def frame_starts(plain: bytes, epoch: int = 3) -> list[int]:
    """Position of each frame in a decrypted packet payload, as the dissector splits it
    (consecutive PADDING bytes are one frame; frame i ends where frame i + 1 starts, the
    last at the end).  Parsed by a throwaway dissector, for views that decrypt one packet
    again on demand (no TLS parsing; its stream state is dropped)."""
    q = QuicConnectionDissector(tls=False)
    qp = QuicPacket(0, 0, ONE_RTT if epoch == 3 else INITIAL)
    q._frames(0, qp, bytes(plain), epoch, 0)
    return list(qp.starts or [])


def _as_dict(obj) -> dict:
    if obj is None:
        return {}
    if isinstance(obj, dict):
        return dict(obj)
    if hasattr(obj, "__dataclass_fields__"):
        return {k: getattr(obj, k) for k in obj.__dataclass_fields__}
    if hasattr(obj, "__slots__"):
        return {k: getattr(obj, k, None) for k in obj.__slots__}
    return dict(vars(obj))


def _alpn_from_extensions(body: bytes) -> str | None:
    """ALPN (type 16) from EncryptedExtensions, used only until dissectors.tls exists."""
    if len(body) < 2:
        return None
    end = 2 + int.from_bytes(body[:2], "big")
    p = 2
    while p + 4 <= min(end, len(body)):
        et = int.from_bytes(body[p : p + 2], "big")
        el = int.from_bytes(body[p + 2 : p + 4], "big")
        if et == 16 and el >= 3:
            n = body[p + 6]
            return body[p + 7 : p + 7 + n].decode("ascii", "replace")
        p += 4 + el
    return None
