"""QUIC / HTTP/3 / gQUIC session: UDP datagrams of one QUIC connection -> model.

``QuicSession(ctx, conn)`` receives ``datagram(direction, data, packet)`` and ``end()``.
The first datagram decides IETF QUIC (``dissectors.quic`` + ``dissectors.http3``) or
Google QUIC (``dissectors.gquic``).

Model output
- ``conn.quic`` (QuicInfo: version "1" / "2" / "draft-29" / "Q043", sni, alpn, scid and
  dcid of the client's first Initial as hex, decrypted, reason), ``conn.protocol``
  ("h3", "h3-29", ... from the negotiated ALPN, else "quic"; "gquic").
- Phases: ``connect_start`` = first client Initial; ``tls_start`` = packet completing the
  ClientHello; ``tls_end`` = client Finished (Handshake packet) or, without Handshake
  keys, the client's first 1-RTT packet; ``connect_end`` = ``tls_end`` (the client may send
  requests from then on; HANDSHAKE_DONE arrives one RTT later and is kept in stats);
  ``rtt`` = the server's first Initial or Handshake packet minus the client Initial it answers:
  the client's first Initial, or after a Retry (or a Version Negotiation) the client's first
  Initial sent after it, the one carrying the Retry's token.  A Retry is answered statelessly
  (often by a load balancer or a fast path), so Initial -> Retry is not the handshake's RTT;
  ``conn.quic.retry`` counts the Retry packets and a ``NoteKind.QUIC_RETRY`` note names each
  one (its packet, token length, integrity tag: a Chat item of the expert view).
- ``conn.quic.reason``, when 1-RTT was not decrypted, is a ``DecryptReason``: its kind (no key
  log given, a secret missing from the key log, keys that do not decrypt, ...), the key-log
  label of the first level that could not be decrypted (in packet order: a Handshake packet
  before the 1-RTT ones) and every label missing, the text made from them.
- Frames: every QUIC frame as ``Frame(protocol="quic", type="STREAM"|"ACK"|...,
  fields={packet_number, packet_type, frame_type, offset, fin, ...})``; a packet that
  could not be decrypted as one ``Frame(type="PROTECTED", error=reason)``; Retry and
  Version Negotiation packets as ``RETRY`` / ``VERSION_NEGOTIATION`` frames.  HTTP/3
  frames as ``Frame(protocol="h3")`` with first/last packet; gQUIC packets as
  ``Frame(protocol="gquic", type="PACKET"|"CHLO"|"REJ"|"SHLO"...)``.  With
  ``Context.listing`` off (``requests``) no QUIC or HTTP/3 frame is listed (nor a packet in
  ``quic_packets``, below); connections, exchanges, notes and budgets are the same.
- Exchanges for HTTP/3 requests and pushes, like HTTP/2: body sizes count the DATA payload in
  the capture (a DATA frame the capture ends inside, its bytes that came); a response whose
  stream the capture ends without its FIN has ``sources.response_body_bytes = "lower_bound"``
  and error "response incomplete at the end of the capture"; each frame the capture ends
  inside is a ``NoteKind.ENDS_IN_FRAME`` note (``completeness.cut_short``).
- Per-connection statistics the model has no field for: ``ctx.shared["quic_stats"][conn.id]``
  (packets, ACK-only packets, undecrypted packets, retransmitted STREAM/CRYPTO bytes, key
  updates, spin-bit RTT samples, HANDSHAKE_DONE packet, per-stream byte counts, + SHA-256
  when ``STREAM_DIGESTS`` is set).
- Every decrypted QUIC packet is listed, as numbers only (no plaintext, no secret: bounded
  memory), in ``analysis.quic_packets[(conn id, dir)]`` (a ``QuicPackets``): its capture packet, position and length in the UDP payload,
  header length (up to the packet number) and packet-number length, full packet number,
  epoch, key phase, and which key opened it (``QuicPackets.keys``: epoch, version, suite,
  Initial DCID, key-update generation, client random — the public values that name the
  key), so a view can re-read the datagram and decrypt the packet again
  (``analyzer.detail.decrypted_quic``, the "Decrypted QUIC" bytes tabs).
  HTTP/3 frames carry ``Frame.offset`` = the QUIC stream offset of their first byte.
- Connection IDs: ``ctx.shared["quic_cids"]`` maps every connection ID seen (both ends,
  NEW_CONNECTION_ID included) to its session; ``route(ctx, payload)`` finds the session
  (and direction) of a datagram arriving on a new 4-tuple (migration, NAT rebinding).
"""
from __future__ import annotations

from array import array
from collections import deque

from cryptography.hazmat.primitives.hashes import SHA256, Hash  # (not hashlib: see dissectors/tls_crypto.py)

from wirefall.dissectors import quic as dq
from wirefall.dissectors.gquic import GquicDissector, is_gquic
from wirefall.dissectors.http3 import Http3Dissector, h3_evidence
from wirefall.dissectors.quic_crypto import SUITES, is_supported

from ..content import BodyDecoder
from ..model import TRIAL_NOTE  # noqa: F401  (the note kind's wording; its home is the model)
from ..model import NO_KEYLOG_GIVEN, PROTO_CODE, DecryptReason, Exchange, Frame, Note, NoteKind, QuicInfo, ReasonKind, TlsInfo
from . import finish_body, lower_bound, needs_decoder

H3_ALPN = ("h3",)
# The SHA-256 of each stream's bytes in quic_stats ("streams": {"d:sid": {"bytes", "sha256"}}):
# a check of the reassembly (tests/test_quic.py compares it with tshark's) that no command,
# view or JSON output reads, and hashing every stream byte (~0.5 GB/s here) was ~4 ms of
# h3-aioquic's 2.3 MB of streams, ~3 % of its `requests` run: made only when set.  The byte
# counts always are.
STREAM_DIGESTS = False
_SHA256 = Hash(SHA256())  # (copied for each stream: cheaper than a new context)
ONE_RTT = dq.ONE_RTT  # (packet types are the dissector's constants: compared by identity per packet)
LONG_TYPES = (dq.INITIAL, dq.HANDSHAKE, dq.ZERO_RTT, dq.RETRY, dq.VERSION_NEGOTIATION)
P_QUIC = PROTO_CODE["QUIC"]
_QUIC_CRYPTO = DecryptReason(ReasonKind.QUIC_CRYPTO)  # gQUIC's (one for every connection)
_LEVELS = {1: dq.ZERO_RTT, 2: dq.HANDSHAKE, 3: dq.ONE_RTT}  # epoch -> the packet type named in a DecryptReason


class QuicPackets:
    """The decrypted QUIC packets of one direction of a connection, one row per packet
    across compact arrays (appended by the analysis, possibly while a view reads: read
    ``len(packet)`` first, the other arrays are at least as long).  ``keys`` lists the keys
    used, each as ``(epoch, version, suite, initial dcid, generation, client random)``."""

    __slots__ = ("keys", "offset", "length", "hdr_len", "pn", "flags", "key", "packet")

    def __init__(self, keys: list):
        self.keys = keys  # shared by both directions of the connection
        self.offset = array("I")  # position of the QUIC packet in the UDP payload
        self.length = array("I")  # its length (header + protected payload + tag)
        self.hdr_len = array("H")  # header length up to and including the packet number
        self.pn = array("q")  # full (reconstructed) packet number
        self.flags = array("B")  # epoch | (pn length - 1) << 2 | key phase << 4
        self.key = array("H")  # index in ``keys``
        self.packet = array("i")  # capture packet carrying it (appended last)

    def __len__(self) -> int:
        return len(self.packet)

    def epoch(self, i: int) -> int:
        return self.flags[i] & 3

    def pn_len(self, i: int) -> int:
        return ((self.flags[i] >> 2) & 3) + 1


