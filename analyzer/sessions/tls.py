"""TLS over a TCP connection: record-level timeline, handshake facts, decryption with key
logs, and hand-off of the decrypted application bytes to the inner session.

Frames (``Frame.protocol == "tls"``), one per TLS record, at the packet carrying the
record's last byte (``first_packet``: its first byte); ``Frame.type`` is the record's
content type as the receiver sees it: ``HANDSHAKE``, ``CHANGE_CIPHER_SPEC``, ``ALERT``,
``APPLICATION_DATA``, ``HEARTBEAT`` (a decrypted TLS 1.3 record shows its inner type; an
undecrypted one ``APPLICATION_DATA``, as on the wire), or ``SSLV2_CLIENT_HELLO``.
``Frame.length`` is the record length from its header, ``Frame.offset`` the TCP stream offset
of its header.  ``Frame.fields``: ``version`` (record-layer version name), ``encrypted``,
``decrypted``, ``messages`` (handshake message names when readable), ``alert``
(``"fatal: handshake_failure"``) when readable, ``plaintext`` (decrypted bytes),
``early_data`` for 0-RTT records.

Times in ``TlsInfo``: ``client_hello_time`` is the packet carrying the ClientHello's first
byte; ``server_hello_time`` and the ``*_finished_time`` the packets carrying the last byte of
those messages.  Without keys, TLS 1.2 Finished records are still recognised (the first
record after ChangeCipherSpec); for TLS 1.3 the client Finished is estimated as the client's
first encrypted record after the ServerHello and the server Finished as the server's last
record before it.  ``conn.tls_start`` = ClientHello time, ``conn.tls_end`` = the later Finished.

``TlsInfo.record_overhead[d]``: bytes of the TLS records in direction d that are not their
content — every record's 5-byte header, and of each protected record (application data,
and the Finished, NewSessionTicket, alerts… sent under encryption) the explicit nonce,
tag/MAC, padding and TLS 1.3 inner content type; exact when decrypted, from the cipher suite
otherwise (``dissectors.tls_suites.record_protection``: exact for TLS 1.0–1.2 stream and AEAD
suites and for a CBC Finished or alert, whose plaintext length is known; CBC assumes minimal
padding elsewhere, TLS 1.3 no padding), headers only where the suite is not known (a
capture that joined the connection mid-way).  ``record_overhead`` is a
``tls_suites.RecordOverhead``, whose ``bound`` says per direction when the figure is only a
lower bound (``_overhead_estimate``).  The content of plaintext records (ClientHello,
ServerHello, ChangeCipherSpec …) is not overhead.  (Since 2026-12-03: every record; before,
application-data records only.)  An SSLv2 ClientHello's header is not counted.

``decrypted`` is True when any record was decrypted; ``reason`` says why nothing (or not
everything) was, typed as QUIC's is (``model.DecryptReason``: kind, the secret first looked up
and not found, every secret missing): "no key log given" (``NO_KEYLOG``: none given — since
2026-12-04: before, "no key for this client random" as if one had been given; one given that
holds no secret, unreadable or not a key log, says "the key log given holds no secret" since
2026-12-05, ``model.NO_KEYLOG_GIVEN``), "no key for this client random" (``SECRET_MISSING``), "no ClientHello in the
capture" (``HANDSHAKE_NOT_CAPTURED``), "decryption failed at record N (packet P)"
(``DECRYPTION_FAILED``), "no encrypted records" (``NO_ENCRYPTED_RECORDS``), and ``OTHER``:
"unsupported cipher suite X", "unsupported version X", "gap in the stream at offset N", "no
ServerHello in the capture".
Decrypted application bytes go to the inner session with the packet of the record's last byte;
the plaintext offset -> packet maps are kept in ``ctx.shared["tls_plaintext_maps"][(conn id, dir)]``.
The packets that carried each plaintext byte on the wire (the first TCP segment of its record,
from the TCP carrier map ``ctx.shared["tcp_maps"]``: a segment that arrived before a hole was
filled carried its bytes, though they became readable later) are kept in
``ctx.shared["tls_wire_maps"]`` the same way: ``wire_packet`` gives the inner
sessions the packet of a request's or response's first byte (``request_start``,
``response_start``), where the record-completion packet only tells when it became readable.

Floods of small records stay small: past ``AGGREGATE_AFTER`` record frames on a
connection, a record shorter than ``AGGREGATE_BELOW`` bytes, not decrypted and no handshake
message, that follows such a record frame of its direction (no error) is counted on that
frame (``fields["count"]``: the frame stands for that many consecutive small records of the
direction; ``first_packet`` is the first one's, ``packet`` and ``time`` the last one's)
instead of adding a frame.  When they are not all identical to the first (type, length,
fields: a flood that varies them to defeat the count), ``fields["record_types"]`` counts them
by type and ``fields["record_bytes"]`` is their total length.

Every decrypted record is also listed, as numbers only (no plaintext: bounded memory), in
``analysis.tls_records[(conn id, dir)]`` (a ``TlsRecords``): its packet, TCP stream offset and length, plaintext offset and
length, content type, and which key and record sequence number decrypted it, so that a view
can re-read the record from the capture and decrypt it again (``analyzer.detail.decrypted_tls``).
The key is named, never stored: ``TlsKeyRef`` holds the client random (and, for TLS 1.2, the
server random and the client random whose master secret applies) to look up in the key log.
"""
from __future__ import annotations

from wirefall.dissectors import tls as T
from wirefall.dissectors.tls_suites import RecordOverhead, record_protection
from wirefall.dissectors.tls_crypto import (
    AEAD_ERRORS,
    DecryptError,
    Tls13RecordDecryptor,
    suite_params,
    tls12_decryptors,
)
from array import array
from bisect import bisect_right

from ..model import NO_SERVER_HELLO  # noqa: F401  (the note kind's wording; its home is the model)
from ..model import NO_KEYLOG_GIVEN, PROTO_CODE, DecryptReason, Frame, Note, NoteKind, OffsetMap, ReasonKind, TlsInfo
from . import tls_late

# the key-log labels a TLS 1.3 connection needs, in the order its records need them (the
# server's handshake flight first)
_TLS13_LABELS = ("SERVER_HANDSHAKE_TRAFFIC_SECRET", "CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_TRAFFIC_SECRET_0", "CLIENT_TRAFFIC_SECRET_0")

P_TLS = PROTO_CODE["TLS"]

