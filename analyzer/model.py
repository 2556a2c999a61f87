"""The timeline model every protocol fills and every view reads.

- ``Connection``: one TCP connection or UDP flow (QUIC connection), its endpoints,
  handshake facts (``tls``/``quic``), protocol, phase times and statistics.
- ``Exchange``: one request and its response (or one pushed response).
- ``Frame``: one protocol frame (HTTP/2, SPDY, QUIC, HTTP/3, HTTP/1 message, TLS record).
- ``Analysis``: the whole capture: packet index, connections, exchanges, frames.

Times are float epoch seconds, each the timestamp of the packet that carried the byte in
question; packet numbers are 1-based in file order, as Wireshark numbers them.
Directions: 0 = client to server ("c2s"), 1 = server to client ("s2c").
"""
from __future__ import annotations

import enum
from _thread import allocate_lock  # (threading.Lock itself: the threading module, ~0.5 ms of a start, is not needed)
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, ClassVar

from wirefall.dissectors.dataclass_repr import FACTORY, dataclass_repr

C2S, S2C = 0, 1
DIRECTION_NAMES = ("c2s", "s2c")
DIRECTION_ARROWS = ("client→server", "server→client")  # as notes name a direction

# the wording of two notes other code used to look for as substrings (kept importable from
# analyzer.sessions.quic / .tls, where they were first defined)
TRIAL_NOTE = "keys found by trying the key log's secrets (the connection's ClientHello is not in the capture)"
NO_SERVER_HELLO = "ServerHello not in the capture"  # noted when the client's records are decrypted without it


class NoteKind(enum.Enum):
    """What a connection note says, for the code that acts on it (``Note.kind``)."""

    TEXT = "text"  # a decoder's message for the user; nothing reads it but a person
    GAP = "gap"  # bytes lost by the capture: direction, stream offset, length (analyzer.flows)
    RETRANSMISSION_DIFFERS = "retransmission_differs"  # resent bytes [offset, offset+length) differ from the first copy
    INTERNAL_ERROR = "internal_error"  # decoding of the connection stopped on a bug; detail: exception type and words
    KEYS_BY_TRIAL = "keys_by_trial"  # QUIC keys found by trying the key log's secrets (no ClientHello seen)
    NO_SERVER_HELLO = "no_server_hello"  # TLS 1.3 records decrypted without the ServerHello; detail: how
    # (the kinds below render as "packet N: <detail>", the words they always had; the expert view
    # classifies them by kind, not by matching their words)
    PROTOCOL_SWITCH = "protocol_switch"  # the connection left HTTP/1 (h2c upgrade, CONNECT tunnel, 101 to another protocol)
    FLOW_CONTROL = "flow_control"  # a DATA frame overran or exhausted a flow-control window; direction; length: bytes over
    STREAM_UNSEEN = "stream_unseen"  # frames of a stream whose opening frame the capture does not hold
    ENDS_IN_FRAME = "ends_in_frame"  # the capture ends inside a frame; direction; length: the frame's size
    STREAM_MISUSE = "stream_misuse"  # a stream id reused, or a stream reset after it completed
    QUIC_RETRY = "quic_retry"  # the server answered the client's Initial with a Retry; detail: token, integrity, the Initial that carries it