def route(ctx, payload) -> tuple[QuicSession, int] | None:
    """Session and direction for a datagram whose DCID is a known connection ID."""
    cids = ctx.shared.get("quic_cids")
    if not cids or not payload:
        return None
    b0 = payload[0]
    if b0 & 0x80:
        if len(payload) < 6:
            return None
        dl = payload[5]
        hit = cids.get(bytes(payload[6 : 6 + dl]))
    else:
        hit = None
        for ln in ctx.shared.get("quic_cid_lengths", ()):
            hit = cids.get(bytes(payload[1 : 1 + ln]))
            if hit:
                break
    if hit is None:
        return None
    session, owner = hit  # owner: the endpoint (direction) that chose the CID
    return session, 1 - owner


def ctx_has_no_keys(ctx) -> bool:
    return ctx.keylog is None or len(ctx.keylog) == 0


# Frames that carry no data: past the budget ``quic_frames_listed`` (per connection and per
# capture), the frames of one type in one datagram are listed as one Frame with fields.count.
COUNTABLE = frozenset(dq.FRAME_NAMES.values()) - {"STREAM", "CRYPTO", "DATAGRAM"}  # (and frames marked forbidden)
AGG_NOTE = ("budget quic_frames_listed reached: from here on the data-free frames (PING, PADDING, ACK...) of one type "
            "in one datagram are listed as one frame whose fields.count says how many it stands for")
# A connection joined mid-way has no ALPN: its latest stream bytes are held (up to these
# bounds, the oldest dropped first) until a stream shows the connection is HTTP/3
# (dissectors.http3.h3_evidence), then replayed; a stream whose first bytes were dropped is
# then seen mid-stream, as if the capture had begun later.
INFER_HOLD_BYTES = 1 << 20
INFER_HOLD_EVENTS = 4096
# DATA bytes held per connection for response bodies whose headers this session has not read
# yet (they arrive in the same packet, or a QPACK-blocked block is still waiting): over it, the
# body that would pass it is not decoded (its decoded size null)
BODY_WAIT_BYTES = 1 << 20
# PRIORITY_UPDATE values held for requests not seen yet, per connection (bounded: a flood of
# them for streams that never come costs no more)
MAX_PRIO_PENDING = 1024
_UNDECIDED = object()
INFERRED_NOTE = ("HTTP/3 recognised by the shape of its streams ({why}); the ALPN was not seen (the handshake is not "
                 "in the capture): QPACK entries inserted before the capture are shown as <unknown>")
MID_NOTE = ("{n} request stream{s} seen mid-stream (begun before the capture): {streams}; framed from the first "
            "frame boundary its end proves (the bytes before it not counted), their body sizes are lower bounds")


def h3_priority(value) -> dict:
    """An HTTP/3 request's ``priority``: the field value as sent (``urgency_incremental``, e.g.
    ``"u=0, i"``) and, as HTTP/2's, its ``urgency`` and ``incremental`` (RFC 9218) where it
    states them (added 2026-12-03)."""
    from .http2 import parse_priority_header

    out = {"urgency_incremental": value}
    if isinstance(value, str):
        out.update(parse_priority_header(value))
    return out