MAX_PENDING_RECORDS = 256  # records held while their keys depend on a ServerHello not yet seen
MAX_LOST_RECORDS = 64  # record numbers tried after a gap (each one AEAD / MAC check on one record)
RESUME_RECORDS = 3  # records tried that way before decryption stays stopped in that direction
MAX_SESSION_CACHE = 10000  # TLS 1.2 session ids / tickets remembered per capture for resumption
AGGREGATE_AFTER = 4096  # record frames per connection before identical consecutive ones are counted on one frame
AGGREGATE_BELOW = 256  # ... if shorter than this (a Frame costs ~400 bytes) and not decrypted

# TlsRecords.key codes: which key decrypted a record
KEY_TLS12 = 0  # TLS 1.0-1.2 key block (from the master secret)
KEY_HANDSHAKE = 1  # TLS 1.3 [CLIENT|SERVER]_HANDSHAKE_TRAFFIC_SECRET
KEY_EARLY = 2  # TLS 1.3 CLIENT_EARLY_TRAFFIC_SECRET
KEY_APP = 3  # TLS 1.3 [CLIENT|SERVER]_TRAFFIC_SECRET_0; KEY_APP + n after n KeyUpdates


class TlsKeyRef:
    """Where a connection's keys come from (names and public values only, no secret)."""

    __slots__ = ("tls13", "version", "cipher_suite", "etm", "client_random", "server_random", "master_random")

    def __init__(self):
        self.tls13 = False
        self.version = 0
        self.cipher_suite = 0
        self.etm = False
        self.client_random: bytes | None = None
        self.server_random: bytes | None = None
        self.master_random: bytes | None = None  # TLS 1.2: client random of the CLIENT_RANDOM line


class TlsRecords:
    """The decrypted records of one direction of a connection, one row per record across
    compact arrays (appended by the analysis, possibly while a view reads: read
    ``len(packet)`` first, the other arrays are at least as long)."""

    __slots__ = ("ref", "offset", "length", "first_packet", "packet", "pt_offset", "pt_length", "seq", "key", "ctype")

    def __init__(self, ref: TlsKeyRef):
        self.ref = ref
        self.offset = array("q")  # TCP stream offset of the 5-byte record header
        self.length = array("I")  # record body length (ciphertext)
        self.first_packet = array("i")  # packet of the record's first byte
        self.pt_offset = array("q")  # offset in the decrypted stream (application data), else -1
        self.pt_length = array("I")  # plaintext length
        self.seq = array("q")  # record sequence number under its key
        self.key = array("H")  # KEY_* code
        self.ctype = array("B")  # content type (TLS 1.3: the inner type)
        self.packet = array("i")  # packet of the record's last byte (appended last)

    def __len__(self) -> int:
        return len(self.packet)

    def add(self, offset, length, first_packet, packet, pt_offset, pt_length, seq, key, ctype) -> None:
        self.offset.append(offset)
        self.length.append(length)
        self.first_packet.append(first_packet)
        self.pt_offset.append(pt_offset)
        self.pt_length.append(pt_length)
        self.seq.append(seq)
        self.key.append(key)
        self.ctype.append(ctype)
        self.packet.append(packet)


_TYPE_NAMES = T.CONTENT_TYPES
_VNAME_CACHE: dict[int, str] = {}


def _vname(v: int) -> str:
    s = _VNAME_CACHE.get(v)
    if s is None:
        s = _VNAME_CACHE[v] = T.version_name(v) or "?"
    return s


def _decrypted_fields(version: int, plaintext: int) -> dict:
    """The fields of a record decrypted on the fast path (``TlsSession.data``)."""
    return {"version": _VNAME_CACHE.get(version) or _vname(version), "encrypted": True, "decrypted": True, "plaintext": plaintext}


# (HANDSHAKE_NOT_CAPTURED's detail where keys were looked for by trial and none opened a record)
_TRIED = "no key log secret opened it by trial (only TLS 1.3 can be; TLS 1.2 needs its handshake)"


FINISHED_PLAINTEXT = 16  # TLS 1.0–1.2 Finished: 4-byte handshake header + 12 bytes verify_data (RFC 5246 7.4.9)
FINISHED_PLAINTEXT_SSL3 = 40  # SSL 3.0: header + MD5 (16) + SHA-1 (20) hashes
ALERT_PLAINTEXT = 2  # level, description
_NPN_EXTENSIONS = (13172, 30032)  # next_protocol_negotiation, channel_id: an encrypted client message before its Finished