class Note(str):
    """One connection note: a typed fact (``kind``, ``packet``, ``direction``, ``offset``,
    ``length``, ``detail``) whose text, for display and the JSON ``notes`` strings, is
    rendered from those fields in one place (``render``).  Code that acts on a note matches
    its ``kind`` and reads its fields — never the text.

    It is a ``str`` (the rendered text) so that ``Connection.notes`` stays one list of what
    every view shows, and decoders' plain-text messages (kind ``TEXT``) sit in it unchanged;
    instances are immutable and pickle as their fields (the analysis cache stores facts)."""

    kind: NoteKind
    packet: int | None
    direction: int | None
    offset: int | None
    length: int | None
    detail: str

    def __new__(cls, kind: NoteKind, packet: int | None = None, direction: int | None = None,
                offset: int | None = None, length: int | None = None, detail: str = "") -> Note:
        self = super().__new__(cls, cls.render(kind, packet, direction, offset, length, detail))
        d = self.__dict__
        d["kind"], d["packet"], d["direction"], d["offset"], d["length"], d["detail"] = kind, packet, direction, offset, length, detail
        return self

    @staticmethod
    def render(kind: NoteKind, packet: int | None, direction: int | None, offset: int | None,
               length: int | None, detail: str) -> str:
        at = f"packet {packet}: " if packet is not None else ""
        arrow = DIRECTION_ARROWS[direction] if direction in (0, 1) else "?"
        if kind is NoteKind.GAP:
            return f"{at}{length} bytes missing from the capture in {arrow} at stream offset {offset}"
        if kind is NoteKind.RETRANSMISSION_DIFFERS:
            end = None if offset is None or length is None else offset + length
            return f"{at}retransmitted {arrow} bytes {offset}..{end} differ from the original; the first copy is kept"
        if kind is NoteKind.INTERNAL_ERROR:
            return f"{at}decoding of this connection stopped on an internal error ({detail}); frames before it are kept"
        if kind is NoteKind.KEYS_BY_TRIAL:
            return f"{at}{TRIAL_NOTE}"
        if kind is NoteKind.NO_SERVER_HELLO:
            return f"{at}{NO_SERVER_HELLO}" + (f"; {detail}" if detail else "")
        return f"{at}{detail}"

    @classmethod
    def text(cls, message: str) -> Note:
        """A plain message (kind ``TEXT``)."""
        return cls(NoteKind.TEXT, detail=message)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Note is immutable (setting {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Note is immutable (deleting {name!r})")

    def __reduce__(self):
        return (Note, (self.kind, self.packet, self.direction, self.offset, self.length, self.detail))


class ReasonKind(enum.StrEnum):
    """Why a TLS or QUIC connection was not decrypted (``DecryptReason.kind``; JSON
    ``tls.reason_kind``, ``quic.reason_kind``)."""

    NO_KEYLOG = "no_keylog"  # no key log given (or one without a secret): nothing could be looked up
    SECRET_MISSING = "secret_missing"  # the key log lacks ``secret`` for this connection's client random
    DECRYPTION_FAILED = "decryption_failed"  # keys were derived and do not open the packets
    HANDSHAKE_NOT_CAPTURED = "handshake_not_captured"  # client random unknown, and no secret of the key log opened a packet
    NO_1RTT = "no_1rtt"  # nothing to decrypt: no 1-RTT packet in the capture
    QUIC_CRYPTO = "quic_crypto"  # gQUIC's QUIC-Crypto, which no key log opens
    NO_ENCRYPTED_RECORDS = "no_encrypted_records"  # TLS: nothing to decrypt (no protected record in the capture)
    OTHER = "other"  # ``detail`` says (cipher suite, version; TLS: a ServerHello or bytes lost)
    KEY_PENDING = "key_pending"  # live capture: ``SECRET_MISSING`` while the key log may yet be written (analyzer.live)


def _where(level: str | None, packet: int | None) -> str:
    """"Handshake packets from packet 471" (a ``DecryptReason``'s level and first packet), or ""."""
    return f"{level} packets from packet {packet}" if level and packet is not None else (f"{level} packets" if level else "")


# NO_KEYLOG's words where a key log was given and holds no secret (unreadable, empty, not a key
# log): "no key log given" read as if --keylog had been forgotten (review 31)
NO_KEYLOG_GIVEN = "the key log given holds no secret"


class DecryptReason(str):
    """Why a QUIC or TLS connection was not decrypted, as one typed fact: ``kind`` (``ReasonKind``),
    ``secret`` (the key-log label of the first level that could not be decrypted, e.g.
    ``SERVER_HANDSHAKE_TRAFFIC_SECRET``), ``level`` (its packet type: ``Handshake``, ``0-RTT``,
    ``1-RTT``), ``packet`` (the first packet of that level not decrypted), ``missing`` (every
    label the connection needed and went without, first missing first) and ``detail`` (the
    decoder's words, for ``OTHER`` and ``DECRYPTION_FAILED``).  The text every view shows
    (``QuicInfo.reason``, the table row, the completeness line, JSON ``quic.reason``) is
    rendered here from those fields, and only for display: code reads the fields.  A ``str``
    (its text) as ``Note`` is; pickles as its fields.

    A TLS connection's reason (``TlsInfo.reason``, ``sessions/tls.py``) names no ``level`` (its
    records have no packet levels): its text is TLS's own words for the kind — "no key log
    given", "no key for this client random" (``secret``: the first label looked up and not
    found), "no ClientHello in the capture", "decryption failed at record N (packet P)"
    (``detail``: "at record N (packet P)"), "no encrypted records", and ``OTHER``'s ``detail``."""

    kind: ReasonKind
    secret: str | None
    level: str | None
    packet: int | None
    missing: tuple[str, ...]
    detail: str

    def __new__(cls, kind: ReasonKind, secret: str | None = None, level: str | None = None, packet: int | None = None,
                missing: tuple[str, ...] = (), detail: str = "") -> DecryptReason:
        self = super().__new__(cls, cls.render(kind, secret, level, packet, missing, detail))
        d = self.__dict__
        d["kind"], d["secret"], d["level"], d["packet"], d["missing"], d["detail"] = kind, secret, level, packet, tuple(missing), detail
        return self

    @staticmethod
    def render(kind: ReasonKind, secret: str | None, level: str | None, packet: int | None,
               missing: tuple[str, ...], detail: str) -> str:
        where = _where(level, packet)
        if kind is ReasonKind.KEY_PENDING:
            return "no key yet (waiting for the key log)"
        if level is None:  # TLS's (records, no packet levels): its own words, as they were before they were typed
            if kind is ReasonKind.SECRET_MISSING:
                return "no key for this client random"
            if kind is ReasonKind.HANDSHAKE_NOT_CAPTURED:
                return "no ClientHello in the capture" + (f"; {detail}" if detail else "")
            if kind is ReasonKind.DECRYPTION_FAILED:
                return "decryption failed" + (f" {detail}" if detail else "")
            if kind is ReasonKind.NO_ENCRYPTED_RECORDS:
                return "no encrypted records"
        if kind is ReasonKind.NO_KEYLOG:  # (``detail``: NO_KEYLOG_GIVEN where one was given that holds none)
            return (detail or "no key log given") + (f" ({where} need {secret})" if secret and where else "")
        if kind is ReasonKind.SECRET_MISSING:
            rest = [m for m in missing if m != secret]
            return (f"no {secret} in the key log for this client random" + (f" ({where})" if where else "")
                    + (f"; nor {', '.join(rest)}" if rest else ""))
        if kind is ReasonKind.DECRYPTION_FAILED:
            return (f"the key log's {secret} does not decrypt the {where}" if secret and where else "decryption failed") \
                + (f": {detail}" if detail else "")
        if kind is ReasonKind.HANDSHAKE_NOT_CAPTURED:
            return "client random unknown (ClientHello not captured), and no secret of the key log opened a packet"
        if kind is ReasonKind.NO_1RTT:
            return "no 1-RTT packets"
        if kind is ReasonKind.QUIC_CRYPTO:
            return "gQUIC uses QUIC-Crypto; only the unencrypted handshake is shown"
        return (f"cannot decrypt {where}: {detail}" if where else detail) or "not decrypted"

    @property
    def needs(self) -> str:
        """" (Handshake packets from packet 471 need SERVER_HANDSHAKE_TRAFFIC_SECRET)" where the
        reason names the level and the secret it went without, else "" (as ``render`` says it)."""
        where = _where(self.level, self.packet)
        return f" ({where} need {self.secret})" if self.secret and where else ""

    @property
    def for_want_of_keys(self) -> bool:
        """A secret was not there to look up (as opposed to a handshake not captured, a key that did not open the data)."""
        return self.kind in (ReasonKind.NO_KEYLOG, ReasonKind.SECRET_MISSING)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"DecryptReason is immutable (setting {name!r})")

    def __reduce__(self):
        return (DecryptReason, (self.kind, self.secret, self.level, self.packet, self.missing, self.detail))


def note_kind(note: str) -> NoteKind:
    """The kind of an entry of ``Connection.notes`` (a plain string is a ``TEXT`` note)."""
    return note.kind if isinstance(note, Note) else NoteKind.TEXT


def notes_of(notes: Iterable[str], kind: NoteKind) -> Iterator[Note]:
    """The notes of one kind, in order."""
    for n in notes:
        if isinstance(n, Note) and n.kind is kind:
            yield n


class OffsetMap:
    """Map from byte offsets of one directional stream to the packets that carried them.

    ``add(offset, packet)`` is called for each chunk in increasing offset order; lookups
    are O(log n).  Used by TCP reassembly (stream offset -> segment) and by TLS
    (plaintext offset -> packet that completed the record)."""

    __slots__ = ("starts", "packets")

    def __init__(self):
        self.starts = array("q")
        self.packets = array("i")

    def add(self, offset: int, packet: int) -> None:
        if self.packets and self.packets[-1] == packet:
            return  # same packet continues
        self.starts.append(offset)
        self.packets.append(packet)

    def packet_at(self, offset: int) -> int:
        i = bisect_right(self.starts, offset) - 1
        return self.packets[i] if i >= 0 else (self.packets[0] if self.packets else 0)

    def packets_between(self, start: int, end: int) -> list[int]:
        """Packets that carried bytes [start, end)."""
        i = max(bisect_right(self.starts, start) - 1, 0)
        j = bisect_right(self.starts, max(end - 1, start))
        out: list[int] = []
        for p in self.packets[i:j]:
            if not out or out[-1] != p:
                out.append(p)
        return out

    def chunks_between(self, start: int, end: int) -> list[tuple[int, int, int]]:
        """``(packet, first, end)``: the chunks that delivered bytes [start, end), each the
        stream offsets it gave (to the next chunk's start; a chunk cut by a gap still names it)."""
        i = max(bisect_right(self.starts, start) - 1, 0)
        j = bisect_right(self.starts, max(end - 1, start))
        st, pk = self.starts, self.packets
        return [(pk[k], st[k], st[k + 1] if k + 1 < len(st) else end) for k in range(i, j)]


# Every dataclass of the model has a docstring: for a class without one, @dataclass builds one
# from inspect.signature(cls) at import, ~0.5-1 M instructions a class at every start.  They are
# eq=False (compared by identity: nothing compares two of them by value — tests compare their
# dicts or JSON — and the generated __eq__ of ~40 fields costs every start); an Analysis has no
# generated __repr__ either (it would print every frame).
@dataclass(init=False, slots=True, eq=False, repr=False)
class TlsInfo:
    """What the TLS handshake of a connection showed (version, suite, SNI, ALPN, times) and whether its records were decrypted."""

    __repr__ = dataclass_repr  # (@dataclass's own text, not compiled at import: dissectors/dataclass_repr.py)

    version: str | None = None
    cipher_suite: str | None = None
    cipher_suite_id: int | None = None
    sni: str | None = None
    alpn: str | None = None  # selected
    alpn_offered: list[str] = field(default_factory=list)
    npn: str | None = None
    resumed: bool = False
    hello_retry: bool = False
    # the server certificate's subject (RFC 4514) is a property: the DER is kept and parsed on
    # first use, because loading cryptography.x509 costs ~18 ms of every run's start-up and
    # most commands never show the subject
    _subject: str | None = None
    _cert_der: bytes | None = None
    client_random: bytes | None = None
    decrypted: bool = False
    reason: str | None = None  # why not decrypted
    client_hello_time: float | None = None
    server_hello_time: float | None = None
    client_finished_time: float | None = None
    server_finished_time: float | None = None
    records: int = 0
    record_overhead: list[int] = field(default_factory=lambda: [0, 0])

    # (@dataclass(init=False): written out, not compiled at every start; tests/test_dataclass_init.py)
    def __init__(self, version: str | None = None, cipher_suite: str | None = None, cipher_suite_id: int | None = None, sni: str | None = None,
                 alpn: str | None = None, alpn_offered: list[str] = FACTORY, npn: str | None = None, resumed: bool = False, hello_retry: bool = False,
                 _subject: str | None = None, _cert_der: bytes | None = None, client_random: bytes | None = None, decrypted: bool = False,
                 reason: str | None = None, client_hello_time: float | None = None, server_hello_time: float | None = None,
                 client_finished_time: float | None = None, server_finished_time: float | None = None, records: int = 0,
                 record_overhead: list[int] = FACTORY) -> None:
        self.version = version
        self.cipher_suite = cipher_suite
        self.cipher_suite_id = cipher_suite_id
        self.sni = sni
        self.alpn = alpn
        self.alpn_offered = [] if alpn_offered is FACTORY else alpn_offered
        self.npn = npn
        self.resumed = resumed
        self.hello_retry = hello_retry
        self._subject = _subject
        self._cert_der = _cert_der
        self.client_random = client_random
        self.decrypted = decrypted
        self.reason = reason
        self.client_hello_time = client_hello_time
        self.server_hello_time = server_hello_time
        self.client_finished_time = client_finished_time
        self.server_finished_time = server_finished_time
        self.records = records
        self.record_overhead = [0, 0] if record_overhead is FACTORY else record_overhead

    @property
    def certificate_subject(self) -> str | None:
        if self._subject is None and self._cert_der is not None:
            from wirefall.dissectors.tls import certificate_subject

            der, self._cert_der = self._cert_der, None
            self._subject = certificate_subject(der)
        return self._subject

    @certificate_subject.setter
    def certificate_subject(self, value: str | None) -> None:
        self._subject = value
        self._cert_der = None

    def set_certificate(self, der: bytes) -> None:
        """The server's first certificate (DER); its subject is parsed when asked for."""
        self._subject = None
        self._cert_der = bytes(der)

    @property
    def has_certificate(self) -> bool:
        return self._subject is not None or self._cert_der is not None

    def __getstate__(self):  # (the analysis cache resolves the subject before: analyzer.cache; a
        # parallel worker's part goes with the DER, which only the parent may ever parse)
        return tuple(getattr(self, n) for n in self.__slots__)

    def __setstate__(self, state) -> None:
        for n, v in zip(self.__slots__, state):
            object.__setattr__(self, n, v)


@dataclass(init=False, slots=True, eq=False, repr=False)
class QuicInfo:
    """What a QUIC connection's handshake showed (version, SNI, ALPN, connection ids) and whether it was decrypted."""

    __repr__ = dataclass_repr  # (@dataclass's own text, not compiled at import: dissectors/dataclass_repr.py)

    version: str | None = None
    sni: str | None = None
    alpn: str | None = None
    scid: str | None = None
    dcid: str | None = None
    decrypted: bool = False
    reason: str | None = None
    alpn_inferred: bool = False  # HTTP/3 recognised by its streams, the ALPN not seen (capture joined mid-way)
    server_scid: str | None = None  # the server's own connection ID, from its first long header (not a Retry's)
    retry: int = 0  # Retry packets the server sent (stateless address validation)

    # (@dataclass(init=False): written out, not compiled at every start; tests/test_dataclass_init.py)
    def __init__(self, version: str | None = None, sni: str | None = None, alpn: str | None = None, scid: str | None = None, dcid: str | None = None,
                 decrypted: bool = False, reason: str | None = None, alpn_inferred: bool = False,
                 server_scid: str | None = None, retry: int = 0) -> None:
        self.version = version
        self.sni = sni
        self.alpn = alpn
        self.scid = scid
        self.dcid = dcid
        self.decrypted = decrypted
        self.reason = reason
        self.alpn_inferred = alpn_inferred
        self.server_scid = server_scid
        self.retry = retry


@dataclass(init=False, slots=True, eq=False, repr=False)
class TcpInfo:
    """What the flow layer learnt of a TCP connection's handshake, per direction (0 = client
    to server): the sequence number of stream offset 0 (``isn``: the SYN's plus one, or the
    first segment's when no SYN was seen first), whether a SYN was seen, and the window-scale
    shift its SYN offered (None: no SYN, or a SYN without the option).  The detail view and
    the display filter read relative sequence numbers and scaled windows from it."""

    __repr__ = dataclass_repr  # (@dataclass's own text, not compiled at import: dissectors/dataclass_repr.py)

    # (pairs, replaced when set: each is set at most once per direction, and the shared
    # defaults cost a connection nothing)
    isn: tuple[int | None, int | None] = (None, None)
    syn: tuple[bool, bool] = (False, False)
    wscale: tuple[int | None, int | None] = (None, None)

    # (@dataclass(init=False): written out, not compiled at every start; tests/test_dataclass_init.py)
    def __init__(self, isn: tuple[int | None, int | None] = (None, None), syn: tuple[bool, bool] = (False, False),
                 wscale: tuple[int | None, int | None] = (None, None)) -> None:
        self.isn = isn
        self.syn = syn
        self.wscale = wscale

    def first_segment(self, direction: int, seq: int, syn: bool) -> None:
        """The first segment of ``direction``: its ISN (the stream's offset 0), and whether it is a SYN."""
        isn = (seq + 1) & 0xFFFFFFFF if syn else seq
        self.isn = (isn, self.isn[1]) if direction == 0 else (self.isn[0], isn)
        if syn:
            self.syn = (True, self.syn[1]) if direction == 0 else (self.syn[0], True)

    def set_wscale(self, direction: int, shift: int | None) -> None:
        self.wscale = (shift, self.wscale[1]) if direction == 0 else (self.wscale[0], shift)


@dataclass(init=False, slots=True, eq=False, repr=False)
class DirStats:
    """Packet, byte, retransmission and gap counts of one direction of a connection."""

    __repr__ = dataclass_repr  # (@dataclass's own text, not compiled at import: dissectors/dataclass_repr.py)

    packets: int = 0
    bytes: int = 0  # on the wire (original frame length)
    payload: int = 0  # TCP/UDP payload
    retransmissions: int = 0
    retransmitted_bytes: int = 0
    gaps: int = 0
    gap_bytes: int = 0
    retransmission_packets: list[int] = field(default_factory=list)  # first MAX_LISTED of them

    # (@dataclass(init=False): written out, not compiled at every start; tests/test_dataclass_init.py)
    def __init__(self, packets: int = 0, bytes: int = 0, payload: int = 0, retransmissions: int = 0, retransmitted_bytes: int = 0, gaps: int = 0,
                 gap_bytes: int = 0, retransmission_packets: list[int] = FACTORY) -> None:
        self.packets = packets
        self.bytes = bytes
        self.payload = payload
        self.retransmissions = retransmissions
        self.retransmitted_bytes = retransmitted_bytes
        self.gaps = gaps
        self.gap_bytes = gap_bytes
        self.retransmission_packets = [] if retransmission_packets is FACTORY else retransmission_packets

    MAX_LISTED = 2000


@dataclass(init=False, slots=True, eq=False, repr=False)
class Connection:
    """One transport connection (TCP or UDP flow): endpoints, times, protocol, handshake facts, per-direction stats and notes."""

    __repr__ = dataclass_repr  # (@dataclass's own text, not compiled at import: dissectors/dataclass_repr.py)

    id: int
    transport: str  # tcp | udp
    client: tuple[str, int]
    server: tuple[str, int]
    start: float = 0.0
    end: float = 0.0
    first_packet: int = 0
    last_packet: int = 0
    protocol: str | None = None  # http/1.1, h2, h2c, spdy/3.1, h3, tls, quic, gquic, dns …
    tls: TlsInfo | None = None
    quic: QuicInfo | None = None
    connect_start: float | None = None  # SYN (or first QUIC Initial)
    connect_end: float | None = None  # ACK of SYN/ACK (or handshake done)
    tls_start: float | None = None
    tls_end: float | None = None
    rtt: float | None = None  # handshake RTT SYN -> SYN/ACK -> ACK
    stats: list[DirStats] = field(default_factory=lambda: [DirStats(), DirStats()])
    # decoding problems, with packet numbers: each a ``Note`` (typed; match ``note_kind``/``notes_of``)
    # or a decoder's plain message (a TEXT note); the JSON ``notes`` are their text
    notes: list[str] = field(default_factory=list)
    closed: str | None = None  # fin | rst | None
    tcp: TcpInfo | None = None  # TCP connections: handshake facts (analyzer.flows)

    # (@dataclass(init=False): written out, not compiled at every start; tests/test_dataclass_init.py)
    def __init__(self, id: int, transport: str, client: tuple[str, int], server: tuple[str, int], start: float = 0.0, end: float = 0.0,
                 first_packet: int = 0, last_packet: int = 0, protocol: str | None = None, tls: TlsInfo | None = None, quic: QuicInfo | None = None,
                 connect_start: float | None = None, connect_end: float | None = None, tls_start: float | None = None, tls_end: float | None = None,
                 rtt: float | None = None, stats: list[DirStats] = FACTORY, notes: list[str] = FACTORY, closed: str | None = None,
                 tcp: TcpInfo | None = None) -> None:
        self.id = id
        self.transport = transport
        self.client = client
        self.server = server
        self.start = start
        self.end = end
        self.first_packet = first_packet
        self.last_packet = last_packet
        self.protocol = protocol
        self.tls = tls
        self.quic = quic
        self.connect_start = connect_start
        self.connect_end = connect_end
        self.tls_start = tls_start
        self.tls_end = tls_end
        self.rtt = rtt
        self.stats = [DirStats(), DirStats()] if stats is FACTORY else stats
        self.notes = [] if notes is FACTORY else notes
        self.closed = closed
        self.tcp = tcp

    @property
    def label(self) -> str:
        return f"{endpoint_text(self.client)} → {endpoint_text(self.server)}"


def endpoint_text(a: tuple[str, int]) -> str:
    """``host:port``, an IPv6 address in brackets (``[2001:db8::1]:443``), ``?`` unknown."""
    return "?" if not a[0] else f"[{a[0]}]:{a[1]}" if ":" in a[0] else f"{a[0]}:{a[1]}"


class FrameFields(Mapping):
    """``Frame.fields`` of one fixed shape: read as a dict is (``[k]``, ``get``, ``in``,
    ``items``…; ``dict(fields)`` for a copy), never written.  The names are the class's
    (``NAMES``, in the order a dict of them would list them), the values the object's slots:
    48-56 bytes, where a dict of two or three keys takes 184 (its hash table has eight).
    Decoders make one only where the frame has exactly those fields (anything else keeps a
    dict); most frames of a request-heavy HTTP/2 capture do (``HeaderBytes``, ``Windows``:
    180 k of the 184 k frames of 60 k requests, 24 MB less).  Pickled as its class and values
    (``analyzer.parallel``'s workers send ``(class, *values)`` tuples)."""

    __slots__ = ()
    NAMES: ClassVar[tuple[str, ...]] = ()
    _values: ClassVar[Any]  # attrgetter(*NAMES): the values as a tuple

    def __init_subclass__(cls, **kw) -> None:
        super().__init_subclass__(**kw)
        assert cls.__slots__ == cls.NAMES and len(cls.NAMES) >= 2, "a shape's slots are its names (two or more)"
        cls._values = attrgetter(*cls.NAMES)

    def __getitem__(self, k: str) -> Any:
        if k in self.NAMES:  # (a tuple of two or three names: membership is a few compares)
            return getattr(self, k)
        raise KeyError(k)

    def get(self, k: str, default: Any = None) -> Any:
        return getattr(self, k) if k in self.NAMES else default

    def __contains__(self, k: object) -> bool:
        return k in self.NAMES

    def __iter__(self) -> Iterator[str]:
        return iter(self.NAMES)

    def __len__(self) -> int:
        return len(self.NAMES)

    def values(self) -> tuple:  # type: ignore[override]  # (a tuple, not a view: made at C speed)
        return self._values(self)

    def items(self) -> tuple[tuple[str, Any], ...]:  # type: ignore[override]
        return tuple(zip(self.NAMES, self._values(self)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self.items()) == dict(other.items())

    __hash__ = None  # type: ignore[assignment]  # (as a dict's)

    def __repr__(self) -> str:
        return repr(dict(self.items()))

    def __reduce__(self):
        return type(self), self._values(self)


class HeaderBytes(FrameFields):
    """An HTTP/2 frame that ends a header block and has no other field: the block's bytes on
    the wire, its decoded name + value bytes and their HPACK size (+32 per field)."""

    __slots__ = NAMES = ("header_bytes_wire", "header_bytes_decoded", "header_bytes_hpack")

    def __init__(self, header_bytes_wire: int, header_bytes_decoded: int, header_bytes_hpack: int) -> None:
        self.header_bytes_wire = header_bytes_wire
        self.header_bytes_decoded = header_bytes_decoded
        self.header_bytes_hpack = header_bytes_hpack


class Windows(FrameFields):
    """An HTTP/2 DATA frame's sender windows after it (connection, stream), its only fields."""

    __slots__ = NAMES = ("window_connection", "window_stream")

    def __init__(self, window_connection: int, window_stream: int) -> None:
        self.window_connection = window_connection
        self.window_stream = window_stream


@dataclass(init=False, slots=True, eq=False, repr=False)
class Frame:
    """One protocol frame (HTTP/2, SPDY, HTTP/3, QUIC, TLS record, HTTP/1 message ...) where it completes on the wire."""

    __repr__ = dataclass_repr  # (@dataclass's own text, not compiled at import: dissectors/dataclass_repr.py)

    packet: int  # where the frame completes (where tshark shows it)
    first_packet: int
    time: float
    connection: int
    direction: int
    protocol: str
    stream_id: int | None
    type: str
    flags: int = 0
    length: int = 0  # payload length as the frame header states it
    headers: list[tuple[str, str]] | None = None
    fields: dict[str, Any] | FrameFields | None = None  # (FrameFields: a frequent shape, read-only)
    offset: int = -1  # offset of the frame in its directional (plaintext) stream
    error: str | None = None

    # (@dataclass(init=False): written out, not compiled at every start; tests/test_dataclass_init.py)
    def __init__(self, packet: int, first_packet: int, time: float, connection: int, direction: int, protocol: str, stream_id: int | None, type: str,
                 flags: int = 0, length: int = 0, headers: list[tuple[str, str]] | None = None, fields: dict[str, Any] | FrameFields | None = None,
                 offset: int = -1, error: str | None = None) -> None:
        self.packet = packet
        self.first_packet = first_packet
        self.time = time
        self.connection = connection
        self.direction = direction
        self.protocol = protocol
        self.stream_id = stream_id
        self.type = type
        self.flags = flags
        self.length = length
        self.headers = headers
        self.fields = fields
        self.offset = offset
        self.error = error


@dataclass(init=False, slots=True, eq=False, repr=False)
class Exchange:
    """One request and its response: the heads, sizes, times and packets of each side."""

    __repr__ = dataclass_repr  # (@dataclass's own text, not compiled at import: dissectors/dataclass_repr.py)

    id: int
    connection: int
    protocol: str
    stream_id: int | None = None
    method: str | None = None
    url: str | None = None
    scheme: str | None = None
    authority: str | None = None
    path: str | None = None
    status: int | None = None
    pushed: bool = False
    push_parent: int | None = None  # stream id of the stream that pushed it
    priority: dict | None = None
    request_headers: list[tuple[str, str]] = field(default_factory=list)
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    request_header_bytes_wire: int = 0
    request_header_bytes_decoded: int = 0
    response_header_bytes_wire: int = 0
    response_header_bytes_decoded: int = 0
    # HTTP/3: bytes of the sender's QPACK encoder stream (dynamic-table insertions) this
    # request's / response's header blocks depend on and no earlier block was charged with
    request_qpack_encoder_bytes: int = 0
    response_qpack_encoder_bytes: int = 0
    request_body_bytes: int = 0
    response_body_bytes: int = 0  # on the wire (after transfer framing, before content decoding)
    response_body_decoded_bytes: int | None = None
    content_type: str | None = None
    content_encoding: str | None = None
    request_start: float | None = None
    request_end: float | None = None
    response_start: float | None = None
    response_end: float | None = None
    request_start_packet: int | None = None
    request_end_packet: int | None = None
    response_start_packet: int | None = None
    response_end_packet: int | None = None
    # when the response headers (the block ``response_headers`` holds) became readable: the
    # packet that completed their last byte's TLS record (or frame); response_start is the
    # packet that carried their first byte on the wire
    response_headers_end: float | None = None
    response_headers_end_packet: int | None = None
    reset: str | None = None  # error code name of RST_STREAM / RESET_STREAM
    error: str | None = None
    frames: int = 0
    # a browser log's own record of this request (analyzer.browserlog: a HAR, NetLog or qlog
    # opened alone, or laid over the capture): its phase times, priority name, initiator and
    # the browser-minus-wire offsets; None when no log was given (docs/JSON.md "browser")
    browser: dict | None = None
    # where each filled field came from ("wire", "browser", "inferred"); None: all from the wire
    sources: dict | None = None

    # (@dataclass(init=False): written out, not compiled at every start; tests/test_dataclass_init.py)
    def __init__(self, id: int, connection: int, protocol: str, stream_id: int | None = None, method: str | None = None, url: str | None = None,
                 scheme: str | None = None, authority: str | None = None, path: str | None = None, status: int | None = None, pushed: bool = False,
                 push_parent: int | None = None, priority: dict | None = None, request_headers: list[tuple[str, str]] = FACTORY,
                 response_headers: list[tuple[str, str]] = FACTORY, request_header_bytes_wire: int = 0, request_header_bytes_decoded: int = 0,
                 response_header_bytes_wire: int = 0, response_header_bytes_decoded: int = 0, request_qpack_encoder_bytes: int = 0,
                 response_qpack_encoder_bytes: int = 0, request_body_bytes: int = 0, response_body_bytes: int = 0,
                 response_body_decoded_bytes: int | None = None, content_type: str | None = None, content_encoding: str | None = None,
                 request_start: float | None = None, request_end: float | None = None, response_start: float | None = None,
                 response_end: float | None = None, request_start_packet: int | None = None, request_end_packet: int | None = None,
                 response_start_packet: int | None = None, response_end_packet: int | None = None, response_headers_end: float | None = None,
                 response_headers_end_packet: int | None = None, reset: str | None = None, error: str | None = None, frames: int = 0,
                 browser: dict | None = None, sources: dict | None = None) -> None:
        self.id = id
        self.connection = connection
        self.protocol = protocol
        self.stream_id = stream_id
        self.method = method
        self.url = url
        self.scheme = scheme
        self.authority = authority
        self.path = path
        self.status = status
        self.pushed = pushed
        self.push_parent = push_parent
        self.priority = priority
        self.request_headers = [] if request_headers is FACTORY else request_headers
        self.response_headers = [] if response_headers is FACTORY else response_headers
        self.request_header_bytes_wire = request_header_bytes_wire
        self.request_header_bytes_decoded = request_header_bytes_decoded
        self.response_header_bytes_wire = response_header_bytes_wire
        self.response_header_bytes_decoded = response_header_bytes_decoded
        self.request_qpack_encoder_bytes = request_qpack_encoder_bytes
        self.response_qpack_encoder_bytes = response_qpack_encoder_bytes
        self.request_body_bytes = request_body_bytes
        self.response_body_bytes = response_body_bytes
        self.response_body_decoded_bytes = response_body_decoded_bytes
        self.content_type = content_type
        self.content_encoding = content_encoding
        self.request_start = request_start
        self.request_end = request_end
        self.response_start = response_start
        self.response_end = response_end
        self.request_start_packet = request_start_packet
        self.request_end_packet = request_end_packet
        self.response_start_packet = response_start_packet
        self.response_end_packet = response_end_packet
        self.response_headers_end = response_headers_end
        self.response_headers_end_packet = response_headers_end_packet
        self.reset = reset
        self.error = error
        self.frames = frames
        self.browser = browser
        self.sources = sources

    def header(self, name: str, response: bool = True) -> str | None:
        name = name.lower()
        for k, v in self.response_headers if response else self.request_headers:
            if k.lower() == name:
                return v
        return None


class PacketIndex:
    """Compact per-packet arrays (no object per packet)."""

    __slots__ = ("ts", "offset", "caplen", "origlen", "linktype", "conn", "proto", "interface")

    def __init__(self):
        self.ts = array("d")
        self.offset = array("q")
        self.caplen = array("I")
        self.origlen = array("I")
        self.linktype = array("i")
        self.conn = array("i")  # connection id or -1
        self.proto = array("B")  # index into PROTO_NAMES, refined by dissectors
        self.interface = array("I")  # pcapng interface ids are 32 bits (a capture may declare more than 65 535)

    def __len__(self) -> int:
        return len(self.ts)

    def time(self, packet: int) -> float:
        return self.ts[packet - 1]


# Analysis fields an analysis from the cache loads on first use (see Analysis.__getattr__)
LAZY_FIELDS = ("frames", "exchanges", "maps", "tls_records", "quic_packets")
_LAZY_LOCK = allocate_lock()

# Names for PacketIndex.proto: the highest layer seen in the packet
PROTO_NAMES = ["?", "ETH", "IPv4", "IPv6", "TCP", "UDP", "TLS", "HTTP", "HTTP2", "SPDY", "QUIC", "HTTP3", "gQUIC", "DNS", "ICMP", "ARP"]
PROTO_CODE = {n: i for i, n in enumerate(PROTO_NAMES)}


# seconds before a browser log's first request or connection within which its page's start is
# taken as the start of its times (Analysis.start_time): a page said to start at year 1 is not
LOG_PAGE_START_SLACK = 60.0


def not_sent_of(browser: Any) -> str | None:
    """``browser.not_sent`` of an exchange or a waterfall row (``Exchange.browser``: a browser
    log's request that never reached the network — "disk cache", "failed", …), else None."""
    v = browser.get("not_sent") if isinstance(browser, dict) else None
    return v if isinstance(v, str) and v else None


def overlaid_not_sent(browser: Any) -> bool:
    """Whether a browser log laid over the capture added rows for its requests that never
    reached the network (its summary's ``not_sent_rows``: analyzer/browserlog/matching.py)."""
    logs = browser.get("logs") if isinstance(browser, dict) else None
    return any(isinstance(s, dict) and s.get("not_sent_rows") for s in logs or ())


def log_alone(an: Any) -> bool:
    """A browser log (HAR, NetLog, qlog) opened alone: no packet, so what only the wire gives
    (packets, bytes, frames) is unknown — "–", not 0."""
    return not len(an.index) and getattr(an, "source", "capture") != "capture"


def no_network_connections(an: Analysis) -> set[int]:
    """The ids of the connections that carry only requests that never reached the network (a
    browser log opened alone puts them on one of their own, endpoints unknown:
    ``browserlog.build.to_analysis``): rows of the page, but no connection, protocol or
    traffic of it."""
    if getattr(an, "source", "capture") == "capture" and not overlaid_not_sent(an.browser):
        # (only a browser log opened alone, or laid over the capture, has such rows: a capture's
        # exchanges are not walked otherwise)
        return set()
    out: dict[int, bool] = {}
    for e in an.exchanges:
        out[e.connection] = out.get(e.connection, True) and not_sent_of(e.browser) is not None
    return {cid for cid, none in out.items() if none}


def connections_text(an: Analysis) -> str:
    """"42 connections, 17 requests (2 never reached the network)": the capture's connections (a
    browser log's rows that never reached the network are on one of their own, which is no
    connection of the capture: ``no_network_connections``) and requests, as every status line
    says them (the web's said 43 where the summary said 42; review 31)."""
    from .safetext import plural

    no_net = no_network_connections(an)
    unsent = sum(1 for e in an.exchanges if e.connection in no_net) if no_net else 0
    return (f"{plural(len(an.connections) - len(no_net), 'connection')}, {plural(an.count('exchanges'), 'request')}"
            + (f" ({unsent} never reached the network)" if unsent else ""))


def log_start(pages: Any, exchanges: Iterable[Exchange], ts: list[float]) -> tuple[float | None, list[float]]:
    """A browser log's times where its page starts: ``ts`` (the caller's request and connection
    times) with the browser's own request starts and DNS lookups of ``exchanges``, then the
    ``pages``' starts (a HAR page's ``startedDateTime``) taken only within
    ``LOG_PAGE_START_SLACK`` before the earliest of those (any page's when there is none).
    Returns (that earliest time or None, every time taken)."""
    for e in exchanges:
        times = e.browser.get("times") if isinstance(e.browser, dict) else None
        if isinstance(times, dict):
            ts += [t for t in (times.get("start"), times.get("dns_start")) if isinstance(t, float) and t]
    first = min(ts, default=None)
    ts += [p["start"] for p in pages or () if isinstance(p, dict) and isinstance(p.get("start"), float)
           and (first is None or p["start"] >= first - LOG_PAGE_START_SLACK)]
    return first, ts


@dataclass(init=False, eq=False, repr=False)
class Analysis:
    """The model of one capture (or browser log): its packet index, connections, exchanges and frames."""

    path: str
    index: PacketIndex
    connections: list[Connection] = field(default_factory=list)
    exchanges: list[Exchange] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    undecoded: dict[str, int] = field(default_factory=dict)  # reason -> packets
    capture_format: str = ""
    compression: str = ""
    keylog: Any = None
    maps: dict = field(default_factory=dict)  # (conn id, direction) -> OffsetMap of TCP payload
    quic_stats: dict = field(default_factory=dict)  # conn id -> QUIC statistics (analyzer/sessions/quic.py)
    tls_records: dict = field(default_factory=dict)  # (conn, dir) -> decrypted records as numbers (analyzer.detail re-decrypts)
    quic_packets: dict = field(default_factory=dict)  # (conn, dir) -> decrypted QUIC packets as numbers (analyzer.detail re-decrypts)
    interfaces: list = field(default_factory=list)  # pcap/pcapng interfaces (analyzer.capture.Interface)
    budgets_hit: dict = field(default_factory=dict)  # budget name -> conn ids whose budget ran out (-1: the capture's)
    # what the analysis was made from: "capture", or a browser log opened alone ("har",
    # "netlog", "qlog": no packets; analyzer.browserlog)
    source: str = "capture"
    # the browser logs behind or over this analysis (analyzer.browserlog): {"logs": [one
    # summary per log: kind, path, matched and unmatched requests, offsets], "pages": [page
    # timings: onContentLoad, onLoad]}; None when there is none
    browser: dict | None = None

    # (@dataclass(init=False): written out, not compiled at every start; tests/test_dataclass_init.py)
    def __init__(self, path: str, index: PacketIndex, connections: list[Connection] = FACTORY, exchanges: list[Exchange] = FACTORY,
                 frames: list[Frame] = FACTORY, warnings: list[str] = FACTORY, undecoded: dict[str, int] = FACTORY, capture_format: str = "",
                 compression: str = "", keylog: Any = None, maps: dict = FACTORY, quic_stats: dict = FACTORY, tls_records: dict = FACTORY,
                 quic_packets: dict = FACTORY, interfaces: list = FACTORY, budgets_hit: dict = FACTORY, source: str = "capture",
                 browser: dict | None = None) -> None:
        self.path = path
        self.index = index
        self.connections = [] if connections is FACTORY else connections
        self.exchanges = [] if exchanges is FACTORY else exchanges
        self.frames = [] if frames is FACTORY else frames
        self.warnings = [] if warnings is FACTORY else warnings
        self.undecoded = {} if undecoded is FACTORY else undecoded
        self.capture_format = capture_format
        self.compression = compression
        self.keylog = keylog
        self.maps = {} if maps is FACTORY else maps
        self.quic_stats = {} if quic_stats is FACTORY else quic_stats
        self.tls_records = {} if tls_records is FACTORY else tls_records
        self.quic_packets = {} if quic_packets is FACTORY else quic_packets
        self.interfaces = [] if interfaces is FACTORY else interfaces
        self.budgets_hit = {} if budgets_hit is FACTORY else budgets_hit
        self.source = source
        self.browser = browser

    @property
    def packets(self) -> int:
        return len(self.index)

    @property
    def start_time(self) -> float:
        """Where relative times start: the first packet; for a browser log (no packets), its
        page's start (a HAR page's ``startedDateTime``) or, before it, its first request's
        start (the DNS lookup, queueing and connect the log gives before the connection),
        else its first connection's start (0.0 when it has none).  A page's start is taken only
        within ``LOG_PAGE_START_SLACK`` before the log's first request or connection: a page said
        to start at year 1 (or hours before any request) is no start of this load, and would
        make every time from it ages long."""
        if len(self.index):
            return self.index.ts[0]
        # (a connection that carried none of the log's requests and whose set-up it did not see — a
        # session that began before the log — is background: its first event is no start of the page)
        used = {e.connection for e in self.exchanges}
        ts = [t for c in self.connections for t in (c.connect_start, c.start if c.id in used or c.connect_start else None) if t]
        b = self.browser
        if isinstance(b, dict):
            _, ts = log_start(b.get("pages"), self.exchanges, ts)
        return min(ts, default=0.0)

    def __getattr__(self, name: str):
        # Reached only for attributes not set.  An analysis reopened from the cache
        # (analyzer.cache) comes without its bulky parts (LAZY_FIELDS); the first use of one
        # decompresses and unpickles its part of the body (frames, requests, maps, …), so a
        # summary never pays for 300 k frames, nor the packet list for 60 k requests.
        if name in LAZY_FIELDS and "_wf_lazy" in self.__dict__:
            with _LAZY_LOCK:  # views read from several threads (the web app's callbacks)
                load = self.__dict__.get("_wf_lazy")
                if load is not None and name not in self.__dict__:
                    self.__dict__.update(load(name))
                    if all(f in self.__dict__ for f in LAZY_FIELDS):
                        del self.__dict__["_wf_lazy"]
            if name in self.__dict__:
                return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _stored(self, field: str, key: str, kind: type):
        """What analyzer.cache stored under ``key`` in the summary part (``_wf_counts``) while
        ``field`` is still packed in this reopened analysis; None otherwise."""
        d = self.__dict__
        if field not in d and "_wf_lazy" in d:
            v = (d.get("_wf_counts") or {}).get(key)
            if isinstance(v, kind):
                return v
        return None

    def count(self, name: str) -> int:
        """``len(getattr(self, name))`` for a LAZY_FIELD, without unpacking it if it is still
        packed in a reopened analysis (analyzer.cache stores the counts in the summary part):
        a status line's "60,000 requests" need not unpickle them."""
        n = self._stored(name, name, int)
        return len(getattr(self, name)) if n is None else n

    def frame_protocols(self) -> frozenset[str] | None:
        """The protocols of the frames, where known without reading them: stored in the summary
        part of a reopened analysis whose frames are still packed, or a reopened frame sequence's
        own (analyzer.cache.FrameChunks); None otherwise (a view that looks for one protocol's
        frames then reads them)."""
        p = self._stored("frames", "protocols", frozenset)
        if p is None:
            p = getattr(self.frames, "protocols", None)
        return p if isinstance(p, frozenset) else None

    def requests_per_connection(self) -> dict[int, int]:
        """Connection id -> its requests (exchanges), without unpacking them if they are still
        packed in a reopened analysis (the connections table of the TUI's first screen)."""
        n = self._stored("exchanges", "per_connection", dict)
        if n is not None:
            return dict(n)
        out: dict[int, int] = {}
        for e in self.exchanges:
            out[e.connection] = out.get(e.connection, 0) + 1
        return out

    def time(self, packet: int) -> float:
        return self.index.ts[packet - 1]