class QuicSession:
    def __init__(self, ctx, conn, **kw):
        self.ctx = ctx
        self.conn = conn
        self.kind: str | None = None
        self.q: dq.QuicConnectionDissector | None = None
        self.g: GquicDissector | None = None
        self.h3: Http3Dissector | None = None
        self.app_alpn: str | None = None
        self.exchanges: dict[int, Exchange] = {}  # request stream id -> Exchange
        self.pushes: dict[int, Exchange] = {}  # push id -> Exchange
        self.first_1rtt = [None, None]
        self.first_long = [None, None]
        self.spin_last = [None, None]
        self.spin_pn = [-1, -1]
        self.spin_edges: list[list[float]] = [[], []]
        self.stream_hash: dict = {}
        # the packets not decrypted, per (epoch, direction): the first one's (packet, kind, key-log
        # label, the decoder's words), in the order they first failed (``_failed``, ``_reason``)
        self.failed: dict[tuple[int, int], tuple[int, ReasonKind, str | None, str]] = {}
        self.rtt_from: float | None = None  # the client Initial the handshake RTT is timed from (None: after a Retry)
        self.opened: bool | None = None  # the client's first Initial carried the ClientHello's start (None: none seen yet)
        self.decrypted_1rtt = False
        self.flip_request = False  # the pipeline swaps client and server, then clears it
        cs = ctx.shared.setdefault("quic_stats", {})
        try:  # until the model has a field for it (asked for in the QUIC report)
            ctx.analysis.quic_stats = cs
        except AttributeError:
            pass
        self.stats = cs[conn.id] = {}
        ctx.shared.setdefault("quic_cids", {})
        ctx.shared.setdefault("quic_cid_lengths", set())
        self.known_cids: set = set()
        self.ptab = None  # (QuicPackets, QuicPackets) once a packet is decrypted
        self.key_index: dict = {}  # id(PacketKeys) -> (PacketKeys, index in QuicPackets.keys)
        self.last_key: tuple | None = None  # the last packet's entry of key_index (nearly every packet's)
        self.listed = ctx.budget("quic_frames_listed", conn)  # data-free frames listed one by one
        self.infer_held: deque[tuple] | None = deque()  # stream events held until HTTP/3 is recognised (None: done)
        self.infer_bytes = 0
        self.infer_dropped = 0  # bytes of held events dropped (the oldest, over the bounds)
        self.mid_rows: set[int] = set()  # request streams seen mid-stream that have their row
        self.mid_said: set[tuple[int, int]] = set()  # (d, sid) whose framing at the FIN is said on its row
        self.agg_noted = False
        # HTTP/3 response bodies (``_tap_h3``): stream id -> its BodyDecoder once the response
        # names a content coding, None once it names none (its decoded size is its size); the
        # DATA bytes of a stream not yet decided wait in ``body_wait`` (the dissector hands them
        # over while it parses, before this session has read the response's HEADERS), at most
        # BODY_WAIT_BYTES per connection: a body whose start was not kept is not decoded
        self.bodies: dict[int, object] = {}
        self.body_wait: dict[int, list[bytes]] = {}
        self.body_wait_bytes = 0
        self.body_lost: set[int] = set()
        self.resets: set[tuple[int, int]] = set()  # (direction, stream id) of the RESET_STREAM frames seen
        # PRIORITY_UPDATE values for request streams whose exchange does not exist yet: Chromium
        # sends the frame on its control stream just before the request's HEADERS (in the same
        # packet, read first); applied when the exchange is made (``_new_request``)
        self.prio_pending: dict[int, str] = {}
        conn.quic = QuicInfo()

    # -- datagrams ----------------------------------------------------------------------
    def datagram(self, direction, data, packet):
        if self.kind is None:
            kind = dq.looks_like_quic(data)
            if kind is None and is_gquic(data):
                kind = "gquic"
            if kind is None:
                return  # wait for a datagram that looks like QUIC
            self.kind = kind
            if kind == "gquic":
                self.g = GquicDissector()
                self.conn.protocol = "gquic"
            else:
                kl = self.ctx.keylog
                claimed = self.ctx.shared.setdefault("claimed_client_randoms", set())
                self.q = dq.QuicConnectionDissector(
                    kl.get if kl is not None else None, self.ctx.limits["quic_stream_buffer"],
                    candidates=(lambda label: [cr for cr in kl.client_randoms(label) if cr not in claimed]) if kl is not None else None,
                    trial_budget=self.ctx.budget("quic_trial", self.conn), no_secrets=self._no_secrets)
                self.conn.protocol = "quic"
        try:
            if self.kind == "gquic":
                self._gquic(direction, data, packet)
            else:
                self._ietf(direction, data, packet)
        except Exception as e:  # bad input never stops the capture
            self.conn.notes.append(f"packet {packet}: QUIC decoding error {e.__class__.__name__}: {e}")

    def _no_secrets(self) -> str | None:
        """Why no packet of any level can be opened, when the key log holds no secret: the words
        the connection's reason uses ("no key log given", ``NO_KEYLOG_GIVEN``); None otherwise
        (a packet's reason then names the secret the key log lacks for its client random)."""
        if not ctx_has_no_keys(self.ctx):
            return None
        kl = self.ctx.keylog
        return NO_KEYLOG_GIVEN if kl is not None and getattr(kl, "given", False) else "no key log given"

    def _ietf(self, direction, data, packet):
        ctx = self.ctx
        conn = self.conn
        t = ctx.ts[packet - 1]  # (ctx.time(packet) without the call: once per datagram)
        q = self.q
        cid = conn.id
        proto = ctx.proto
        listing = ctx.listing  # (False: no Frame per QUIC frame, no quic_packets row: see Context.listing)
        # (add_frame without its proto, which is set once per packet below; made only when listing:
        # taking a bound method is an attribute lookup Python 3.11 does not specialise)
        frames_append = ctx.analysis.frames.append if listing else None
        agg: dict = {}  # (direction, packet type, frame type) -> Frame counting repeats, past the budget
        pkts = q.datagram(direction, data, packet)
        if q.flipped == packet and not self.flip_request:
            self._flip(packet)
        for qp in pkts:
            direction = qp.direction  # the dissector may have found the endpoints' roles reversed
            ptype = qp.type
            if qp.hdr_len and listing:
                self._note_packet(direction, qp, packet)
            if ptype is not ONE_RTT and ptype in LONG_TYPES:
                if self.first_long[direction] is None:
                    self.first_long[direction] = t
                if direction == 1 and ptype in (dq.INITIAL, dq.HANDSHAKE):
                    if conn.rtt is None and self.rtt_from is not None:  # the server's first answer to the client's Initial
                        conn.rtt = t - self.rtt_from
                    if conn.quic.server_scid is None and qp.scid is not None:
                        conn.quic.server_scid = bytes(qp.scid).hex()
                if ptype == dq.INITIAL and direction == 0:
                    if self.opened is None:  # the client's first Initial in the capture
                        info = conn.quic
                        info.version = dq.version_name(qp.version)
                        info.dcid = bytes(qp.dcid).hex()
                        info.scid = bytes(qp.scid or b"").hex()
                        # it opens the handshake if it carries the ClientHello's first byte (CRYPTO
                        # at offset 0).  One that does not (an ACK, the second half of a two-packet
                        # ClientHello), or that the keys of its own DCID do not open (the client
                        # moved to the server's DCID: its first Initial was earlier), follows a
                        # handshake begun before the capture: the connection was joined mid-way,
                        # its connect not in the capture (amazon cut at packet 512: the client's
                        # later Initial read as the connect's start, a 16 ms handshake for 56).
                        # A version without keys here cannot tell: taken as the first.
                        self.opened = (any(f.code == 6 and f.offset == 0 for f in qp.frames) if qp.hdr_len
                                       else not is_supported(qp.version or 0))
                        if self.opened:
                            conn.connect_start = t
                    if self.rtt_from is None and conn.rtt is None and self.opened:
                        self.rtt_from = t
                elif direction == 1 and ptype in (dq.RETRY, dq.VERSION_NEGOTIATION):
                    if conn.rtt is None:
                        self.rtt_from = None  # the handshake starts again: timed from the client's next Initial
                    if ptype == dq.RETRY:
                        self._retry(qp, packet)
            if ptype is not ONE_RTT and ptype in (dq.RETRY, dq.VERSION_NEGOTIATION):
                fields = {"packet_type": ptype, "dcid": bytes(qp.dcid).hex(), "scid": bytes(qp.scid or b"").hex()}
                if ptype == dq.RETRY:
                    fields["token_length"] = len(qp.token or b"")
                    fields["integrity_valid"] = qp.retry_valid
                else:
                    fields["versions"] = [dq.version_name(v) for v in qp.versions or []]
                ctx.add_frame(Frame(packet, packet, t, cid, direction, "quic", None, "RETRY" if ptype == dq.RETRY else "VERSION_NEGOTIATION",
                                    length=qp.size, fields=fields, error=qp.error), "QUIC")
                self._cids()
                continue
            if ptype is ONE_RTT:
                if self.first_1rtt[direction] is None:
                    self.first_1rtt[direction] = (packet, t)
                if qp.frames:
                    self.decrypted_1rtt = True
                spin, spn = qp.spin, qp.pn
                if spin is not None and spn is not None and spn > self.spin_pn[direction]:
                    self.spin_pn[direction] = spn
                    last = self.spin_last[direction]
                    if last is not None and spin != last:
                        self.spin_edges[direction].append(t)
                    self.spin_last[direction] = spin
            if not qp.frames:
                ctx.add_frame(Frame(packet, packet, t, cid, direction, "quic", None, "PROTECTED", length=qp.size,
                                    fields={"packet_type": ptype, "packet_number": qp.pn, "version": dq.version_name(qp.version)},
                                    error=qp.error or "no frames"), "QUIC")
                if qp.error:
                    conn.notes.append(f"packet {packet}: {qp.error}")
                    self._failed(direction, qp, packet)
                continue
            pn, kp = qp.pn, qp.key_phase  # (_count gets them as (ptype, pn, kp), made only where it is called)
            listed = self.listed
            if proto[packet - 1] < P_QUIC:  # ctx.set_proto(packet, "QUIC"), inline: what add_frame(frame, "QUIC") did per frame
                proto[packet - 1] = P_QUIC
            for f in qp.frames:
                cnt, rest = f.count, 0
                ftype = f.type
                if f.forbidden or ftype in COUNTABLE and f.error is None:
                    if cnt == 1:  # one frame: listed if the budget takes it (as below, in one call)
                        if not listed.take(1):
                            self._count(f, 1, direction, ptype, (ptype, pn, kp), packet, t, agg)
                            continue
                    else:
                        single = 0 if listed.hit else min(cnt, listed.room())
                        if single:
                            listed.take(single)
                        if single < cnt:
                            rest = cnt - single
                            listed.take(rest)  # refused: the budget is marked and counts them
                            if not single:
                                self._count(f, rest, direction, ptype, (ptype, pn, kp), packet, t, agg)
                                continue
                        cnt = single
                if listing:
                    # (a literal: the keys in the order _count gives its fields)
                    if kp is None:
                        fields = {"packet_type": ptype, "packet_number": pn, "frame_type": f.code}
                    else:
                        fields = {"packet_type": ptype, "packet_number": pn, "key_phase": kp, "frame_type": f.code}
                    off = f.offset
                    if off >= 0:
                        fields["offset"] = off
                    if ftype == "STREAM":
                        fields["fin"] = f.fin
                    if f.fields:
                        fields.update(f.fields)
                    # (positional: packet, first_packet, time, connection, direction, protocol,
                    # stream_id, type, flags, length, headers, fields, offset, error; once per frame)
                    frames_append(Frame(packet, packet, t, cid, direction, "quic", f.stream_id, ftype, 0, f.length,
                                        None, fields, off, f.error))
                    if cnt > 1:
                        for _ in range(cnt - 1):  # the rest of a run of PINGs, within the budget
                            frames_append(Frame(packet, packet, t, cid, direction, "quic", None, ftype, fields=dict(fields)))
                if rest:
                    self._count(f, rest, direction, ptype, (ptype, pn, kp), packet, t, agg)
            if qp.error:
                conn.notes.append(f"packet {packet}: {qp.error}")
        events = q.events
        if events:  # (an ACK-only packet has none)
            q.events = []  # (q.pop_events(), inline)
            self._events(events)
        if q.cids_grew:  # (the sets only grow: unchanged since the last look, nothing new to route by)
            q.cids_grew = False
            if len(q.dirs[0].cids) + len(q.dirs[1].cids) != len(self.known_cids):
                self._cids()

    def _count(self, f, cnt, direction, ptype, base, packet, t, agg) -> None:
        """Past the budget ``quic_frames_listed``: ``cnt`` data-free frames like ``f`` are one
        Frame per frame type, packet type and direction in this datagram, whose fields.count
        says how many it stands for (a flood costs bytes, not a Frame each)."""
        key = (direction, ptype, f.type)
        hit = agg.get(key)
        if hit is not None:
            hit.fields["count"] += cnt
            hit.length += f.length
            return
        if not self.agg_noted:
            self.agg_noted = True
            self.ctx.note(self.conn, f"packet {packet}: {AGG_NOTE}")
        ptype_, pn, kp = base
        fields = {"packet_type": ptype_, "packet_number": pn}
        if kp is not None:
            fields["key_phase"] = kp
        fields["frame_type"] = f.code
        fields["count"] = cnt
        if f.fields:
            fields.update(f.fields)
        agg[key] = self.ctx.add_frame(Frame(packet, packet, t, self.conn.id, direction, "quic", f.stream_id, f.type,
                                            length=f.length, fields=fields, offset=f.offset, error=f.error), "QUIC")

    def _retry(self, qp, packet: int) -> None:
        """A Retry from the server: counted (``conn.quic.retry``) and noted on its packet."""
        info = self.conn.quic
        info.retry += 1
        valid = qp.retry_valid
        tag = "integrity tag valid" if valid else "integrity tag INVALID" if valid is False else "integrity tag not checked"
        self.conn.notes.append(Note(NoteKind.QUIC_RETRY, packet, 1, None, len(qp.token or b""),
                                    f"QUIC Retry: the server asks the client to prove its address (token {len(qp.token or b'')} bytes, "
                                    f"{tag}); the handshake RTT is timed from the client's next Initial, which carries the token"))

    def _failed(self, direction: int, qp, packet: int) -> None:
        """A packet not decrypted: the first of its level and direction is kept, as a typed
        cause (``ReasonKind``) and the key-log label it needed, for ``_reason``."""
        epoch = dq.EPOCH.get(qp.type)
        if epoch is None or epoch == 0:  # (not a key-log level: an Initial, an unsupported version)
            key = (-1, direction)
            if key not in self.failed:
                self.failed[key] = (packet, ReasonKind.OTHER, None, qp.error or "")
            return
        key = (epoch, direction)
        if key in self.failed:
            return
        q = self.q
        label = dq.SECRET_LABELS.get(key)
        words = (q.dirs[direction].reasons[epoch] or qp.error or "") if q is not None else (qp.error or "")
        if q is None or label is None:
            kind = ReasonKind.OTHER
        elif ctx_has_no_keys(self.ctx):
            kind = ReasonKind.NO_KEYLOG
        elif q.dirs[direction].keys[epoch] is not None:
            kind = ReasonKind.DECRYPTION_FAILED  # keys there, and they do not open it
            words = (qp.error or "").partition(": ")[2]  # (the AEAD's words, after "cannot decrypt … packet: ")
        elif q.client_random is None:
            kind = ReasonKind.HANDSHAKE_NOT_CAPTURED
        elif q.secret(label, q.client_random) is None:
            kind = ReasonKind.SECRET_MISSING
        else:
            kind = ReasonKind.OTHER  # the secret is there: a cipher suite unknown or not QUIC's (``words``)
        self.failed[key] = (packet, kind, label, words)

    def _reason(self) -> str | None:
        """Why 1-RTT was not decrypted (``DecryptReason``): the first level that failed, in
        packet order (a Handshake packet before the 1-RTT ones it keys), every secret missing."""
        fails = sorted(self.failed.items(), key=lambda kv: kv[1][0])  # (stable: the order they failed in)
        typed = [(k, v) for k, v in fails if k[0] >= 1]
        missing = tuple(dict.fromkeys(v[2] for _, v in typed if v[2] and v[1] in (ReasonKind.NO_KEYLOG, ReasonKind.SECRET_MISSING)))
        if ctx_has_no_keys(self.ctx) and (typed or self.first_1rtt != [None, None]):
            kl = self.ctx.keylog
            given = NO_KEYLOG_GIVEN if kl is not None and getattr(kl, "given", False) else ""
            if typed:
                (epoch, _d), (packet, _k, label, _w) = typed[0]
                return DecryptReason(ReasonKind.NO_KEYLOG, label, _LEVELS[epoch], packet, missing, given)
            return DecryptReason(ReasonKind.NO_KEYLOG, detail=given)
        for want in (ReasonKind.SECRET_MISSING, ReasonKind.DECRYPTION_FAILED, ReasonKind.HANDSHAKE_NOT_CAPTURED, ReasonKind.OTHER):
            for (epoch, _d), (packet, kind, label, words) in typed:
                if kind is want:
                    return DecryptReason(kind, label, _LEVELS[epoch], packet, missing, words)
        if self.first_1rtt == [None, None]:
            return DecryptReason(ReasonKind.NO_1RTT)
        if fails:  # an Initial, another version
            return DecryptReason(ReasonKind.OTHER, None, None, None, (), fails[0][1][3])
        return DecryptReason(ReasonKind.SECRET_MISSING if self.q is not None and self.q.client_random is not None
                             else ReasonKind.HANDSHAKE_NOT_CAPTURED, "CLIENT_TRAFFIC_SECRET_0", "1-RTT", None, ())

    def _flip(self, packet: int) -> None:
        """The first sender was taken for the client, and the key log says it is the server
        (a capture that starts inside the connection): what was kept per direction so far is
        swapped here, and the pipeline swaps the connection's endpoints, statistics and flow."""
        self.flip_request = True
        for name in ("first_1rtt", "first_long", "spin_last", "spin_pn", "spin_edges"):
            getattr(self, name).reverse()
        cid = self.conn.id
        frames = self.ctx.analysis.frames
        for i in range(len(frames) - 1, -1, -1):  # the few frames already listed for its packets
            f = frames[i]
            if f.packet < self.conn.first_packet:
                break
            if f.connection == cid:
                f.direction = 1 - f.direction
        self.ctx.note(self.conn, f"packet {packet}: client and server swapped: the key log's secrets show "
                                 f"{self.conn.server[0]}:{self.conn.server[1]} is the client")

    def _note_packet(self, d, qp, packet):
        """List a decrypted packet in ``analysis.quic_packets`` (numbers only)."""
        tab = self.ptab
        if tab is None:
            keys: list = []
            tab = self.ptab = (QuicPackets(keys), QuicPackets(keys))
            recs = self.ctx.analysis.quic_packets  # seen by views at once, while the pass goes on
            recs[(self.conn.id, 0)], recs[(self.conn.id, 1)] = tab
        k = qp.keys
        epoch = dq.EPOCH[qp.type]
        hit = self.last_key
        if hit is None or hit[0] is not k:
            hit = self.key_index.get(id(k))
        if hit is None or hit[0] is not k:
            cr = self.q.client_random if epoch else None
            entry = (epoch, k.version, k.suite, k.dcid or b"", k.gen, bytes(cr) if cr else b"")
            keys = tab[0].keys
            try:
                idx = keys.index(entry)
            except ValueError:
                idx = len(keys)
                keys.append(entry)
            hit = self.key_index[id(k)] = (k, idx)
        self.last_key = hit
        t = tab[d]
        t.offset.append(qp.offset)
        t.length.append(qp.size)
        t.hdr_len.append(qp.hdr_len)
        t.pn.append(qp.pn)
        t.flags.append(epoch | (qp.pn_len - 1) << 2 | (qp.key_phase or 0) << 4)
        t.key.append(hit[1])
        t.packet.append(packet)

    def _cids(self):
        cids = self.ctx.shared["quic_cids"]
        lens = self.ctx.shared["quic_cid_lengths"]
        for owner in (0, 1):
            for c in self.q.dirs[owner].cids:
                if c and c not in self.known_cids:  # (a zero-length CID would route every datagram here)
                    self.known_cids.add(c)
                    cids.setdefault(bytes(c), (self, owner))
                    lens.add(len(c))

    # -- events: TLS, streams ---------------------------------------------------------------
    def _events(self, events):
        conn = self.conn
        ctx = self.ctx
        for ev in events:
            kind = ev[0]
            if kind == "stream":
                _, d, sid, off, data, fin, packet = ev
                h = self.stream_hash.get((d, sid))
                if h is None:
                    h = self.stream_hash[(d, sid)] = [0, _SHA256.copy() if STREAM_DIGESTS else None]
                h[0] += len(data)
                if h[1] is not None:
                    h[1].update(data)
                if self.h3 is None and self.app_alpn is None:
                    offered = getattr(self, "_alpn_offered", None)
                    if offered and all(a == "h3" or a.startswith("h3-") for a in offered):
                        self._set_alpn(offered[0])  # EncryptedExtensions not decoded: the client offered only HTTP/3
                    elif offered is None and self.q.joined_late and self.infer_held is not None:
                        self._infer(ev, self.infer_held)  # no handshake, no ALPN: HTTP/3 by the shape of its streams?
                        continue
                h3 = self.h3
                if h3 is not None:
                    if h3.lenient:
                        self._stream_h3(h3, ev)
                    else:  # (_stream_h3 without its lenient cases, inline: once per STREAM frame)
                        frames = h3.stream_data(d, sid, data, packet, fin, off)
                        if frames or h3.errors:
                            self._h3(frames)
                        if fin:
                            self._fin(d, sid, packet)
            elif kind == "tls":
                _, d, epoch, mtype, info, first, packet = ev
                info_q = conn.quic
                if mtype == 1 and d == 0:
                    if conn.tls_start is None:
                        conn.tls_start = ctx.time(packet)
                    if info.get("sni") and not info_q.sni:
                        info_q.sni = info["sni"]
                    if info.get("error"):
                        conn.notes.append(f"packet {packet}: {info['error']}")
                    self._alpn_offered = info.get("alpn") or []
                elif mtype == 2 and d == 1 and info.get("error"):
                    conn.notes.append(f"packet {packet}: {info['error']}")
                elif mtype == 8 and d == 1:
                    alpn = info.get("alpn")
                    if isinstance(alpn, list):
                        alpn = alpn[0] if alpn else None
                    if alpn:
                        self._set_alpn(alpn)
                elif mtype == 20 and d == 0 and epoch == 2:
                    t = ctx.time(packet)
                    conn.tls_end = t
                    conn.connect_end = t
                    self.stats["client_finished_packet"] = packet
                elif mtype == 20 and d == 1:
                    self.stats["server_finished_packet"] = packet
                if mtype == 1 and info.get("client_random"):  # not a candidate for connections whose handshake is missing
                    ctx.shared.setdefault("claimed_client_randoms", set()).add(bytes(info["client_random"]))
                self._tls_info(d, mtype, info, first, packet)
                # one TLS handshake message carried in CRYPTO frames, in the TLS session's frame schema
                ctx.add_frame(Frame(packet, first, ctx.time(packet), conn.id, d, "tls", None, "HANDSHAKE",
                                    length=info.get("length", 0),
                                    fields={"messages": [info.get("name", "?")], "quic_epoch": ("Initial", "0-RTT", "Handshake", "1-RTT")[epoch],
                                            "encrypted": epoch > 0, "decrypted": True},
                                    error=info.get("error")))
            elif kind == "reset":
                _, d, sid, code, final, packet = ev
                self.resets.add((d, sid))
                if self.h3 is not None:
                    self.h3.stream_reset(d, sid)
                    ex = self.exchanges.get(sid)
                    if ex is not None and ex.reset is None:
                        ex.reset = f"0x{code:x}"
            elif kind == "trial_keys":
                _, d, packet = ev
                if self.q.client_random is not None:  # no longer a candidate for other connections
                    ctx.shared.setdefault("claimed_client_randoms", set()).add(bytes(self.q.client_random))
                ctx.note(conn, Note(NoteKind.KEYS_BY_TRIAL, packet, d))
            elif kind == "stop_sending":
                _, d, sid, code, packet = ev
                ex = self.exchanges.get(sid)
                if ex is not None and ex.error is None:
                    ex.error = f"STOP_SENDING 0x{code:x}"

    def _stream_h3(self, h3: Http3Dissector, ev) -> None:
        _, d, sid, off, data, fin, packet = ev
        frames = h3.stream_data(d, sid, data, packet, fin, off)
        if h3.lenient and sid & 2 == 0 and (d, sid) in h3.mid_streams:
            self._mid_row(d, sid, off, data, packet)  # (first: its frames, framed at the FIN, go to its row)
            if (d, sid) in h3.mid_sync:
                self._mid_synced(d, sid)
        if frames or h3.errors:  # (most chunks complete no frame)
            self._h3(frames)
        if fin:
            self._fin(d, sid, packet)

    def _fin(self, d: int, sid: int, packet: int) -> None:
        """A stream is complete (its FIN, and every byte before it, in: the dissector's "stream"
        event with ``fin``, at the packet that completed it): the end of the request (the client's
        side) or of the response (the server's; a push stream's too). RFC 9114 §4.1: a message ends
        with its stream, so an empty STREAM frame with FIN after the last DATA frame is the end, as
        HTTP/2's empty END_STREAM DATA frame is (amazon1: www.amazon.com/'s FIN in packet 562,
        after its last DATA in 561). An exchange with no byte of that side yet is left alone."""
        if sid & 3 == 0:
            ex = self.exchanges.get(sid)
        elif sid & 3 == 3 and d == 1 and self.pushes:
            ex = next((p for p in self.pushes.values() if p.stream_id == sid), None)
        else:
            return
        if ex is None:
            return
        if d == 0:
            if ex.request_end_packet is not None and packet > ex.request_end_packet:
                ex.request_end, ex.request_end_packet = self.ctx.time(packet), packet
        elif ex.response_end_packet is not None and packet > ex.response_end_packet:
            ex.response_end, ex.response_end_packet = self.ctx.time(packet), packet

    def _infer(self, ev, held: deque[tuple]) -> None:
        """Hold a stream event of a connection joined mid-way until a stream shows HTTP/3;
        then the connection is HTTP/3 (``conn.quic.alpn_inferred``) and the held events are
        replayed in order.  ``held``: self.infer_held (not yet None)."""
        _, d, sid, off, data, fin, packet = ev
        held.append(ev)
        self.infer_bytes += len(data)
        why = h3_evidence(sid, off, data)
        if why is None:
            while held and (self.infer_bytes > INFER_HOLD_BYTES or len(held) > INFER_HOLD_EVENTS):
                old = held.popleft()
                self.infer_bytes -= len(old[4])
                self.infer_dropped += len(old[4])
            return
        self.infer_held = None
        conn = self.conn
        conn.protocol = "h3"
        conn.quic.alpn_inferred = True
        h3 = self.h3 = Http3Dissector(self.ctx.limits["hpack_header_list"],
                                      budget=self.ctx.budget("header_decoded_bytes", conn), lenient=True,
                                      resync_budget=self.ctx.budget("h3_resync", conn))
        self._tap_h3()
        self.ctx.note(conn, f"packet {packet}: " + INFERRED_NOTE.format(why=why))
        if self.infer_dropped:
            self.ctx.note(conn, f"packet {packet}: {self.infer_dropped} bytes of stream data before it were not kept "
                                f"(over {INFER_HOLD_BYTES} bytes held); their streams are shown as if seen mid-stream")
        for e in held:
            self._stream_h3(h3, e)

    def _mid_row(self, d, sid, off, data, packet) -> None:
        """A request stream seen mid-stream (lenient): its row, with what is known (times;
        the sizes of the frames framed at its FIN, ``_mid_synced``), method, URL and status
        unknown unless a frame tells.  Its request's start is before the capture: unknown (the
        first client bytes seen may be a retransmission sent after the response began: amazon
        cut at packet 512 stamped the request's start 30 ms after its response's first byte)."""
        ctx = self.ctx
        ex = self.exchanges.get(sid)
        if ex is None:
            ex = self._new_request(sid)
        if sid not in self.mid_rows:
            self.mid_rows.add(sid)
        src = dict(ex.sources or {})
        key = "request_body_bytes" if d == 0 else "response_body_bytes"
        if src.get(key) != "lower_bound":
            # its bytes before the capture are not in it: whatever is counted is a lower bound
            src[key] = "lower_bound"
            ex.sources = src
            ex.error = ex.error or (f"stream joined mid-stream at offset {off} ({'client' if d == 0 else 'server'} side): "
                                    f"its body size is a lower bound")
        t = ctx.time(packet)
        if d == 0:
            ex.request_end, ex.request_end_packet = t, packet
        else:
            if ex.response_start is None:
                ex.response_start, ex.response_start_packet = t, packet
            ex.response_end, ex.response_end_packet = t, packet

    def _mid_synced(self, d, sid) -> None:
        """What framing a request stream seen mid-stream came to (``Http3Dissector.mid_sync``),
        said on its row once."""
        h3 = self.h3
        ex = self.exchanges.get(sid)
        if h3 is None or ex is None or (d, sid) in self.mid_said:
            return
        self.mid_said.add((d, sid))
        at, skipped, why = h3.mid_sync[(d, sid)]
        side = "client" if d == 0 else "server"
        if at is None:
            what = f"{side} side: {skipped} bytes captured, not framed ({why}): body size unknown (0 counted)"
        else:
            what = (f"{side} side: framed from stream offset {at} ({why}); the {skipped} bytes captured before it "
                    f"are not counted")
        ex.error = (ex.error + "; " if ex.error else "") + what

    def _tls_info(self, d, mtype, info, first, packet):
        """conn.tls: the TLS 1.3 handshake QUIC carries (same fields as for TLS over TCP)."""
        ti = self.conn.tls
        if ti is None:
            ti = self.conn.tls = TlsInfo(version="TLS 1.3")
        t = self.ctx.time(packet)
        if mtype == 1 and d == 0:
            ti.client_hello_time = ti.client_hello_time or self.ctx.time(first)
            ti.client_random = ti.client_random or info.get("client_random")
            ti.sni = ti.sni or info.get("sni")
            if not ti.alpn_offered:
                ti.alpn_offered = list(info.get("alpn") or [])
        elif mtype == 2 and d == 1:
            if info.get("hello_retry"):
                ti.hello_retry = True
            else:
                ti.server_hello_time = t
                cs = self.q.suite
                ti.cipher_suite_id = cs
                ti.cipher_suite = SUITES.get(cs, (None, None, None))[2] if cs is not None else None
                ti.resumed = bool(info.get("pre_shared_key"))
        elif mtype == 8 and d == 1:
            alpn = info.get("alpn")
            ti.alpn = alpn[0] if isinstance(alpn, list) and alpn else alpn
        elif mtype == 11 and d == 1:
            if info.get("certificate_der"):
                ti.set_certificate(info["certificate_der"])
            else:
                ti.certificate_subject = info.get("subject")
        elif mtype == 20:
            if d == 0:
                ti.client_finished_time = t
            else:
                ti.server_finished_time = t
        if self.q.dirs[d].keys[2] is not None:
            ti.decrypted = True

    def _set_alpn(self, alpn: str):
        conn = self.conn
        conn.quic.alpn = alpn
        self.app_alpn = alpn
        if alpn == "h3" or alpn.startswith("h3-"):
            conn.protocol = alpn
            if self.h3 is None:
                self.h3 = Http3Dissector(self.ctx.limits["hpack_header_list"],
                                         budget=self.ctx.budget("header_decoded_bytes", conn))
                self._tap_h3()

    # -- HTTP/3 ---------------------------------------------------------------------------
    def _tap_h3(self) -> None:
        """DATA payloads from the dissector: each response's to its body decoder (``_body``),
        and every one to ``ctx.body_sink`` by stream id (analyzer/objects.py) if one is set."""
        sink, conn = self.ctx.body_sink, self.conn
        if self.h3 is None:
            return
        body = self._body_data
        if sink is None:
            self.h3.data_sink = body
        else:
            def both(d, sid, data):
                body(d, sid, data)
                sink(conn, sid, d, bytes(data))
            self.h3.data_sink = both

    def _body_data(self, d: int, sid: int, data) -> None:
        """A chunk of a DATA frame's payload (the server's: the response bodies' decoded sizes)."""
        if d != 1:
            return
        b = self.bodies.get(sid, _UNDECIDED)
        if b is None:
            return
        if b is not _UNDECIDED:
            b.feed(bytes(data))  # type: ignore[attr-defined]
        elif sid not in self.body_lost:
            if self.body_wait_bytes + len(data) > BODY_WAIT_BYTES:
                self.body_lost.add(sid)
                self.body_wait_bytes -= sum(map(len, self.body_wait.pop(sid, ())))
                return
            self.body_wait.setdefault(sid, []).append(bytes(data))
            self.body_wait_bytes += len(data)

    def _body(self, ex: Exchange, sid: int) -> None:
        """The response on stream ``sid`` has its headers (or its body began without them):
        a decoder if they name a content coding, else its decoded size will be its size."""
        if sid in self.bodies:
            return
        wait = self.body_wait.pop(sid, None)
        if wait:
            self.body_wait_bytes -= sum(map(len, wait))
        ce = ex.content_encoding
        if not needs_decoder(ce) or sid in self.body_lost or (1, sid) in self.h3.mid_streams:  # type: ignore[union-attr]
            self.bodies[sid] = None
            return
        dec = self.bodies[sid] = BodyDecoder(ce, self.ctx.limits.get("body_decoded_bytes", 64 << 20), ctx=self.ctx,
                                             conn=self.conn)
        for chunk in wait or ():
            dec.feed(chunk)

    def _unanswered(self) -> None:
        """A request whose response the capture does not hold says so (as HTTP/2's do)."""
        for ex in self.exchanges.values():
            if ex.request_start is not None and ex.response_start is None and ex.error is None and ex.reset is None \
                    and ex.status is None:
                ex.error = "no response in the capture"

    def _cut_ends(self) -> None:
        """At the end of the capture, as HTTP/2's session does: each frame the capture ends
        inside is a ``NoteKind.ENDS_IN_FRAME`` note (``completeness.cut_short``), and a response
        whose stream the capture ends without its FIN (HTTP/3's only end of a body), neither
        stream direction reset, has a body size that is a lower bound and says so."""
        h3 = self.h3
        conn = self.conn
        ctx = self.ctx
        for d, sid, ftype, length, seen, packet in h3.ends_inside:  # type: ignore[union-attr]
            what = (f"a {ftype} frame of {length} payload bytes on stream {sid} ({seen} of them seen)" if ftype is not None
                    else f"a frame header on stream {sid} ({length} bytes of it seen)")
            conn.notes.append(Note(NoteKind.ENDS_IN_FRAME, packet, d, length=length,
                                   detail=f"HTTP/3: the capture ends inside {what}"))
            if ftype is None and d == 1:  # (a cut frame's last packet is already its exchange's end)
                ex = self.exchanges.get(sid) if sid & 3 == 0 else None
                if ex is not None and ex.response_end_packet is not None and packet > ex.response_end_packet:
                    ex.response_end, ex.response_end_packet = ctx.time(packet), packet
        streams = h3.streams  # type: ignore[union-attr]
        resets = self.resets
        for ex in list(self.exchanges.values()) + list(self.pushes.values()):
            sid = ex.stream_id
            if sid is None or ex.reset is not None or (1, sid) in resets or (0, sid) in resets:
                continue
            st = streams.get((1, sid))
            if st is None or st.done or not st.bytes:
                continue  # (the response ended with its FIN, or none of it is in the capture)
            lower_bound(ex, "response_body_bytes")
            if ex.error is None:
                ex.error = "response incomplete at the end of the capture"

    def _bodies_end(self) -> None:
        """At the end of the connection: each response's decoded body size (HTTP/3 has no
        end-of-body frame: the stream's FIN, which the exchange's last DATA frame stands for)."""
        coded = {sid: b for sid, b in self.bodies.items() if b is not None}
        for ex in list(self.exchanges.values()) + list(self.pushes.values()):
            if ex.response_body_decoded_bytes is not None or (ex.status is None and not ex.response_body_bytes):
                continue
            sid = ex.stream_id
            b = coded.get(sid) if sid is not None else None
            if b is not None:
                finish_body(self.conn, ex, b)
                if (ex.sources or {}).get("response_body_bytes") == "lower_bound":
                    lower_bound(ex, "response_body_decoded_bytes")  # (decoded from the bytes that came)
            elif needs_decoder(ex.content_encoding):
                continue  # (its start not seen or not kept: not decoded, null)
            else:
                ex.response_body_decoded_bytes = ex.response_body_bytes
                if (ex.sources or {}).get("response_body_bytes") == "lower_bound":
                    lower_bound(ex, "response_body_decoded_bytes")

    def _h3(self, frames):
        ctx = self.ctx
        conn = self.conn
        proto = conn.protocol
        stream_types = self.h3.stream_types
        listing = ctx.listing  # (False: no Frame per HTTP/3 frame either, see Context.listing)
        for f in frames:
            t = ctx.time(f.packet)
            sid = f.stream_id
            if listing:
                fields = dict(f.fields) if f.fields else {}
                if f.push_id is not None:
                    fields["push_id"] = f.push_id
                fields["stream_type"] = stream_types.get((f.direction, sid), "request")
                # (positional: packet, first_packet, time, connection, direction, protocol, stream_id, type,
                # flags, length, headers, fields, offset, error)
                ctx.analysis.frames.append(Frame(f.packet, f.first_packet, t, conn.id, f.direction, "h3", sid, f.type, 0,
                                                 f.length, f.headers, fields, f.offset, f.error))
            ctx.set_proto(f.packet, "HTTP3")  # (listed or not: the packet index is the same)
            if f.type == "HEADERS":
                if f.stream_id & 3 == 0:
                    ex = self.exchanges.get(sid)
                    if ex is None:
                        ex = self._new_request(sid)
                    self._on_headers(ex, f, sid)
                elif f.push_id is not None:
                    ex = self.pushes.get(f.push_id)
                    if ex is None:
                        ex = self.pushes[f.push_id] = ctx.new_exchange(conn, proto, sid)
                        ex.pushed = True
                    ex.stream_id = sid
                    self._on_headers(ex, f, sid, push=True)
            elif f.type == "PUSH_PROMISE" and f.push_id is not None:
                ex = self.pushes.get(f.push_id)
                if ex is None:
                    ex = self.pushes[f.push_id] = ctx.new_exchange(conn, proto, None)
                ex.pushed = True
                ex.push_parent = sid
                self._request_headers(ex, f)
            elif f.type == "DATA":
                ex = self.exchanges.get(sid) if sid & 3 == 0 else self.pushes.get(f.push_id)
                if ex is None:
                    continue
                ex.frames += 1
                # (the payload in the capture: a DATA frame the capture or the stream ended inside
                # counts the bytes that came, never its declared length)
                if f.direction == 0:
                    ex.request_body_bytes += f.length - f.missing
                    ex.request_end, ex.request_end_packet = t, f.packet
                else:
                    ex.response_body_bytes += f.length - f.missing
                    ex.response_end, ex.response_end_packet = t, f.packet
                    if sid not in self.bodies:
                        self._body(ex, sid)
                    if ex.response_start is None:
                        ex.response_start, ex.response_start_packet = ctx.time(f.first_packet), f.first_packet
            elif f.type == "PRIORITY_UPDATE" and f.fields and not f.fields.get("push"):
                target = f.fields.get("prioritized_element_id")
                ex = self.exchanges.get(target)
                if ex is not None:
                    ex.priority = h3_priority(f.fields.get("priority_field_value"))
                elif isinstance(target, int) and target & 3 == 0 and len(self.prio_pending) < MAX_PRIO_PENDING:
                    # (before its request: kept for it — page-multi-late's www requests, whose own
                    # priority header is a QPACK entry from before the capture, had none)
                    self.prio_pending[target] = f.fields.get("priority_field_value")
        if self.h3.errors:
            for p, msg in self.h3.errors:
                conn.notes.append(f"packet {p}: {msg}")
            self.h3.errors.clear()

    def _new_request(self, sid: int) -> Exchange:
        """The exchange of request stream ``sid`` (not made yet), with the priority a
        PRIORITY_UPDATE gave it before its first frame came (RFC 9218 §7: it overrides the
        request's priority header, which ``_request_headers`` then leaves alone)."""
        ex = self.exchanges[sid] = self.ctx.new_exchange(self.conn, self.conn.protocol, sid)
        pv = self.prio_pending.pop(sid, None)
        if pv is not None:
            ex.priority = h3_priority(pv)
        return ex

    def _request_headers(self, ex, f):
        ctx = self.ctx
        ex.request_headers = f.headers or []
        ex.request_header_bytes_wire += f.length
        ex.request_qpack_encoder_bytes += f.table_bytes
        ex.request_header_bytes_decoded += f.decoded_size
        hd = dict(ex.request_headers)
        ex.method = hd.get(":method")
        ex.scheme = hd.get(":scheme")
        ex.authority = hd.get(":authority") or hd.get("host")
        ex.path = hd.get(":path")
        if ex.scheme and ex.authority:
            ex.url = f"{ex.scheme}://{ex.authority}{ex.path or ''}"
        if hd.get("priority") and ex.priority is None:
            ex.priority = h3_priority(hd["priority"])
        if ex.request_start is None:
            ex.request_start, ex.request_start_packet = ctx.time(f.first_packet), f.first_packet
        ex.request_end, ex.request_end_packet = ctx.time(f.packet), f.packet
        if f.error and not ex.error:
            ex.error = f.error

    def _on_headers(self, ex, f, sid, push=False):
        ctx = self.ctx
        ex.frames += 1
        if f.direction == 0 and not push:
            if not ex.request_headers and (sid not in self.mid_rows or any(k == ":method" for k, _ in f.headers or ())):
                self._request_headers(ex, f)
            else:  # trailers
                ex.request_end, ex.request_end_packet = ctx.time(f.packet), f.packet
                ex.request_qpack_encoder_bytes += f.table_bytes
            return
        if ex.response_start is None:
            ex.response_start, ex.response_start_packet = ctx.time(f.first_packet), f.first_packet
        ex.response_end, ex.response_end_packet = ctx.time(f.packet), f.packet
        ex.response_header_bytes_wire += f.length
        ex.response_header_bytes_decoded += f.decoded_size
        ex.response_qpack_encoder_bytes += f.table_bytes
        hd = dict(f.headers or [])
        status = hd.get(":status")
        # a response header block of a connection joined mid-way whose :status refers to a QPACK
        # entry inserted before the capture: its fields are the response's, the status unknown
        # (an <unknown> field, no DATA before it: not trailers)
        unknown_status = status is None and not ex.response_headers and not ex.response_body_bytes and \
            any(k == "<unknown>" for k, _ in f.headers or ()) and (1, sid) not in self.h3.mid_streams
        if unknown_status:
            ex.response_headers = f.headers or []
            ex.response_headers_end, ex.response_headers_end_packet = ctx.time(f.packet), f.packet
            ex.content_type = hd.get("content-type")
            ex.content_encoding = hd.get("content-encoding")
        elif status is not None and (ex.status is None or ex.status < 200):
            try:
                ex.status = int(status)
            except ValueError:
                ex.error = ex.error or f"bad :status {status!r}"
            ex.response_headers = f.headers or []
            ex.response_headers_end, ex.response_headers_end_packet = ctx.time(f.packet), f.packet
            ex.content_type = hd.get("content-type")
            ex.content_encoding = hd.get("content-encoding")
            if ex.status is None or ex.status >= 200:
                self._body(ex, sid)
        elif status is None and ex.response_headers:
            ex.response_headers = ex.response_headers + (f.headers or [])  # trailers
        if f.error and not ex.error:
            ex.error = f.error

    # -- gQUIC ----------------------------------------------------------------------------
    def _gquic(self, direction, data, packet):
        ctx = self.ctx
        conn = self.conn
        g = self.g
        gp = g.datagram(direction, data, packet)
        t = ctx.time(packet)
        if conn.connect_start is None and direction == 0:
            conn.connect_start = t
        fields = {"packet_number": gp.pn, "encrypted": gp.encrypted, "version": gp.version,
                  "cid": gp.cid.hex() if gp.cid else None, "public_flags": gp.flags}
        if gp.versions:
            fields["versions"] = gp.versions
        ctx.add_frame(Frame(packet, packet, t, conn.id, direction, "gquic", None, "PUBLIC_RESET" if gp.reset else "PACKET",
                            length=gp.size, fields=fields, error=gp.error), "gQUIC")
        for (tag, tags), size in zip(gp.messages, gp.sizes):
            # (length: the message's bytes, as tshark's gquic.data_len of the STREAM frame that carries it whole)
            ctx.add_frame(Frame(packet, packet, t, conn.id, direction, "gquic", 1, tag, length=size, fields=dict(tags)), "gQUIC")
            if tag == "SHLO" and conn.connect_end is None:
                conn.connect_end = t
        info = conn.quic
        info.version = g.version
        info.dcid = g.cid.hex() if g.cid else None
        info.sni = g.sni
        info.decrypted = False
        info.reason = _QUIC_CRYPTO
        if gp.error:
            conn.notes.append(f"packet {packet}: {gp.error}")

    # -- end --------------------------------------------------------------------------------
    def end(self):
        conn = self.conn
        st = self.stats
        if self.kind == "gquic":
            g = self.g
            st.update({"kind": "gquic", "uaid": g.uaid, "messages": [(d, p, tag) for d, p, tag, _ in g.messages]})
            return
        if self.q is None:
            if conn.protocol is None:
                conn.protocol = None
            return
        q = self.q
        if self.infer_held or self.infer_dropped and self.infer_held is not None:
            first = self.infer_held[0][6] if self.infer_held else self.conn.first_packet
            self.ctx.note(conn, f"packet {first}: streams not recognised as HTTP/3 (the ALPN was not seen, and no "
                                f"stream opens like HTTP/3's); not decoded")
            self.infer_held = None
        if self.h3 is not None:
            try:
                self._h3(self.h3.finish())
                for d, sid in list(self.h3.mid_sync):
                    self._mid_synced(d, sid)
            except Exception as e:
                conn.notes.append(f"HTTP/3 end-of-capture decoding error: {e}")
            self._cut_ends()
            self._bodies_end()
            self._unanswered()
        info = conn.quic
        info.decrypted = self.decrypted_1rtt
        if not self.decrypted_1rtt:
            info.reason = self._reason()
        if info.sni is None and q.hello.get("sni"):
            info.sni = q.hello.get("sni")
        if conn.tls_end is None and self.first_1rtt[0] is not None and conn.connect_start is not None:
            conn.tls_end = conn.connect_end = self.first_1rtt[0][1]
        if q.suite is not None:
            st["cipher_suite"] = SUITES.get(q.suite, (None, None, f"0x{q.suite:04x}"))[2]
        st.update({k: list(v) for k, v in q.stats.items()})
        if q.violations:  # frames their packet type forbids: one note per connection
            first = min(v[1] for v in q.violations.values())
            what = ", ".join(f"{v[0]} {ft} in {pt}" for (ft, pt), v in sorted(q.violations.items()))
            conn.notes.append(f"packet {first}: frames their packet type may not carry (PROTOCOL_VIOLATION, RFC 9000 §12.4): "
                              f"{what}; shown, their data not passed on")
        st["retry"] = q.retry_count
        st["handshake_done_packet"] = q.handshake_done_packet
        samples = []
        for edges in self.spin_edges:
            samples.extend(b - a for a, b in zip(edges, edges[1:]))
        st["spin_rtt_samples"] = samples
        st["streams"] = {f"{d}:{sid}": {"bytes": h[0], "sha256": h[1].finalize().hex()} if h[1] is not None else {"bytes": h[0]}
                         for (d, sid), h in self.stream_hash.items()}
        if self.h3 is not None:
            h3 = self.h3
            st["h3_stream_types"] = {f"{d}:{sid}": k for (d, sid), k in h3.stream_types.items()}
            enc = [h3.lq[d].fed for d in (0, 1)] if h3.lenient else list(h3.enc_bytes)
            charged = [h3.lq[d].charged for d in (0, 1)] if h3.lenient else list(h3.enc_charged)
            st["qpack_encoder_bytes"] = enc  # per direction: bytes of its QPACK encoder stream seen
            st["qpack_encoder_bytes_charged"] = charged  # of which charged to header blocks
            if h3.lenient:
                st["h3_streams_inferred"] = sorted(f"{d}:{sid}" for d, sid in h3.inferred)
                st["qpack_lenient"] = [{"inserted": h3.lq[d].n, "repins": h3.lq[d].repins, "failed": h3.lq[d].failed}
                                       for d in (0, 1)]
                mids = sorted(sid for (d, sid) in h3.mid_streams if sid & 2 == 0)
                if mids:
                    ids = sorted(set(mids))
                    self.ctx.note(conn, MID_NOTE.format(n=len(ids), s="s" * (len(ids) != 1),
                                                        streams=", ".join(map(str, ids[:20])) + (" …" if len(ids) > 20 else "")))