class TlsSession:
    def __init__(self, ctx, conn, **kw):
        self.ctx = ctx
        self.conn = conn
        self.info = conn.tls = conn.tls or TlsInfo()
        if not isinstance(self.info.record_overhead, RecordOverhead):
            self.info.record_overhead = RecordOverhead(self.info.record_overhead)
        if conn.protocol is None:
            conn.protocol = "tls"
        self.readers = (T.RecordReader(), T.RecordReader())
        self.frames_append = ctx.analysis.frames.append
        self.listing = ctx.listing
        self.pkt_proto = ctx.proto
        self.hs = (T.HandshakeReader(), T.HandshakeReader())
        self.hs_start = [0, 0]  # packet of the first byte of the handshake message being assembled
        self.dec: list = [None, None]  # current read state per direction
        self.next_dec: list = [None, None]  # TLS 1.2: state that takes over at ChangeCipherSpec
        self.app_secret: list = [None, None]  # TLS 1.3: traffic secret 0 per direction
        self.enc = [False, False]  # records in this direction are protected
        self.lost = [False, False]  # decryption stopped in this direction (gap/failure)
        self.resume: list = [None, None]  # (decryptor, records left to try) after a gap, per direction
        self.pending: list = []  # (direction, record) waiting for the ServerHello
        self.hrr_suite: int | None = None  # the HelloRetryRequest's cipher suite
        self.sh_missing_tried = False
        self.ch: dict | None = None
        self.sh: dict | None = None
        self.version: int | None = None
        self.tls13 = False
        self.params = None
        self.early = False  # TLS 1.3 client offered 0-RTT; client records before its handshake keys
        self.early_dec = None
        self.hs_dec0 = None  # TLS 1.3 client handshake read state (while 0-RTT may be in flight)
        self.etm = False
        self.master: bytes | None = None
        self.master_cr: bytes | None = None
        self.keys_wanted = False
        self.inner = None
        self.pt_off = [0, 0]
        self.nrec = 0
        self.last_s2c_packet = 0
        self.after_ccs = [False, False]  # TLS 1.2, no keys: next handshake record is Finished
        self.ref = TlsKeyRef()
        self.rtab: tuple | None = None  # (TlsRecords, TlsRecords), made at the first decrypted record
        self.key_codes: dict = {}  # id(decryptor) -> (decryptor, KEY_* code)
        self.used = None  # the decryptor that opened the last TLS 1.3 record
        maps = ctx.shared.setdefault("tls_plaintext_maps", {})
        self.maps = (OffsetMap(), OffsetMap())
        maps[(conn.id, 0)], maps[(conn.id, 1)] = self.maps
        self.tcp_maps = ctx.shared.get("tcp_maps", {})
        wire = ctx.shared.setdefault("tls_wire_maps", {})
        self.wire = (OffsetMap(), OffsetMap())  # plaintext offset -> packet of its record's first byte
        wire[(conn.id, 0)], wire[(conn.id, 1)] = self.wire
        self.nframes = 0  # record frames made (AGGREGATE_AFTER)
        self.last_frame: list[Frame | None] = [None, None]  # per direction: the frame a flood is counted on
        self.last_key: list[tuple | None] = [None, None]  # (type, length, fields) of its first record
        self.fast: list = [None, None]  # per direction: data()'s fast-path state (_fast_state), None: ask again

    # ------------------------------------------------------------ byte-stream interface

    def data(self, direction, data, offset, packet):
        d = direction
        for rec in self.readers[d].feed(data, offset, packet):
            if rec.type != 23 or rec.header is None:  # (T.APPLICATION_DATA)
                self._record(d, rec)
                continue
            fast = self.fast[d]
            if fast is None:
                fast = self.fast[d] = self._fast_state(d)
            if fast is False:
                self._record(d, rec)
                continue
            # The steady state of a TLS 1.3 direction (_fast_state): what _record, _dec13,
            # Tls13RecordDecryptor.decrypt, _note_record, _plain, _frame and _deliver do for an
            # application-data record that opens, in one place (six calls and a dict per record
            # fewer); anything else (a record that does not open, padding, another inner type
            # than application data) takes the general path, which decides as before.
            dec, aead, iv, key, rows, pmap, wmap, cmap, inner = fast
            body = rec.body
            seq = dec.seq
            try:
                pt = aead.decrypt((iv ^ seq).to_bytes(12, "big"), body, rec.header)
            except AEAD_ERRORS:
                self._record(d, rec)  # (decrypts again, fails again, says so)
                continue
            ctype = pt[-1] if pt else 0
            if not ctype:  # padding (or nothing): the general path strips it
                self._record(d, rec)
                continue
            dec.seq = seq + 1
            n = len(pt) - 1
            info = self.info
            info.records += 1
            info.decrypted = True
            self.nrec += 1
            self.used = dec
            pk = rec.packet
            if d:
                self.last_s2c_packet = pk
            ln = len(body)
            pt_off = self.pt_off[d]
            a_off, a_len, a_fp, a_ptoff, a_ptlen, a_seq, a_key, a_ctype, a_pkt = rows
            a_off(rec.offset)
            a_len(ln)
            a_fp(rec.first_packet)
            a_ptoff(pt_off if ctype == 23 and n else -1)
            a_ptlen(n)
            a_seq(seq)
            a_key(key)
            a_ctype(ctype)
            a_pkt(pk)  # (appended last: see TlsRecords)
            if ctype != 23:  # a handshake message or an alert inside: the general path reads it
                self.fast[0] = self.fast[1] = None
                self._plain(d, rec, ctype, pt[:n], _decrypted_fields(rec.version, n))
                continue
            # _frame: a decrypted record is never counted on a flood's frame
            proto = self.pkt_proto
            if proto[pk - 1] < P_TLS:
                proto[pk - 1] = P_TLS
            self.nframes += 1
            self.last_key[d] = None
            if self.listing:  # (False, for `requests`: no Frame listed, see sessions.Context.listing)
                f = Frame(pk, rec.first_packet, self.ctx.ts[pk - 1], self.conn.id, d, "tls", None, "APPLICATION_DATA", 0,
                          ln, None, _decrypted_fields(rec.version, n), rec.offset, None)
                self.frames_append(f)
                self.last_frame[d] = f
            else:
                self.last_frame[d] = None
            info.record_overhead[d] += 5 + ln - n
            if n:
                if cmap is not None:  # the packet that carried the record's first byte (cmap.packet_at, inlined)
                    pp = cmap.packets
                    i = bisect_right(cmap.starts, rec.offset) - 1
                    fp = pp[i] if i >= 0 else (pp[0] if pp else 0)
                else:
                    fp = rec.first_packet
                pp = pmap.packets  # self.maps[d].add(pt_off, pk), self.wire[d].add(pt_off, fp), inlined
                if not pp or pp[-1] != pk:
                    pmap.starts.append(pt_off)
                    pp.append(pk)
                pp = wmap.packets
                if not pp or pp[-1] != fp:
                    wmap.starts.append(pt_off)
                    pp.append(fp)
                self.pt_off[d] = pt_off + n
                inner.data(d, pt[:n], pt_off, pk)

    def _fast_state(self, d: int):
        """What ``data`` needs for the fast path of direction ``d``'s application-data records,
        or False: a TLS 1.3 direction past its handshake, decrypting, nothing held or lost, no
        0-RTT, its records listed and its inner session made (each of those by the general
        path first).  ``self.fast`` caches it; every call of the general path clears it."""
        dec = self.dec[d]
        if (dec is None or type(dec) is not Tls13RecordDecryptor or not self.tls13 or self.sh is None or self.pending
                or self.lost[d] or not self.enc[d] or not self.nrec or self.early or dec is self.early_dec
                or self.rtab is None or self.inner is None):
            return False
        code = self.key_codes.get(id(dec))
        t = self.rtab[d]
        tcp = self.tcp_maps.get(self.conn.id)
        return (dec, dec.aead, dec.iv, code[1] if code is not None else KEY_TLS12,
                (t.offset.append, t.length.append, t.first_packet.append, t.pt_offset.append, t.pt_length.append,
                 t.seq.append, t.key.append, t.ctype.append, t.packet.append),
                self.maps[d], self.wire[d], tcp[d].map if tcp is not None else None, self.inner)

    def gap(self, direction, offset, length, packet):
        self.fast[0] = self.fast[1] = None
        self.readers[direction].gap(offset, length)
        if not self.lost[direction]:
            self.lost[direction] = True
            dec = self.dec[direction]
            if dec is not None or self.next_dec[direction] is not None:
                self._reason(DecryptReason(ReasonKind.OTHER, detail=f"gap in the stream at offset {offset}"))
            if self.inner is not None:
                self.inner.gap(direction, self.pt_off[direction], length, packet)
                self.pt_off[direction] += length  # (what the lost records held: unknown, this much at most)
            if dec is not None and self.next_dec[direction] is None:
                self.resume[direction] = (dec, RESUME_RECORDS)  # the record numbers lost are unknown: see _resume
            self.dec[direction] = self.next_dec[direction] = None

    def close(self, direction, packet):
        """The TCP stream closed (``flows.AppSession``): the plaintext stream too, for the
        session inside (a close_notify before it told it already: ``_plain``) — unless a record
        was left cut: then the plaintext did not end where it was meant to."""
        r = self.readers[direction]
        close = getattr(self.inner, "close", None)
        if close is not None and not (r.held or r.buf):
            close(direction, packet)

    def end(self):
        self.fast[0] = self.fast[1] = None
        if self.sh is None and self.pending:
            self._server_hello_missing(self.pending[0][1].packet)
        pend, self.pending = self.pending, []
        for d, rec in pend:
            self._record(d, rec, flushing=True)
        info = self.info
        if self.ch is None and info.reason is None:
            # with a key log, each direction's first protected records were tried against its
            # TLS 1.3 secrets (sessions/tls_late.py): say that none opened them — the limit
            # (a TLS 1.2 connection cannot be opened without its handshake) is the reader's
            # to know (the amazon load cut at packet 700: fls-na's TLS 1.2 POST, said only to
            # miss its ClientHello)
            tried = any(getattr(self, "late_tries", None) or ())
            info.reason = DecryptReason(ReasonKind.HANDSHAKE_NOT_CAPTURED, detail=_TRIED if tried else "")
        elif self.sh is None and info.reason is None and not info.decrypted:
            info.reason = DecryptReason(ReasonKind.OTHER, detail="no ServerHello in the capture")
        if info.reason is None and not info.decrypted:
            info.reason = DecryptReason(ReasonKind.NO_ENCRYPTED_RECORDS)
        for d, r in enumerate(self.readers):
            if r.skipped:  # the capture began inside a record, or a gap / bad header broke the chain
                self.ctx.note(self.conn, f"TLS {DIR[d]}: {r.skipped} bytes outside records skipped "
                                         f"while looking for record boundaries ({r.error or 'after a gap'})")
        self._finish_times()
        if self.inner is not None:
            self.inner.end()

    # ------------------------------------------------------------ records

    def _reason(self, why: DecryptReason) -> None:
        if self.info.reason is None:
            self.info.reason = why

    def _no_key(self, *wanted: str) -> DecryptReason:
        """The reason for keys not found: no key log at all (or one without a secret: nothing
        could be looked up, ``NO_KEYLOG``) or one without these secrets for this client random
        (``SECRET_MISSING``); ``wanted``: the key-log labels needed and not found, the first
        looked up first."""
        kl = self.ctx.keylog
        kind = ReasonKind.NO_KEYLOG if kl is None or len(kl) == 0 else ReasonKind.SECRET_MISSING
        given = kind is ReasonKind.NO_KEYLOG and kl is not None and getattr(kl, "given", False)
        return DecryptReason(kind, wanted[0] if wanted else None, None, None, wanted, NO_KEYLOG_GIVEN if given else "")

    def _record(self, d: int, rec: T.Record, flushing: bool = False) -> None:
        self.fast[0] = self.fast[1] = None  # (the state this record meets may change: data() asks again)
        rtype = rec.type
        info = self.info
        if rec.sslv2:
            self._frame(d, rec, "SSLV2_CLIENT_HELLO", {"version": "SSL 2.0", "encrypted": False, "messages": ["CLIENT_HELLO"]})
            info.records += 1
            ch = T.parse_sslv2_client_hello(rec.body)
            self._client_hello(ch, rec.first_packet, rec.packet)
            return
        if d == 1 and rtype == T.APPLICATION_DATA and self.sh is None and self.ch is not None and self.pending:
            self._server_hello_missing(rec.packet)  # protected server records, and no ServerHello: it was lost
        # TLS 1.3 0-RTT (or anything protected) before the ServerHello: wait for the keys
        if d == 0 and rtype == T.APPLICATION_DATA and self.sh is None and self.ch is not None and not flushing:
            if len(self.pending) < MAX_PENDING_RECORDS:
                rec.body = bytes(rec.body)  # do not pin the packet buffer
                self.pending.append((d, rec))
                return
        info.records += 1
        self.nrec += 1
        if self.nrec == 1 and self.ch is None and not (rtype == T.HANDSHAKE and len(rec.body) and rec.body[0] in (1, 2)):
            # capture started inside the connection: records are protected, keys unknowable
            self.enc[0] = self.enc[1] = True
            self.ctx.note(self.conn, f"packet {rec.first_packet}: TLS connection already under way when the capture starts")
        encrypted = self.enc[d] and (rtype == T.APPLICATION_DATA if self.tls13 else rtype != T.CCS)
        if d == 0 and self.early and rtype == T.APPLICATION_DATA and not self.enc[0]:
            encrypted = True
        fields = {"version": _vname(rec.version), "encrypted": encrypted}
        if d == 1:
            self.last_s2c_packet = rec.packet
        if not encrypted:
            self._plain(d, rec, rtype, rec.body, fields)
            return
        if self.lost[d] and self.resume[d] is not None:
            self._resume(d, rec)
        dec = self.dec[d]
        if dec is None and self.ch is None and rtype == T.APPLICATION_DATA and not self.lost[d]:
            dec = tls_late.trial(self, d, rec)  # joined mid-way: TLS 1.3 keys by trial (sessions/tls_late.py)
        pt = None
        inner_type = rtype
        early = False
        if dec is not None and not self.lost[d]:
            try:
                if self.tls13:
                    inner_type, pt = self._dec13(d, rec)
                    early = dec is self.early_dec and self.dec[d] is dec
                else:
                    pt = dec.decrypt(rtype, rec.version, rec.body)
            except _Skip:
                fields["early_data"] = True
                fields["decrypted"] = False
                self._frame(d, rec, "APPLICATION_DATA", fields)
                self._overhead_estimate(d, rec)
                return
            except DecryptError:
                self._reason(DecryptReason(ReasonKind.DECRYPTION_FAILED, None, None, rec.packet, (),
                                           f"at record {self.nrec} (packet {rec.packet})"))
                self.ctx.note(self.conn, f"packet {rec.packet}: TLS record {self.nrec} did not decrypt ({DIR[d]}); decryption stopped in this direction")
                self.lost[d] = True
                self.dec[d] = None
                if self.inner is not None:  # the rest of this direction will not arrive
                    self.inner.gap(d, self.pt_off[d], len(rec.body), rec.packet)
        if pt is None:
            fields["decrypted"] = False
            self._no_key_record(d, rec, rtype)
            self._frame(d, rec, _TYPE_NAMES.get(rtype, str(rtype)), fields)
            return
        info.decrypted = True
        fields["decrypted"] = True
        fields["plaintext"] = len(pt)
        used = self.used if self.tls13 else dec
        self._note_record(d, rec, used, inner_type, len(pt))
        if early or (self.tls13 and d == 0 and self.dec[0] is self.early_dec and self.early_dec is not None):
            fields["early_data"] = True
        self._plain(d, rec, inner_type, pt, fields)

    def _resume(self, d: int, rec: T.Record) -> None:
        """The first protected record after bytes the capture lost: how many records those held
        is unknown, and with it this record's sequence number (in the nonce, or the MAC).  The
        next MAX_LOST_RECORDS numbers are tried; the one that opens it resumes decryption
        (wirefall goes on where tshark stops).  A few records are tried before giving up."""
        dec, left = self.resume[d]
        base = dec.seq
        hdr = _header(rec)
        for k in range(MAX_LOST_RECORDS + 1):
            dec.seq = base + k
            try:
                if self.tls13:
                    dec.decrypt(hdr, rec.body)
                else:
                    dec.decrypt(rec.type, rec.version, rec.body)
            except DecryptError:
                continue
            dec.seq = base + k  # decrypted again by the usual path
            self.dec[d] = dec
            self.lost[d] = False
            self.resume[d] = None
            self.ctx.note(self.conn, f"packet {rec.packet}: TLS decryption resumed {DIR[d]} ({k} records lost before this one)")
            return
        dec.seq = base
        self.resume[d] = (dec, left - 1) if left > 1 else None

    def _dec13(self, d: int, rec: T.Record):
        hdr = _header(rec)
        dec = self.dec[d]
        if d == 0 and self.early and self.hs_dec0 is not None:
            # 0-RTT phase: early keys (if logged), else the client handshake keys; records that
            # fit neither are rejected early data the server skipped too (RFC 8446 4.2.10).
            for cand in (dec, self.hs_dec0) if dec is not self.hs_dec0 else (dec,):
                if cand is None:
                    continue
                try:
                    r = cand.decrypt(hdr, rec.body)
                except DecryptError:
                    continue
                if cand is self.hs_dec0:
                    self.dec[0] = cand
                    self.early = False
                self.used = cand
                return r
            raise _Skip
        self.used = dec
        return dec.decrypt(hdr, rec.body)

    def _note_record(self, d: int, rec: T.Record, used, ctype: int, pt_len: int) -> None:
        """List a decrypted record in ``analysis.tls_records`` (numbers only)."""
        if used is None:
            return
        tab = self.rtab
        if tab is None:
            tab = self.rtab = (TlsRecords(self.ref), TlsRecords(self.ref))
            recs = self.ctx.analysis.tls_records  # seen by views at once, while the pass goes on
            recs[(self.conn.id, 0)], recs[(self.conn.id, 1)] = tab
        code = self.key_codes.get(id(used))
        key = code[1] if code is not None else KEY_TLS12
        pt_off = self.pt_off[d] if ctype == T.APPLICATION_DATA and pt_len else -1
        tab[d].add(rec.offset, len(rec.body), rec.first_packet, rec.packet, pt_off, pt_len, used.seq - 1, key, ctype)

    def _tag(self, dec, code: int):
        if dec is not None:
            self.key_codes[id(dec)] = (dec, code)
        return dec

    def _plain(self, d: int, rec: T.Record, ctype: int, body, fields: dict) -> None:
        name = _TYPE_NAMES.get(ctype, str(ctype))
        # the record's header, and of a protected one what is not its content (record_overhead)
        self.info.record_overhead[d] += 5 + (len(rec.body) - len(body) if fields.get("encrypted") else 0)
        if ctype == T.HANDSHAKE:
            hs = self.hs[d]
            if not hs.buf:
                self.hs_start[d] = rec.first_packet
            msgs = hs.feed(body)
            if hs.error:
                self.ctx.note(self.conn, f"packet {rec.packet}: {hs.error}")
                hs.error = None
            fields["messages"] = [T.HANDSHAKE_TYPES.get(t, str(t)) for t, _ in msgs]
            frame = self._frame(d, rec, name, fields)
            start = self.hs_start[d]
            for t, b in msgs:
                self._message(d, t, b, start, rec, frame)
                start = rec.first_packet
            if hs.buf:
                self.hs_start[d] = start if msgs else self.hs_start[d]
            return
        if ctype == T.CCS:
            self._frame(d, rec, name, fields)
            if not self.tls13 and self.sh is not None:
                self.enc[d] = True
                self.after_ccs[d] = True
                if self.next_dec[d] is not None and not self.lost[d]:
                    self.dec[d] = self.next_dec[d]
                    self.next_dec[d] = None
            return
        if ctype == T.ALERT:
            a = T.parse_alert(body)
            if len(body) == 2:
                fields["alert"] = f"{a['level']}: {a['description']}"
            self._frame(d, rec, name, fields)
            if len(body) == 2 and body[1] == 0 and self.inner is not None:  # close_notify (RFC 8446 6.1): the
                close = getattr(self.inner, "close", None)  # sender's plaintext stream ends here, as its peer reads it
                if close is not None:
                    close(d, rec.packet)
            return
        if ctype == T.APPLICATION_DATA:
            self._frame(d, rec, name, fields)
            if body:
                tcp = self.tcp_maps.get(self.conn.id)  # the packet that carried the record's first byte
                m = tcp[d].map if tcp is not None else None
                self._deliver(d, body, rec.packet, m.packet_at(rec.offset) if m is not None else rec.first_packet)
            return
        self._frame(d, rec, name, fields)

    def _no_key_record(self, d: int, rec: T.Record, rtype: int) -> None:
        """Timeline facts from a record we cannot read (and its overhead, estimated)."""
        info = self.info
        self._overhead_estimate(d, rec, rtype)
        if not self.tls13:
            if self.after_ccs[d] and rtype == T.HANDSHAKE:  # TLS 1.2 Finished
                self.after_ccs[d] = False
                self._finished(d, rec.packet)
            return
        if rtype != T.APPLICATION_DATA:
            return
        if d == 0 and info.client_finished_time is None and self.sh is not None and not self.early:
            info.client_finished_time = self.ctx.time(rec.packet)
            if info.server_finished_time is None and self.last_s2c_packet:
                info.server_finished_time = self.ctx.time(self.last_s2c_packet)

    def _overhead_estimate(self, d: int, rec: T.Record, rtype: int | None = None) -> None:
        """A protected record not decrypted: its header, and what the cipher suite adds
        (record_overhead).  Exact where the suite fixes it — TLS 1.0–1.2 stream (RC4, NULL: the
        MAC) and AEAD suites (explicit nonce and tag) — and, for a CBC suite, on a record whose
        plaintext length is known (the Finished right after ChangeCipherSpec, 16 bytes; an alert,
        2 bytes; not under TLS compression, not a client whose NPN or Channel ID message may come
        first): the record's length less it.  Elsewhere a lower bound (``RecordOverhead.bound``):
        other CBC records (one byte of padding assumed), TLS 1.3 records (tag and content type;
        padding unknown), and a suite whose record protection is not known (the header only:
        ``dissectors.tls_suites.record_protection``; a capture that joined mid-way)."""
        n = len(rec.body)
        ov, exact = 0, False
        if self.tls13:
            p = self.params
            if p is not None and p.tls13:
                ov = p.tag_len + 1
        else:
            sh = self.sh or {}
            rp = record_protection(sh.get("cipher_suite"))
            if rp is not None:
                ov = rp.minimum(self.version)
                exact = rp.kind != "cbc"
                known = self._known_plaintext(d, rtype) if rp.kind == "cbc" else None
                if known is not None:
                    iv = rp.block if self.version is not None and self.version >= 0x0302 else 0
                    etm = bool((self.ch or {}).get("encrypt_then_mac")) and bool(sh.get("encrypt_then_mac"))
                    ct = n - iv - (rp.mac if etm else 0)  # the CBC ciphertext: whole blocks
                    if n - known >= ov and ct > 0 and ct % rp.block == 0:
                        ov, exact = n - known, True
        if ov > n:  # (shorter than the suite's least overhead: malformed, counted as it is)
            ov, exact = n, False
        ro = self.info.record_overhead
        ro[d] += 5 + ov
        if not exact and isinstance(ro, RecordOverhead):
            ro.bound[d] = True

    def _known_plaintext(self, d: int, rtype: int | None) -> int | None:
        """The plaintext length of a protected TLS 1.0–1.2 record not decrypted, where the
        protocol fixes it (``_overhead_estimate``), else None."""
        sh = self.sh or {}
        if sh.get("compression_method") != 0:  # (DEFLATE: the compressed length is not known)
            return None
        if rtype == T.ALERT:
            return ALERT_PLAINTEXT
        if rtype == T.HANDSHAKE and self.after_ccs[d]:
            if d == 0 and (sh.get("npn") or any(e[0] in _NPN_EXTENSIONS for e in sh.get("extensions") or ())):
                return None
            return FINISHED_PLAINTEXT_SSL3 if self.version == 0x0300 else FINISHED_PLAINTEXT
        return None

    def _frame(self, d: int, rec: T.Record, type_: str, fields: dict) -> Frame:
        pk = rec.packet
        proto = self.pkt_proto
        proto[pk - 1] = max(proto[pk - 1], P_TLS)  # ctx.add_frame(f, "TLS"), inlined: TLS marks a packet no higher layer has
        length = len(rec.body) if not rec.sslv2 else len(rec.body) - 2
        self.nframes += 1
        if self.nframes > AGGREGATE_AFTER and length < AGGREGATE_BELOW and not fields.get("messages") and not fields.get("decrypted"):
            # a flood of small records (e.g. a million one-byte records): counted on the
            # direction's previous such frame, a few bytes per record instead of a Frame and
            # its dict; records that differ from the first (type, length, fields: a flood
            # that varies them) make it a run, told by record_types and record_bytes
            key = (type_, length, fields)
            last = self.last_frame[d]
            first = self.last_key[d]
            # (a frame made here always has its fields dict: the last test narrows the type)
            if last is not None and first is not None and last.error is None and isinstance(fl := last.fields, dict):
                n = fl.get("count", 1)
                if "record_types" not in fl and key != first:
                    fl["record_types"] = {first[0]: n}
                    fl["record_bytes"] = first[1] * n
                if "record_types" in fl:
                    rt = fl["record_types"]
                    rt[type_] = rt.get(type_, 0) + 1
                    fl["record_bytes"] += length
                fl["count"] = n + 1
                last.packet = pk
                last.time = self.ctx.ts[pk - 1]
                return last
            self.last_key[d] = (type_, length, dict(fields))  # (a snapshot: the frame's own dict takes the count)
        else:
            self.last_key[d] = None
        # positional (once per record): packet, first_packet, time, connection, direction,
        # protocol, stream_id, type, flags, length, headers, fields, offset, error
        f = Frame(pk, rec.first_packet, self.ctx.ts[pk - 1], self.conn.id, d, "tls", None, type_, 0,
                  length, None, fields, rec.offset, None)
        self.frames_append(f)
        self.last_frame[d] = f
        return f

    # ------------------------------------------------------------ application data

    def _deliver(self, d: int, data: bytes, packet: int, first_packet: int) -> None:
        if self.inner is None:
            self.inner = self._make_inner()
        self.maps[d].add(self.pt_off[d], packet)
        self.wire[d].add(self.pt_off[d], first_packet)
        off = self.pt_off[d]
        self.pt_off[d] += len(data)
        self.inner.data(d, data, off, packet)

    def _make_inner(self):
        proto = self.info.alpn or self.info.npn
        ctx, conn = self.ctx, self.conn
        if proto == "h2":
            return ctx.make("h2", conn, cleartext=False)
        if proto in ("http/1.1", "http/1.0"):
            return ctx.make("http1", conn)
        if proto and proto.startswith("spdy/"):
            return ctx.make("spdy", conn, cleartext=False)
        return ctx.sniffer(conn, tls_inside=True)

    # ------------------------------------------------------------ handshake

    def _message(self, d: int, t: int, body: bytes, start_packet: int, rec: T.Record, frame: Frame) -> None:
        ctx, info = self.ctx, self.info
        if t == T.HS_CLIENT_HELLO and d == 0:
            ch = T.parse_client_hello(body)
            if "error" in ch:
                frame.error = ch["error"]
                ctx.note(self.conn, f"packet {rec.packet}: {ch['error']}")
            self._client_hello(ch, start_packet, rec.packet)
        elif t == T.HS_SERVER_HELLO and d == 1:
            sh = T.parse_server_hello(body)
            if "error" in sh:
                frame.error = sh["error"]
                ctx.note(self.conn, f"packet {rec.packet}: {sh['error']}")
            self._server_hello(sh, rec.packet)
        elif t == T.HS_ENCRYPTED_EXTENSIONS and d == 1:
            ee = T.parse_encrypted_extensions(body)
            if ee.get("alpn"):
                self._set_alpn(ee["alpn"])
            # (0-RTT rejected when ee lacks early_data: _dec13 skips client records no key fits)
        elif t == T.HS_CERTIFICATE and d == 1:
            if not info.has_certificate:
                # the subject is parsed when asked for (TlsInfo.certificate_subject); an
                # unparseable first certificate then gives None without a note
                c = T.parse_certificate(body, self.tls13, subject=False)
                if c["certificates"]:
                    info.set_certificate(c["certificates"][0])
        elif t == T.HS_NEW_SESSION_TICKET and d == 1 and not self.tls13:
            nst = T.parse_new_session_ticket(body)
            if nst.get("ticket") and self.master:
                self._cache("tls12_tickets", nst["ticket"], self.master)
        elif t == T.HS_FINISHED:
            self._finished(d, rec.packet)
            if self.tls13 and not self.lost[d]:
                sec = self.app_secret[d]
                if sec is not None:
                    self.dec[d] = self._tag(Tls13RecordDecryptor(self.params, sec), KEY_APP)
                elif self.dec[d] is not None:
                    self._reason(self._no_key(("CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0")[d]))  # traffic secret not logged
                    self.dec[d] = None
                self.enc[d] = True
        elif t == T.HS_END_OF_EARLY_DATA and d == 0:
            self.early = False
            self.dec[0] = self.hs_dec0
        elif t == T.HS_KEY_UPDATE and self.tls13:
            dec = self.dec[d]
            if dec is not None:
                old = self.key_codes.get(id(dec))
                self.dec[d] = self._tag(dec.next_generation(), (old[1] if old else KEY_APP) + 1)
            fields = frame.fields
            assert isinstance(fields, dict)  # the record's frame, made by _frame with a dict
            if body:
                fields["key_update"] = "update_requested" if body[0] == 1 else "update_not_requested"
        elif t == T.HS_NEXT_PROTOCOL and d == 0:
            p = T.parse_next_protocol(body)
            if p:
                info.npn = p
                if not info.alpn:
                    self.conn.protocol = p

    def _finished(self, d: int, packet: int) -> None:
        info = self.info
        tm = self.ctx.time(packet)
        if d == 0:
            if info.client_finished_time is None:
                info.client_finished_time = tm
        elif info.server_finished_time is None:
            info.server_finished_time = tm
        self._finish_times()

    def _finish_times(self) -> None:
        info, conn = self.info, self.conn
        if info.client_hello_time is not None:
            conn.tls_start = info.client_hello_time
        ends = [t for t in (info.client_finished_time, info.server_finished_time) if t is not None]
        if ends:
            conn.tls_end = max(ends)

    def _set_alpn(self, alpn: str) -> None:
        self.info.alpn = alpn
        self.conn.protocol = alpn

    def _client_hello(self, ch: dict, first_packet: int, packet: int) -> None:
        info = self.info
        if self.ch is not None:  # second ClientHello after a HelloRetryRequest (or renegotiation)
            if self.ch.get("random") is None:
                self.ch = ch
            return
        self.ch = ch
        info.client_random = ch.get("random")
        if info.client_random:  # not a candidate for connections whose handshake is missing
            self.ctx.shared.setdefault("claimed_client_randoms", set()).add(bytes(info.client_random))
        info.sni = ch.get("sni")
        info.alpn_offered = list(ch.get("alpn") or [])
        info.client_hello_time = self.ctx.time(first_packet)
        self.conn.tls_start = info.client_hello_time
        self.early = bool(ch.get("early_data"))

    def _server_hello(self, sh: dict, packet: int) -> None:
        info, ctx = self.info, self.ctx
        if sh.get("hello_retry"):
            info.hello_retry = True
            self.hrr_suite = sh.get("cipher_suite")  # the ServerHello must name the same (RFC 8446 4.1.4)
            return
        if self.sh is not None:
            return  # renegotiation: keep the first handshake's facts
        self.sh = sh
        info.server_hello_time = ctx.time(packet)
        v = sh.get("version")
        self.version = v
        info.version = T.version_name(v)
        cs = sh.get("cipher_suite")
        info.cipher_suite_id = cs
        info.cipher_suite = T.suite_name(cs)
        self.tls13 = v is not None and (v == 0x0304 or v >> 8 == 0x7F)
        if sh.get("alpn"):
            self._set_alpn(sh["alpn"])
        ch = self.ch or {}
        if self.tls13:
            info.resumed = bool(sh.get("pre_shared_key"))
        else:
            sid = sh.get("session_id") or b""
            info.resumed = bool(sid) and sid == ch.get("session_id")
        if not self.tls13 or not self.early:
            self.early = False
        self._setup_keys(sh)
        # 0-RTT records held until now
        if self.pending:
            pend, self.pending = self.pending, []
            for d, rec in pend:
                self._record(d, rec, flushing=True)

    def _server_hello_missing(self, packet: int) -> None:
        """The client sent protected records and the ServerHello is not in the capture (a
        dropped packet): TLS 1.3, whose client secrets the key log holds without the server's
        random.  The cipher suite is the HelloRetryRequest's, else the one (among those whose
        hash fits the secret's length) whose key opens the client's first held record: its AEAD
        tag tells.  The records held are then decrypted as usual."""
        if self.sh_missing_tried:
            return
        self.sh_missing_tried = True
        cr, kl = self.info.client_random, self.ctx.keylog
        chs = kl.get("CLIENT_HANDSHAKE_TRAFFIC_SECRET", cr) if cr is not None and kl is not None else None
        if chs is None or self.early:
            return  # (held records may be 0-RTT data: not these keys)
        rec = self.pending[0][1]
        hdr = _header(rec)
        suites = [self.hrr_suite] if self.hrr_suite else [0x1301, 0x1303] if len(chs) == 32 else [0x1302] if len(chs) == 48 else []
        for cs in suites:
            params = suite_params(cs)
            if params is None or not params.tls13:
                continue
            try:
                Tls13RecordDecryptor(params, chs).decrypt(hdr, rec.body)
            except DecryptError:
                continue
            sh = self.sh = {"version": 0x0304, "cipher_suite": cs, "random": None}
            info = self.info
            self.version = 0x0304
            info.version = T.version_name(0x0304)
            info.cipher_suite_id, info.cipher_suite = cs, T.suite_name(cs)
            self.tls13 = True
            self._setup_keys(sh)
            how = "the HelloRetryRequest's" if self.hrr_suite else "found by decrypting the client's first protected record"
            self.ctx.note(self.conn, Note(NoteKind.NO_SERVER_HELLO, packet, detail=f"TLS 1.3 assumed, cipher suite {info.cipher_suite} ({how})"))
            pend, self.pending = self.pending, []
            for d, r in pend:
                self._record(d, r, flushing=True)
            return

    def _setup_keys(self, sh: dict) -> None:
        info, kl = self.info, self.ctx.keylog
        cr = info.client_random
        cs = sh.get("cipher_suite")
        self.params = params = suite_params(cs)
        if self.tls13:
            self.enc[1] = True
            self.enc[0] = True if not self.early else False
            if params is None or not params.tls13:
                self._reason(DecryptReason(ReasonKind.OTHER, detail=f"unsupported cipher suite {T.suite_name(cs)}"))
                return
            if kl is None:
                self._reason(self._no_key(*_TLS13_LABELS))
                return
            if cr is None:  # (its ClientHello was lost: no client random to look secrets up by)
                self._reason(DecryptReason(ReasonKind.HANDSHAKE_NOT_CAPTURED))
                return
            # (an empty key log is still asked: a live one may wait for the secret, KeyLog.on_miss;
            # _no_key then tells "no key log given" from a key log without this client random)
            g = kl.get
            chs, shs = g("CLIENT_HANDSHAKE_TRAFFIC_SECRET", cr), g("SERVER_HANDSHAKE_TRAFFIC_SECRET", cr)
            self.app_secret = [g("CLIENT_TRAFFIC_SECRET_0", cr), g("SERVER_TRAFFIC_SECRET_0", cr)]
            if shs is None and chs is None:
                self._reason(self._no_key(*(lb for lb, v in zip(_TLS13_LABELS, (shs, chs, *self.app_secret[::-1])) if v is None)))
                return
            ref = self.ref
            ref.tls13, ref.version, ref.cipher_suite, ref.client_random = True, self.version, cs, cr
            self.dec[1] = self._tag(Tls13RecordDecryptor(params, shs), KEY_HANDSHAKE) if shs else None
            hs0 = self._tag(Tls13RecordDecryptor(params, chs), KEY_HANDSHAKE) if chs else None
            if self.early:
                ets = g("CLIENT_EARLY_TRAFFIC_SECRET", cr)
                self.early_dec = self._tag(Tls13RecordDecryptor(params, ets), KEY_EARLY) if ets else None
                self.hs_dec0 = hs0
                self.dec[0] = self.early_dec or hs0
                self.enc[0] = True
            else:
                self.dec[0] = hs0
            if shs is None or chs is None:
                self._reason(self._no_key(*(lb for lb, v in zip(_TLS13_LABELS, (shs, chs, *self.app_secret[::-1])) if v is None)))
            return
        if params is None:
            self._reason(DecryptReason(ReasonKind.OTHER, detail=f"unsupported cipher suite {T.suite_name(cs)}"))
            return
        if self.version is None or self.version < 0x0301:
            self._reason(DecryptReason(ReasonKind.OTHER, detail=f"unsupported version {T.version_name(self.version)}"))
            return
        master = None
        master_cr = cr
        if cr is not None and kl is not None:
            master = kl.get("CLIENT_RANDOM", cr)
        ch = self.ch or {}
        if master is None and info.resumed:
            master, master_cr = self._cached("tls12_sessions", sh.get("session_id"))
        if master is None and ch.get("session_ticket"):
            master, master_cr = self._cached("tls12_tickets", ch["session_ticket"])
            if master is not None:
                info.resumed = True
        if master is None:
            self._reason(self._no_key("CLIENT_RANDOM"))
            return
        self.master = master
        self.master_cr = master_cr
        if sh.get("session_id"):
            self._cache("tls12_sessions", sh["session_id"], master)
        etm = bool(ch.get("encrypt_then_mac")) and bool(sh.get("encrypt_then_mac"))
        c, s = tls12_decryptors(master, cr, sh["random"], params, self.version, etm)
        self.next_dec = [c, s]
        ref = self.ref
        ref.version, ref.cipher_suite, ref.etm = self.version, cs, etm and params.cipher.endswith("CBC")
        ref.client_random, ref.server_random, ref.master_random = cr, sh["random"], master_cr

    def _cache(self, name: str, key: bytes, master: bytes) -> None:
        cache = self.ctx.shared.setdefault(name, {})
        if len(cache) < MAX_SESSION_CACHE:
            cache[bytes(key)] = (master, self.master_cr or self.info.client_random)

    def _cached(self, name: str, key) -> tuple[bytes | None, bytes | None]:
        """(master secret, client random of the key-log line it came from) or (None, None)."""
        if not key:
            return None, None
        return self.ctx.shared.get(name, {}).get(bytes(key)) or (None, None)


def wire_packet(ctx, conn, direction: int, offset: int, packet: int) -> int:
    """The packet that carried, on the wire, the byte at ``offset`` of a connection's
    application stream: inside TLS the first TCP segment of the record holding that plaintext
    byte, in cleartext the TCP segment that carried it (its first copy).  ``packet`` — the one
    at which the byte became readable: the record's last segment, or the segment that filled a
    hole before it — when the capture's maps do not tell."""
    if offset < 0:
        return packet
    sh = ctx.shared
    maps = sh.get("tls_wire_maps")
    m = maps.get((conn.id, direction)) if maps is not None else None
    if m is None:
        tcp = sh.get("tcp_maps", {}).get(conn.id)
        m = tcp[direction].map if tcp is not None else None
    if m is None or not m.packets:
        return packet
    return m.packet_at(offset)


def _header(rec: T.Record) -> bytes:
    """The record's 5-byte header (TLS 1.3's additional data), rebuilt from its fields."""
    n = len(rec.body)
    return bytes((rec.type, rec.version >> 8, rec.version & 0xFF, n >> 8, n & 0xFF))


class _Skip(Exception):
    """Internal: a 0-RTT record the server rejected (no key fits)."""


DIR = ("client→server", "server→client")
