"""What the capture does not show: one completeness summary per capture and per connection,
computed once from the model, that every view states (``wirefall summary``/``stats``, the
waterfall images' subtitle, the HAR's comments, and — through ``headline`` — the TUI and web
app status lines).  A waterfall of an incomplete capture must never read as a complete one.

``compute(analysis) -> Completeness`` (memoised per analysis), ``headline(analysis)`` one
line, ``to_dict(c)`` the ``completeness`` object of ``--json`` (docs/JSON.md),
``render_text(c)`` the lines ``summary``/``stats`` print, ``entry_comment(c, exchange)``
what the HAR says of one request.

What counts as missing (each an ``Issue`` with its kind, connection (None: the capture),
count and the next step for the user):

- ``joined_midway``: a TCP connection whose SYN the capture did not show, or a QUIC
  connection without a client Initial: it was opened before the capture started; count =
  its requests (their header compression state, the TLS handshake and earlier requests
  are not in the capture).
- ``unknown_fields``: requests with a field the capture cannot give: no URL (neither URL nor
  path: a response without its request), no host (a path whose host neither the request,
  the connection's TLS SNI nor a DNS answer for its server names: ``analyzer.authority``,
  URL ``scheme://<unknown>/path``), no method (a response without its request), no
  status (a request without its response, not reset), or a header name or value
  ``<unknown>`` (HPACK/QPACK entries inserted before the capture), or a body size that is
  only a lower bound (``exchange.sources`` ``"lower_bound"``: a stream the capture joined
  mid-stream, its earlier bytes not in it); count = such requests.
- ``bytes_lost``: bytes the flow layer declared missing (its ``NoteKind.GAP`` notes, each with
  its direction, stream offset and length); count = bytes.
- ``not_decrypted``: TLS or QUIC connections with protected data not decrypted; the reason is
  ``conn.tls.reason`` / ``conn.quic.reason``; count = the connection's packets.
- ``budget``: a budget of ``analysis.budgets_hit`` ran out (CAPTURE_ID, -1, there = the capture),
  or a per-block limit (``PER_BLOCK_LIMITS``: ``http1_header_bytes``, ``http1_header_count``,
  ``http1_chunk_line``) cut a head or chunk of that connection undecoded (``Context.limit_hit``):
  then the issue says "limit NAME exceeded", which block and what it cost, and the next step
  ``--limit NAME=N`` with N above that block's size (a real option of every analysis command).

The next step of ``unknown_fields`` follows the cause (``_unknown_cause``): a connection joined
mid-way, its HPACK/QPACK entries from before the capture → start the capture before the page
load (``NEXT_MIDWAY``); a per-block limit that stopped the connection's decoding → raise it; a
response header block the capture ends blocked on QPACK encoder instructions, on a connection
whose start is in the capture → those packets were lost (``NEXT_QPACK_LOST``); a decoded body
size stopped by ``body_decoded_bytes`` → raise it; else the capture's own cut (``NEXT_OTHER_HALF``).
- ``cut_short``: heads or frames the capture ends inside (``NoteKind.ENDS_IN_FRAME`` notes:
  their bytes are in the capture but not decoded); count = such frames.
- ``capture_damaged``: the capture's own warnings (truncated file, corrupt block, snap length,
  fragments missing), except the budget warnings already counted and the key log's own
  (``KeyLog.said``: never "capture damaged" for a key log that could not be read).
- ``keylog_unreadable``, ``keylog_no_secrets``, ``keylog_damaged``: a key log given that could
  not be read at all, that was read and gave no secret (empty, not a key log), or that gave
  secrets but was read only in part (a broken gzip, lines not understood: cut mid-line?); count
  1, ``file`` the key log as named; from ``KeyLog.problems`` and ``KeyLog.read_from`` (typed,
  not the warnings' words).  Only where a connection was not decrypted (its key might have been
  in what was not read); else the key log's problem costs this capture nothing (its warning
  stays among the analysis's).  A connection not decrypted for want of a secret then says
  which of the three it is: "no key log given", "the key log given could not be read" / "holds
  no secret" (``_keylog_words``), or the layer's "no key for this client random" with the key
  logs' problems in its next step.
- ``no_packets``: the analysis comes from a browser log opened alone (``Analysis.source``
  har, netlog or qlog: analyzer.browserlog), which holds no packet; count = its requests.
  Handshakes and decryption are then not the log's to show: no ``joined_midway`` or
  ``not_decrypted`` issue is made from its connections.

A TLS/QUIC connection with nothing protected to decrypt ("no encrypted records", "no 1-RTT
packets") is not an issue.

- ``record_not_decrypted``: a TLS connection whose records decrypted up to one that did not (its
  integrity check failed: damaged bytes, or a wrong key), after which sessions/tls.py decrypts
  nothing more in that direction; count = the requests on it with unknown fields (what came after
  it, counted ``requests_not_decrypted``).  Their ``unknown_fields`` next step is this one's
  (``NEXT_RECORD_FAILED``), never the capture's missing other half, and the request detail says
  "no response decrypted", not "no response in the capture" (``undecrypted_error``).

Whose is what is missing: an issue of a connection that is background traffic's — every request
on it background (``waterfall.page_of``) — is marked ``background`` and said apart, after the
page's: "Incomplete: <the page's>; background traffic (not the page's): <the rest>".  A connection
joined mid-way that carried no request in the capture (known: decrypted, nothing lost, no
request-stream byte: ``_background``) is nobody's that the capture can tell — what it carried
before is not in it (amazon1 cut at packet 549: the awswaf connection had carried the page's
``inputs`` and ``mp_verify`` before the cut, says the NetLog).  Unless a fact outside it ties it
to the page (``_page_ties``: its server carried the page's requests on another connection, or its
SNI is a page request's host: ``Issue.whose`` "page", ``Issue.tie``), it is ``whose`` "unknown"
(``Completeness.owner_unknown_connections``), neither the page's nor background, and said so: "Page
complete: …; 1 QUIC connection joined mid-way, no request seen: whose it is is unknown" (amazon1
whole: Chrome's idle connection to Google).  ``complete`` stays false (something is missing);
``page_complete`` says whether the page's requests seen are whole (issues background or of unknown
owner only).
A browser log laid over says first (``_log_owners``: the log connection it matched to it, one to
one, ``browser.logs[].matched_connections``): a request of that connection in the log the page's →
``whose`` "page", the tie "Chrome's NetLog matched it: QUIC session 220, isolation key …"; every one
set apart by the log (``LogRequest.background``) → background, with the log's reason; no request of
it in the log → unknown, the match said in its detail (``Issue.log``: the log's entry).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from wirefall.dissectors.dataclass_repr import FACTORY, dataclass_eq, dataclass_repr
from wirefall.dissectors.registry import over_quic

from .model import Analysis, Connection, DecryptReason, Exchange, NoteKind, ReasonKind, no_network_connections, not_sent_of, notes_of
from .keylog import BUDGET_WARNING, KeyLog
from .sessions import CAPTURE_ID, CAPTURE_WIDE, DEFAULT_LIMITS
from .sessions import SELF_REPORTED as READER_BUDGETS
from .safetext import plural

UNKNOWN = "<unknown>"
_NOTHING_TO_DECRYPT = ("no encrypted records", "no 1-RTT packets")
NO_PACKETS = {"har": "a HAR", "netlog": "a Chrome NetLog", "qlog": "a qlog"}
LOG_NAMES = {"har": "the HAR", "netlog": "Chrome's NetLog", "qlog": "the qlog"}  # a log laid over, in a sentence

NEXT_MIDWAY = ("start the capture before the page load, and make the browser open new connections "
               "(quit it first, or use a fresh profile) so no connection predates the capture")
NEXT_LOST = ("the capture dropped packets: capture on the client with a larger buffer (tcpdump -B 16384) "
             "and without a snap length (-s 0)")
NEXT_NO_KEYLOG = "pass --keylog FILE: the key log (SSLKEYLOGFILE) the browser wrote during this capture"
NEXT_WRONG_KEYLOG = ("this key log holds no secret for these connections: pass the key log written during "
                     "this capture (SSLKEYLOGFILE set before the browser started)")
NEXT_UNKNOWN_KEYLOG = ("pass --keylog FILE with the key log written during this capture (a key log given holds "
                       "no secret for these connections)")
NEXT_UNUSABLE_KEYLOG = "pass --keylog FILE with the key log (SSLKEYLOGFILE) the browser wrote during this capture"
# (a record that fails its integrity check: the capture's bytes changed, or a secret that opened the
# earlier records does not open this one; TLS cannot resynchronise, so every later record of that
# direction stays encrypted — sessions/tls.py stops there)
NEXT_RECORD_FAILED = ("a TLS record did not decrypt (damaged bytes or a wrong key), and nothing after it in that direction was "
                      "decrypted: check the capture file is not damaged (copy it whole again; capture with tcpdump -s 0 on the "
                      "client) and that the key log is the one written during this capture")
NEXT_OTHER_HALF = "the requests' other half is not in the capture: capture the whole page load, from before it starts to after it ends"
# (a QUIC connection whose start is in the capture: its QPACK encoder stream began in it, so the
# instructions a header block waits for were sent inside the capture and are not in the file)
NEXT_QPACK_LOST = ("their QPACK header blocks refer to dynamic-table entries whose encoder-stream instructions are not in the "
                   "capture, though the connection's start is (packets lost, or the capture stopped first): capture on the "
                   "client with a larger buffer (tcpdump -B 16384) and without a snap length (-s 0), and stop it after the "
                   "page load has ended")
# Per-block limits (``Context.limit_hit``): a block over one is left undecoded at once, no
# budget "runs out".  name -> (the block over it with the default ``{v}``, what N must exceed, what is lost).  Raising one
# is ``--limit NAME=N`` on any analysis command (ui/cli.py ``limit_names``: DEFAULT_LIMITS' keys).
PER_BLOCK_LIMITS = {
    "http1_header_bytes": ("an HTTP/1 head or trailer section longer than the limit ({v} bytes", "that section's size in bytes",
                           "that direction of the connection was not decoded from there on"),
    "http1_header_count": ("an HTTP/1 head with more header fields than the limit ({v}", "that head's number of fields",
                           "the fields past the limit were not kept"),
    "http1_chunk_line": ("an HTTP/1 chunk-size line (chunk extensions included) longer than the limit ({v} bytes", "that line's length in bytes",
                         "that direction of the connection was not decoded from there on"),
}
# budgets that can stop a body's decoding (analyzer/content.py), besides its per-body cap body_decoded_bytes
_BODY_BUDGETS = ("decompress_bytes", "body_decoder_memory", "body_held_bytes")


def _limit_value(n: int) -> str:
    """A limit as ``--limit`` takes it (M, G: 2**20, 2**30)."""
    for unit, shift in (("G", 30), ("M", 20)):
        if n >= 1 << shift and not n % (1 << shift):
            return f"{n >> shift}{unit}"
    return str(n)


def limit_next_step(name: str) -> str:
    """What to do about the per-block limit ``name`` (``PER_BLOCK_LIMITS``): raise it, for a
    capture whose traffic is trusted (the limits keep a hostile capture from costing memory or time)."""
    measure = PER_BLOCK_LIMITS[name][1]
    return (f"if the traffic is genuine, analyse it again with --limit {name}=N, N above {measure} "
            f"(default {_limit_value(DEFAULT_LIMITS[name])}; the limit guards against hostile input)")


# (``summary`` loads this module: its dataclasses' __init__ are written out and their __repr__
# and __eq__ are dataclass_repr and dataclass_eq, not compiled at every start, and each has a
# docstring, without which @dataclass formats one from inspect.signature: ~3 ms of the
# module's ~4 ms import; tests/test_dataclass_init.py holds them to the generated ones)
@dataclass(init=False, slots=True, repr=False, eq=False)
class Issue:
    """One thing the capture misses, with the next step for the user."""

    __repr__ = dataclass_repr
    __eq__ = dataclass_eq

    kind: str  # joined_midway | unknown_fields | bytes_lost | not_decrypted | record_not_decrypted | budget | capture_damaged | no_packets | keylog_*
    connection: int | None  # None: the capture as a whole
    count: int  # requests (joined_midway, unknown_fields), bytes (bytes_lost), packets (not_decrypted), 1
    detail: str  # what is missing, in words
    next_step: str  # what the user can do about it
    background: bool = False  # on a connection of background traffic only (``Completeness.background_connections``)
    file: str | None = None  # keylog_* issues: the key log, as named
    # joined_midway with no request seen: "unknown" (nothing in the capture says whose it is:
    # ``Completeness.owner_unknown_connections``) or "page" (an outside fact ties it to the page: ``tie``)
    whose: str | None = None
    tie: str | None = None  # the fact that ties it to the page, in words
    # joined_midway with no request seen that a browser log laid over matched (``_log_owners``): that
    # log's entry of ``browser.logs[].matched_connections`` with its ``kind`` and ``file``
    log: dict | None = None

    def __init__(self, kind: str, connection: int | None, count: int, detail: str, next_step: str, background: bool = False,
                 file: str | None = None, whose: str | None = None, tie: str | None = None, log: dict | None = None) -> None:
        self.kind = kind
        self.connection = connection
        self.count = count
        self.detail = detail
        self.next_step = next_step
        self.background = background
        self.file = file
        self.whose = whose
        self.tie = tie
        self.log = log


@dataclass(init=False, slots=True, repr=False, eq=False)
class ConnectionCompleteness:
    """What one connection misses (``Completeness.per_connection``)."""

    __repr__ = dataclass_repr
    __eq__ = dataclass_eq

    id: int
    requests: int = 0
    joined_midway: bool = False
    unknown_requests: int = 0  # requests with any unknown field
    unknown_url: int = 0
    unknown_method: int = 0
    unknown_status: int = 0
    unknown_headers: int = 0
    unknown_body: int = 0
    unknown_authority: int = 0
    bytes_lost: int = 0
    gaps: int = 0
    not_decrypted: str | None = None  # the reason, when protected data was not decrypted
    budgets: list[str] = field(default_factory=list)
    cut_short: int = 0  # frames / heads the capture ends inside
    protocol: str | None = None  # the connection's (``Connection.protocol``: "quic", "h2" …), for the headline's words
    response_status_unknown: int = 0  # of ``unknown_status``, those whose response came (its status not in the capture)
    record_failed: int | None = None  # the packet of a TLS record that did not decrypt, decryption stopped after it
    requests_not_decrypted: int = 0  # requests with unknown fields on it after that record

    def __init__(self, id: int, requests: int = 0, joined_midway: bool = False, unknown_requests: int = 0, unknown_url: int = 0,
                 unknown_method: int = 0, unknown_status: int = 0, unknown_headers: int = 0, unknown_body: int = 0,
                 unknown_authority: int = 0, bytes_lost: int = 0, gaps: int = 0, not_decrypted: str | None = None,
                 budgets: list[str] = FACTORY, cut_short: int = 0, protocol: str | None = None,
                 response_status_unknown: int = 0, record_failed: int | None = None, requests_not_decrypted: int = 0) -> None:
        self.id = id
        self.requests = requests
        self.joined_midway = joined_midway
        self.unknown_requests = unknown_requests
        self.unknown_url = unknown_url
        self.unknown_method = unknown_method
        self.unknown_status = unknown_status
        self.unknown_headers = unknown_headers
        self.unknown_body = unknown_body
        self.unknown_authority = unknown_authority
        self.bytes_lost = bytes_lost
        self.gaps = gaps
        self.not_decrypted = not_decrypted
        self.budgets = [] if budgets is FACTORY else budgets
        self.cut_short = cut_short
        self.protocol = protocol
        self.response_status_unknown = response_status_unknown
        self.record_failed = record_failed
        self.requests_not_decrypted = requests_not_decrypted

    @property
    def complete(self) -> bool:
        return not (self.joined_midway or self.unknown_requests or self.bytes_lost or self.gaps
                    or self.not_decrypted or self.budgets or self.cut_short or self.record_failed is not None)


@dataclass(init=False, repr=False, eq=False)
class Completeness:
    """What the capture misses, as a whole and per connection (``compute``)."""

    __repr__ = dataclass_repr
    __eq__ = dataclass_eq

    complete: bool
    connections: int
    requests: int
    joined_midway: list[int]  # connection ids
    requests_on_joined: int  # requests on those connections
    requests_unknown: int  # requests with any unknown field
    unknown_url: int
    unknown_method: int
    unknown_status: int
    unknown_headers: int
    bytes_lost: int
    gaps: int
    not_decrypted: dict[int, str]  # connection id -> reason
    budgets_hit: dict[str, list[int]]  # as analysis.budgets_hit (CAPTURE_ID, -1: the capture)
    warnings: list[str]  # the capture's own (damaged, truncated…), budgets apart
    issues: list[Issue]
    per_connection: dict[int, ConnectionCompleteness]  # only connections with something missing
    unknown_exchanges: dict[int, list[str]] = field(default_factory=dict)  # exchange id -> what is unknown
    unknown_body: int = 0  # requests whose body size is a lower bound
    cut_short: int = 0  # frames / heads the capture ends inside (not decoded)
    unknown_authority: int = 0  # requests whose host nothing in the capture names
    unknown_background: int = 0  # of the requests with an unknown field, those that are background traffic (not the page's)
    background_connections: list[int] = field(default_factory=list)  # connections with something missing that are not the page's
    page_requests: int = 0  # requests of the page (not background traffic)
    response_status_unknown: int = 0  # of ``unknown_status``, those whose response came (its status not in the capture)
    # connections joined mid-way with no request seen whose owner nothing says (``Issue.whose`` "unknown")
    owner_unknown_connections: list[int] = field(default_factory=list)
    requests_not_decrypted: int = 0  # requests after a TLS record that did not decrypt (issue ``record_not_decrypted``)

    def __init__(self, complete: bool, connections: int, requests: int, joined_midway: list[int], requests_on_joined: int,
                 requests_unknown: int, unknown_url: int, unknown_method: int, unknown_status: int, unknown_headers: int,
                 bytes_lost: int, gaps: int, not_decrypted: dict[int, str], budgets_hit: dict[str, list[int]], warnings: list[str],
                 issues: list[Issue], per_connection: dict[int, ConnectionCompleteness], unknown_exchanges: dict[int, list[str]] = FACTORY,
                 unknown_body: int = 0, cut_short: int = 0, unknown_authority: int = 0, unknown_background: int = 0,
                 background_connections: list[int] = FACTORY, page_requests: int = 0, response_status_unknown: int = 0,
                 owner_unknown_connections: list[int] = FACTORY, requests_not_decrypted: int = 0) -> None:
        self.complete = complete
        self.connections = connections
        self.requests = requests
        self.joined_midway = joined_midway
        self.requests_on_joined = requests_on_joined
        self.requests_unknown = requests_unknown
        self.unknown_url = unknown_url
        self.unknown_method = unknown_method
        self.unknown_status = unknown_status
        self.unknown_headers = unknown_headers
        self.bytes_lost = bytes_lost
        self.gaps = gaps
        self.not_decrypted = not_decrypted
        self.budgets_hit = budgets_hit
        self.warnings = warnings
        self.issues = issues
        self.per_connection = per_connection
        self.unknown_exchanges = {} if unknown_exchanges is FACTORY else unknown_exchanges
        self.unknown_body = unknown_body
        self.cut_short = cut_short
        self.unknown_authority = unknown_authority
        self.unknown_background = unknown_background
        self.background_connections = [] if background_connections is FACTORY else background_connections
        self.page_requests = page_requests
        self.response_status_unknown = response_status_unknown
        self.owner_unknown_connections = [] if owner_unknown_connections is FACTORY else owner_unknown_connections
        self.requests_not_decrypted = requests_not_decrypted

    @property
    def summary(self) -> str:
        return _headline(self)

    @property
    def page_complete(self) -> bool:
        """Nothing of the page's requests seen is missing: every issue (if any) is background
        traffic's, or a connection joined mid-way with no request seen whose owner is unknown
        (said apart: never called the page's, never background)."""
        return all(i.background or i.whose == "unknown" for i in self.issues)


# ------------------------------------------------------------------------------ compute


def unknown_fields(e: Exchange) -> list[str]:
    """What the capture does not give of one exchange: ``url`` (neither URL nor path),
    ``authority`` (a path whose host no header, TLS SNI or DNS answer names: ``analyzer.authority``),
    ``method``, ``status``, ``headers`` (an ``<unknown>`` name or value), ``body`` (a body
    size that is a lower bound).  Nothing for a browser log's request that never reached the
    network (``browser.not_sent``: a cache hit, a failure before sending — no response to know)."""
    out: list[str] = []
    if not_sent_of(e.browser):
        return out
    if not e.url and not e.path:
        out.append("url")
    elif e.path is not None and e.method != "CONNECT" and (not e.authority or e.authority == UNKNOWN):
        out.append("authority")  # (analyzer.authority: neither the request, the SNI nor a DNS answer names the host)
    if not e.method and not e.pushed:
        out.append("method")
    if e.status is None and not e.reset:
        out.append("status")
    for hs in (e.request_headers, e.response_headers):
        if any(k == UNKNOWN or v == UNKNOWN for k, v in hs):
            out.append("headers")
            break
    src = e.sources
    if src and "lower_bound" in (src.get("request_body_bytes"), src.get("response_body_bytes"),
                                 src.get("response_body_decoded_bytes")):
        out.append("body")
    return out


def _joined_midway(c: Connection) -> str | None:
    if c.connect_start is not None:
        return None
    if c.transport == "tcp":
        from .flows import client_by_ports

        if client_by_ports(c.client[1], c.server[1]) is None and not (c.tls is not None and c.tls.decrypted):
            # (a record decrypted with the client's or the server's secret would have told the ends apart)
            return "no SYN seen; which end is the client was guessed from the first packet, its ports do not tell"
        return "no SYN seen"
    if c.quic is not None or over_quic(c.protocol):
        return "no QUIC handshake seen"
    return None


def _record_failed(c: Connection) -> DecryptReason | None:
    """The reason of a connection whose records decrypted up to one that did not (``DECRYPTION_FAILED``
    on a connection decrypted otherwise: sessions/tls.py stops that direction there), else None.  TLS
    only: a QUIC packet that fails to open does not stop the next ones."""
    info = c.tls if c.quic is None else None
    r = None if info is None else info.reason
    if info is not None and info.decrypted and isinstance(r, DecryptReason) and r.kind is ReasonKind.DECRYPTION_FAILED:
        return r
    return None


def undecrypted_error(c: Connection | None, e: Exchange) -> str | None:
    """What to say of exchange ``e`` instead of "no response in the capture" (or "response
    incomplete …") when its connection's decryption stopped at a record that did not decrypt:
    its missing half may be in the capture, encrypted.  None otherwise."""
    r = None if c is None else _record_failed(c)
    if r is None or not e.error or not unknown_fields(e):
        return None
    if "no response in the capture" not in e.error and "response incomplete" not in e.error:
        return None
    what = "response decrypted only in part" if e.response_start is not None else "no response decrypted"
    return (f"{what}: a TLS record did not decrypt ({r.detail or 'packet ' + str(r.packet)}; damaged bytes or a "
            "wrong key) and decryption stopped in that direction: the rest of its response may be in the capture, not decrypted")


def _not_decrypted(c: Connection) -> str | None:
    info = c.quic if c.quic is not None else c.tls
    if info is None or info.decrypted:
        return None
    reason = info.reason or "not decrypted"
    if (reason.kind in (ReasonKind.NO_1RTT, ReasonKind.NO_ENCRYPTED_RECORDS) if isinstance(reason, DecryptReason)
            else reason in _NOTHING_TO_DECRYPT):
        return None
    return reason


def _for_want_of_keys(reason: str) -> bool:
    """Whether ``reason`` says a secret was not in the key log (as opposed to a handshake not
    captured, a cipher not supported, a key that did not open the data).  A TLS or QUIC reason
    is typed (``DecryptReason``): its kind says; a plain text is read from its words."""
    if isinstance(reason, DecryptReason):
        return reason.for_want_of_keys
    r = reason.lower()
    return "no key" in r or "in the key log" in r


# the next step of a typed TLS/QUIC reason whose kind alone says it (a secret missing depends on
# whether a key log was given: ``decryption_next_step``)
_TYPED_STEPS = {
    ReasonKind.NO_KEYLOG: NEXT_NO_KEYLOG,
    ReasonKind.DECRYPTION_FAILED: "the key log's secret does not open this connection: pass the key log written during this capture",
    ReasonKind.HANDSHAKE_NOT_CAPTURED: "the TLS handshake predates the capture: " + NEXT_MIDWAY,
    ReasonKind.QUIC_CRYPTO: "gQUIC's QUIC-Crypto cannot be decrypted from a key log; only its unencrypted handshake is shown",
}


def decryption_next_step(reason: str, keys: bool | None) -> str:
    """The next step for a connection not decrypted for ``reason``; ``keys``: a key log with
    secrets was given (None: not known, e.g. an analysis from the cache)."""
    if isinstance(reason, DecryptReason) and reason.kind in _TYPED_STEPS:
        return _TYPED_STEPS[reason.kind]
    r = reason.lower()
    if "start not captured" in r or "already under way" in r:
        return NEXT_MIDWAY
    if _for_want_of_keys(reason):
        return NEXT_NO_KEYLOG if keys is False else NEXT_WRONG_KEYLOG if keys else NEXT_UNKNOWN_KEYLOG
    if "clienthello" in r or "under way" in r:
        return "the TLS handshake predates the capture: " + NEXT_MIDWAY
    if "serverhello" in r or "gap" in r:
        return "the capture lost handshake or record bytes: " + NEXT_LOST
    if "decryption failed" in r:
        return "the key log's secret does not open this connection: pass the key log written during this capture"
    if "quic-crypto" in r:
        return "gQUIC's QUIC-Crypto cannot be decrypted from a key log; only its unencrypted handshake is shown"
    if "unsupported" in r:
        return "wirefall cannot decrypt this cipher suite or version"
    return NEXT_NO_KEYLOG if keys is False else "check that the key log belongs to this capture"


class _KeyLogs:
    """What the key logs given say of themselves, from their typed facts (``KeyLog.problems``,
    ``KeyLog.read_from``; never a warning's words): ``unreadable`` (problems: not read at all),
    ``empty`` (sources read that gave no secret), ``partial`` (problems of sources that gave
    secrets but were read in part: a broken gzip, lines not understood)."""

    __slots__ = ("given", "secrets", "unreadable", "empty", "partial", "problems")

    def __init__(self, kl: KeyLog) -> None:
        self.problems = kl.problems
        read = kl.read_from
        self.unreadable = [p for p in self.problems if p.kind == "unreadable" and not read.get(p.source)]
        bad = {p.source for p in self.unreadable}
        self.empty = [src for src in dict.fromkeys(kl.sources) if not read.get(src) and src not in bad]
        self.partial = [p for p in self.problems if p.kind in ("broken_gzip", "lines_skipped") and read.get(p.source)]
        self.given = kl.given
        self.secrets = len(kl)

    def why_empty(self, src: str) -> str:
        """Why ``src``, read, gave no secret: its own problems, or none (no key log line in it)."""
        said = [f"{plural(p.lines, 'line')} not understood, the first at line {p.first_line}" if p.kind == "lines_skipped"
                else f"a broken gzip file ({p.why}), read up to the damage" for p in self.problems
                if p.source == src and p.kind in ("lines_skipped", "broken_gzip")]
        return "; ".join(said) or "no key log line in it"

    def facts(self) -> list[str]:
        """Each key log's problem, in a few words (for a next step)."""
        return ([f"{p.source} could not be read: {p.why}" for p in self.unreadable]
                + [f"{src} holds no secret: {self.why_empty(src)}" for src in self.empty]
                + [f"{src} read in part: {self.why_partial(src)}" for src in self.partial_sources()])

    def partial_sources(self) -> list[str]:
        return list(dict.fromkeys(p.source for p in self.partial))

    def why_partial(self, src: str) -> str:
        """What of ``src`` (which gave secrets) was not read or not understood."""
        return "; ".join(f"{plural(p.lines, 'line')} not understood, the first at line {p.first_line}, skipped" if p.kind == "lines_skipped"
                         else f"a broken gzip file ({p.why}), only the lines before the damage read" for p in self.partial if p.source == src)

    def issues(self) -> list[Issue]:
        """One issue per key log with a problem (kinds ``keylog_unreadable``, ``keylog_no_secrets``, ``keylog_damaged``)."""
        out = [Issue("keylog_unreadable", None, 1, f"key log {p.source} could not be read ({p.why}): no secret from it",
                     "check that --keylog names a readable file: the key log (SSLKEYLOGFILE) the browser wrote during this capture",
                     file=p.source)
               for p in self.unreadable]
        out += [Issue("keylog_no_secrets", None, 1, f"key log {src} was read and holds no secret ({self.why_empty(src)})",
                      f"{NEXT_UNUSABLE_KEYLOG} ({src} is not one, or not whole: an NSS key log's lines are LABEL CLIENT_RANDOM SECRET)",
                      file=src) for src in self.empty]
        out += [Issue("keylog_damaged", None, 1, f"key log {src} read in part: {self.why_partial(src)} (a secret there is not used)",
                      "if the key log was cut short or damaged (copied while the browser still wrote it?), copy it whole again",
                      file=src) for src in self.partial_sources()]
        return out


def _keylog_words(reason: str, ks: _KeyLogs | None) -> tuple[str, str] | None:
    """(what, next step) of a connection not decrypted for want of a secret (``_for_want_of_keys``)
    when a key log was given: none of it readable → "the key log given could not be read"; read and
    no secret in it → "… holds no secret" (the layer's reason says so too, "the key log given holds
    no secret": it found nothing to look up); with secrets → the layer's own words ("no key for this client random"),
    the key logs' problems in the next step.  None when no key log was given (or not known)."""
    if ks is None or not ks.given or not _for_want_of_keys(reason):
        return None
    if ks.secrets:  # (the key logs' issues say what of each was not read)
        step = decryption_next_step(reason, True)
        names = [p.source for p in ks.unreadable] + ks.empty + ks.partial_sources()
        return reason, step + (f" (and a key log given was not read whole or holds no secret: {', '.join(names)})" if names else "")
    facts = ks.facts()
    n = len(ks.unreadable) + len(ks.empty)
    what = "key log given" if n == 1 else "key logs given"
    what = (f"the {what} could not be read" if not ks.empty else f"the {what} holds no secret" if not ks.unreadable and n == 1
            else f"the {what} hold no secret" if not ks.unreadable else f"the {what} could not be read or hold no secret")
    return what + (reason.needs if isinstance(reason, DecryptReason) else ""), f"{NEXT_UNUSABLE_KEYLOG} ({'; '.join(facts)})"


def _unknown_cause(e: Exchange, u: list[str]) -> str:
    """Why exchange ``e`` (not on a connection joined mid-way) has the unknown fields ``u``:
    ``qpack`` (a response header block the capture ends blocked on: its encoder instructions are
    not in the capture), ``decoded_cap`` (only its decoded body size is a lower bound, the body
    itself whole: its decoding stopped at a limit), else ``capture`` (a half not in the capture:
    cut by its start or end, or stopped by a per-block limit of the connection)."""
    if e.error:
        # the error of a header block the capture ends blocked on: the dissector's one constant
        # (dissectors/http3.py, imported here only for an exchange with an error: 25 ms of pylsqpack
        # a summary need not load), which the exchange's error holds (joined to others by "; ");
        # a connection joined mid-way decodes such blocks with ``<unknown>`` instead
        from wirefall.dissectors.http3 import BLOCKED_AT_END

        if BLOCKED_AT_END in e.error:
            return "qpack"
    src = e.sources or {}
    if u == ["body"] and src.get("response_body_decoded_bytes") == "lower_bound" \
            and "lower_bound" not in (src.get("response_body_bytes"), src.get("request_body_bytes")):
        return "decoded_cap"
    return "capture"


def _unknown_next_step(cid: int, causes: set[str], budgets: dict[str, list[int]], record_failed: bool = False) -> str:
    """The next step for the requests with unknown fields of connection ``cid`` (seen from its
    start), from their causes (``_unknown_cause``): a per-block limit that stopped its decoding
    names itself (every request after the block is the limit's, not the capture's), then blocked
    QPACK, then a decoding cap; the capture's own cut only for what none of these explains."""
    steps = [NEXT_RECORD_FAILED] if record_failed else []  # (not the capture's cut: the bytes are there, encrypted)
    limits = [n for n, ids in sorted(budgets.items()) if n in PER_BLOCK_LIMITS and cid in ids]
    for name in limits:  # (the limit's own issue says by how much)
        steps.append(f"raise the limit that stopped this connection's decoding: --limit {name}=N")
    if "qpack" in causes:
        steps.append(NEXT_QPACK_LOST)
    if "decoded_cap" in causes:
        spent = [n for n in _BODY_BUDGETS if cid in budgets.get(n, ()) or CAPTURE_ID in budgets.get(n, ())]
        steps.append("a body's decoding stopped at a limit: raise it with --limit body_decoded_bytes=N (bytes of one decoded "
                     f"body, default {_limit_value(DEFAULT_LIMITS['body_decoded_bytes'])})"
                     + "".join(f", or --limit {n}=N (ran out)" for n in spent))
    if "capture" in causes and not limits and not record_failed:
        steps.append(NEXT_OTHER_HALF)
    return "; ".join(steps) or NEXT_OTHER_HALF


def compute(an: Analysis) -> Completeness:
    """The completeness of ``an``, computed once: kept on the analysis (``_completeness``;
    an analysis cached after this holds it in its summary-sized part, so that reopening it
    needs not unpack the requests again).  Computed again if the analysis changed since
    (connections, warnings, or — when loaded — exchanges added or removed)."""
    d = getattr(an, "__dict__", None)
    if d is None:
        return _compute(an)
    hit = d.get("_completeness")
    loaded = d.get("exchanges")  # an analysis reopened from the cache: not unpacked yet
    if hit is not None:
        (nc, nw, ne), c = hit
        if nc == len(an.connections) and nw == len(an.warnings) and (loaded is None or ne == len(loaded)):
            return c
    c = _compute(an)
    d["_completeness"] = ((len(an.connections), len(an.warnings), len(an.exchanges)), c)
    return c


def _compute(an: Analysis) -> Completeness:
    kl = an.keylog
    keys = None if kl is None else len(kl) > 0
    ks = _KeyLogs(kl) if isinstance(kl, KeyLog) else None  # (None: no key log object, or not ours)
    per: dict[int, ConnectionCompleteness] = {}
    reqs_by_conn: dict[int, int] = {}
    unknown_ex: dict[int, list[str]] = {}
    tot = dict(url=0, method=0, status=0, headers=0, body=0, authority=0)
    resp_unknown = 0  # responses that came whose status is unknown
    ex_by_conn: dict[int, list[int]] = {}
    causes_by_conn: dict[int, set[str]] = {}  # connection -> why its requests have unknown fields (``_unknown_cause``)
    for e in an.exchanges:
        reqs_by_conn[e.connection] = reqs_by_conn.get(e.connection, 0) + 1
        ex_by_conn.setdefault(e.connection, []).append(e.id)
        u = unknown_fields(e)
        if not u:
            continue
        unknown_ex[e.id] = u
        causes = causes_by_conn.setdefault(e.connection, set())
        causes.add(_unknown_cause(e, u))
        cc = per.setdefault(e.connection, ConnectionCompleteness(e.connection))
        cc.unknown_requests += 1
        for k in u:
            tot[k] += 1
            setattr(cc, "unknown_" + k, getattr(cc, "unknown_" + k) + 1)
        if e.status is None and e.response_start is not None and "status" in u:
            cc.response_status_unknown += 1
            resp_unknown += 1
    issues: list[Issue] = []
    joined: list[int] = []
    not_dec: dict[int, str] = {}
    lost = gaps = cut = n_undec = 0
    conn_ids = set()
    source = getattr(an, "source", "capture") or "capture"
    if source != "capture":
        issues.append(Issue("no_packets", None, len(an.exchanges), f"no packets: from {NO_PACKETS.get(source, source)}, "
                            "the browser's own log (times as the browser saw them; no packet, frame or byte on the wire)",
                            f"open the capture of the same load, and lay this log over it with --{source} FILE"))
    budgets = {k: list(v) for k, v in (getattr(an, "budgets_hit", None) or {}).items()}
    no_net = no_network_connections(an)  # (a browser log's requests that never reached the network: no wire to miss)
    for c in an.connections:
        conn_ids.add(c.id)
        n_req = reqs_by_conn.get(c.id, 0)
        wire = source == "capture" and c.id not in no_net
        why = _joined_midway(c) if wire else None
        reason = _not_decrypted(c) if wire else None
        c_lost = c_gaps = 0
        for n in notes_of(c.notes, NoteKind.GAP):
            c_lost += n.length or 0
            c_gaps += 1
        c_cut = sum(1 for _ in notes_of(c.notes, NoteKind.ENDS_IN_FRAME))
        failed = _record_failed(c) if wire else None
        if not (why or reason or c_lost or c_cut or failed or c.id in per):
            continue
        cc = per.setdefault(c.id, ConnectionCompleteness(c.id))
        cc.requests = n_req
        if why:
            cc.joined_midway = True
            joined.append(c.id)
            seen = (f"{n_req} request{'s' * (n_req != 1)} seen, earlier ones and its handshake are not in the capture" if n_req
                    else "no request seen on it; its handshake, and what it carried before, are not in the capture")
            issues.append(Issue("joined_midway", c.id, n_req, f"connection {c.id} ({c.label}) joined mid-way ({why}): {seen}",
                                NEXT_MIDWAY))
        if failed is not None:
            after = [eid for eid in ex_by_conn.get(c.id, ()) if eid in unknown_ex]
            cc.record_failed, cc.requests_not_decrypted = failed.packet, len(after)
            n_undec += len(after)
            issues.append(Issue("record_not_decrypted", c.id, len(after),
                                f"connection {c.id}: a TLS record did not decrypt ({failed.detail or 'packet ' + str(failed.packet)}; "
                                f"damaged bytes or a wrong key): decryption stopped in that direction, {plural(len(after), 'request')} "
                                "after it not decrypted", NEXT_RECORD_FAILED))
        if cc.unknown_requests:
            what = ", ".join((f"{cc.unknown_body} with a body size that is a lower bound" if k == "body" else
                              f"{cc.unknown_authority} without a known host" if k == "authority" else
                              f"{getattr(cc, 'unknown_' + k)} without {'a known ' if k != 'headers' else 'all '}{k}")
                             for k in ("url", "authority", "method", "status", "headers", "body") if getattr(cc, "unknown_" + k))
            step = NEXT_MIDWAY if cc.joined_midway else _unknown_next_step(c.id, causes_by_conn.get(c.id, set()), budgets,
                                                                           failed is not None)
            issues.append(Issue("unknown_fields", c.id, cc.unknown_requests,
                                f"connection {c.id}: {cc.unknown_requests} request{'s' * (cc.unknown_requests != 1)} with unknown fields ({what})",
                                step))
        if c_lost or c_gaps:
            cc.bytes_lost, cc.gaps = c_lost, c_gaps
            lost += c_lost
            gaps += c_gaps
            issues.append(Issue("bytes_lost", c.id, c_lost, f"connection {c.id}: {c_lost} bytes lost by the capture in {c_gaps} gap{'s' * (c_gaps != 1)}",
                                NEXT_LOST))
        if c_cut:
            cc.cut_short = c_cut
            cut += c_cut
            issues.append(Issue("cut_short", c.id, c_cut, f"connection {c.id}: the capture ends inside {plural(c_cut, 'frame')} "
                                "(a message head or frame not complete): not decoded",
                                "stop the capture after the page load has ended (the connections closed or idle)"))
        if reason:
            cc.not_decrypted = reason
            not_dec[c.id] = reason
            pk = c.stats[0].packets + c.stats[1].packets
            # (no secret at all: said so, not "no key for this client random", which reads as if a
            # key log had been given.  TLS's and QUIC's reasons are typed and say so themselves, the
            # same text everywhere: this line, not_decrypted, the summary row, JSON tls/quic.reason —
            # TLS's since 2026-12-04; a plain text, a browser log's or a live wait's, is read here)
            said = reason if isinstance(reason, DecryptReason) else \
                "no key log given" if keys is False and _for_want_of_keys(reason) else reason
            step = decryption_next_step(reason, keys)
            # (a key log given, and not read or without a secret: the layer says "the key log given
            # holds no secret", having found nothing to look up; these words say which, and where a
            # key log's end was not read, the next step says so)
            said, step = _keylog_words(reason, ks) or (said, step)
            issues.append(Issue("not_decrypted", c.id, pk, f"connection {c.id} ({(c.tls and c.tls.sni) or (c.quic and c.quic.sni) or c.label}) "
                                f"not decrypted: {said}", step))
    # requests of exchanges whose connection is not in the list (hand-built models)
    for cid, cc in per.items():
        if cid not in conn_ids and cc.unknown_requests:
            cc.requests = reqs_by_conn.get(cid, 0)
            issues.append(Issue("unknown_fields", cid, cc.unknown_requests,
                                f"connection {cid}: {cc.unknown_requests} requests with unknown fields", "capture the whole page load"))
    for name, cids in sorted(budgets.items()):
        for cid in cids:
            if cid == CAPTURE_ID and name in READER_BUDGETS:  # the compressed capture was read no further
                issues.append(Issue("budget", None, 1, f"budget {name} for the capture ran out: the rest of the compressed file was not "
                                    "read (a decompression bomb?)", f"decompress the file first, or raise it with --limit {name}=N"))
            elif cid == CAPTURE_ID:
                issues.append(Issue("budget", None, 1, f"budget {name} for the capture ran out: later work of this kind was not done",
                                    f"raise it with --limit {name}{'' if name in CAPTURE_WIDE else '_capture'}=N"))
            elif name in PER_BLOCK_LIMITS:  # (a block over the limit, not a budget spent: say which and what it cost)
                per.setdefault(cid, ConnectionCompleteness(cid, requests=reqs_by_conn.get(cid, 0))).budgets.append(name)
                what, _, cost = PER_BLOCK_LIMITS[name]
                issues.append(Issue("budget", cid, 1, f"connection {cid}: limit {name} exceeded: "
                                    + what.format(v=_limit_value(DEFAULT_LIMITS[name])) + f" unless --limit set it); {cost}",
                                    limit_next_step(name)))
            else:
                per.setdefault(cid, ConnectionCompleteness(cid, requests=reqs_by_conn.get(cid, 0))).budgets.append(name)
                issues.append(Issue("budget", cid, 1, f"connection {cid}: budget {name} ran out: part of it was not decoded",
                                    f"raise it with --limit {name}=N"))
    warns = [w for w in an.warnings if not w.startswith("budget ") and BUDGET_WARNING not in w
             and not any(f"budget {n} (" in w for n in READER_BUDGETS) and not (ks is not None and kl.said(w))]
    if ks is not None and not_dec:
        # the key logs' own problems, said first (they are why the connections above were not
        # decrypted, or may be); where every connection was decrypted they cost nothing here
        first = 1 if issues and issues[0].kind == "no_packets" else 0
        issues[first:first] = ks.issues()
    for w in warns:
        issues.append(Issue("capture_damaged", None, 1, w, _warning_next_step(w)))
    n_joined_req = sum(reqs_by_conn.get(cid, 0) for cid in joined)
    for c in an.connections:
        if c.id in per:
            per[c.id].protocol = c.protocol
    unknown_bg = 0
    bg_conns: list[int] = []
    unknown_owner: list[int] = []
    page_reqs = len(an.exchanges)
    if (unknown_ex or per) and source == "capture" and an.exchanges:
        # whose is what is missing: the page's, or background traffic's (a metadata long-poll the
        # capture ends in, a connection of another program that began before the capture)
        from .waterfall import page_of

        bg = page_of(an).background
        unknown_bg = sum(1 for eid in unknown_ex if eid in bg)
        page_reqs = len(an.exchanges) - sum(1 for e in an.exchanges if e.id in bg)
        if page_reqs:  # (no page request at all: nothing to tell the page apart from)
            bg_conns = [cid for cid, cc in per.items() if ex_by_conn.get(cid) and _background(an, cid, cc, ex_by_conn.get(cid), bg)]
            # a connection joined mid-way that carried no request in the capture: what it carried
            # before is not in the capture, so whose it is cannot be known from it (amazon1 cut at
            # packet 549: the awswaf connection had carried the page's requests before the cut);
            # said "unknown", or tied to the page by an outside fact
            idle = [cid for cid, cc in per.items() if cc.joined_midway and not ex_by_conn.get(cid) and _background(an, cid, cc, None, bg)]
            # a browser log laid over says whose it is (its requests on it: the log's word first), else
            # its server or SNI may tie it to the page
            logged = _log_owners(an, idle) if idle else {}
            ties = {cid: _log_words(f) for cid, f in logged.items() if f["whose"] == "page"}
            bg_by_log = [cid for cid, f in logged.items() if f["whose"] == "background"]
            rest = [cid for cid in idle if cid not in logged or logged[cid]["whose"] is None]
            ties.update(_page_ties(an, rest, bg) if rest else {})
            unknown_owner = [cid for cid in rest if cid not in ties]
            bg_conns += bg_by_log
            for i in issues:
                f = logged.get(i.connection) if i.connection is not None and i.kind == "joined_midway" else None
                if i.connection is not None and i.connection in bg_conns:
                    i.background = True
                    i.detail += "; background traffic, not the page's" + (f": {_log_words(f)}" if f is not None else "")
                    i.next_step = "nothing for the page, whose own requests are not on it; to see it whole: " + i.next_step
                    i.log = f
                elif i.connection in ties and i.kind == "joined_midway":
                    i.whose, i.tie, i.log = "page", ties[i.connection], f
                    i.detail += (f"; {i.tie}: it carried them before the capture" if f is not None and f["whose"] == "page"
                                 else f"; {i.tie}: it may have carried the page's requests before the capture")
                elif i.connection in unknown_owner and i.kind == "joined_midway":
                    i.whose, i.log = "unknown", f
                    i.detail += "; whose it is is unknown (what it carried is not in the capture" + (
                        f"; {_log_words(f)})" if f is not None else ")")
                    i.next_step = "to know whose it is: " + i.next_step
    return Completeness(
        complete=not issues, connections=len(an.connections), requests=len(an.exchanges), joined_midway=joined,
        requests_on_joined=n_joined_req, requests_unknown=len(unknown_ex), unknown_url=tot["url"],
        unknown_method=tot["method"], unknown_status=tot["status"], unknown_headers=tot["headers"], bytes_lost=lost,
        gaps=gaps, not_decrypted=not_dec, budgets_hit=budgets, warnings=warns, issues=issues,
        per_connection={k: per[k] for k in sorted(per)}, unknown_exchanges=unknown_ex, unknown_body=tot["body"],
        cut_short=cut, unknown_authority=tot["authority"], unknown_background=unknown_bg, background_connections=sorted(bg_conns),
        page_requests=page_reqs, response_status_unknown=resp_unknown, owner_unknown_connections=sorted(unknown_owner),
        requests_not_decrypted=n_undec)


def _log_owners(an: Analysis, cids: list[int]) -> dict[int, dict]:
    """Of the connections ``cids`` (joined mid-way, no request seen), those a browser log laid over
    matched, one wire connection to one log connection (``browser.logs[].matched_connections``,
    analyzer/browserlog/matching.py), each with that entry and its log's ``kind`` and ``file``; its
    ``whose`` is the log's word ("page", "background", None: the log does not say).  Of several
    logs, one that says "page" wins, then "background"."""
    logs = an.browser.get("logs") if isinstance(an.browser, dict) else None
    out: dict[int, dict] = {}
    rank = {"page": 2, "background": 1}
    for log in logs if isinstance(logs, list) else ():
        for m in log.get("matched_connections") or () if isinstance(log, dict) else ():
            wire = m.get("wire") or []
            if m.get("group") or len(wire) != 1 or wire[0] not in cids:
                continue
            f = dict(m, kind=log.get("kind"), file=log.get("file"))
            old = out.get(wire[0])
            if old is None or rank.get(f["whose"], 0) > rank.get(old["whose"], 0):
                out[wire[0]] = f
    return out


def _log_words(f: dict) -> str:
    """What a browser log says of a connection it matched (``_log_owners``), in words: "Chrome's
    NetLog matched it: QUIC session 220, isolation key https://amazon.com https://amazon.com (the
    page's site https://amazon.com), 3 of the page's requests on it in the log"."""
    key = str(f.get("log_connection"))
    label = key.replace("quic session", "QUIC session") if f.get("kind") == "netlog" else f"connection {key}"
    s = f"{LOG_NAMES.get(f.get('kind') or '', 'the browser log')} matched it: {label}"
    keys, sites = f.get("isolation_keys") or [], f.get("page_sites") or []
    if keys:
        s += f", isolation key {'; '.join(keys[:2])}"
        if f["whose"] == "page" and sites:
            s += f" (the page's site{'s' if len(sites) > 1 else ''} {', '.join(sites[:4])})"
    n = f.get("requests") or 0
    if not n and f.get("session_key") and f["whose"] in ("page", "background"):  # (whose by the session's own key)
        s += f", opened under the key {f['session_key']}"
        if f["whose"] == "page":
            return s + f" (the page's site {', '.join(sites[:4])}), no request on it in the log: a preconnect of the page"
        return s + f", no request on it in the log: {f.get('reason')}"
    if f["whose"] == "page":
        return s + f", {f.get('page_requests') or 0} of the page's requests on it in the log"
    if f["whose"] == "background":
        return s + f", every one of its {plural(n, 'request')} in the log set apart by it: {f.get('reason')}"
    return s + (", no request on it in the log" if not n else f", none of its {plural(n, 'request')} in the log said to be the page's or not")


def _page_ties(an: Analysis, cids: list[int], bg: dict[int, str]) -> dict[int, str]:
    """Of the connections ``cids`` (joined mid-way, no request seen), those a fact outside them ties
    to the page, with that fact in words: its server (address and port) is one that carried the
    page's own requests on another connection, or its SNI is the host of a page request."""
    page_conns: set[int] = set()
    hosts: set[str] = set()
    for e in an.exchanges:
        if e.id in bg:
            continue
        if e.authority and e.authority != UNKNOWN:
            hosts.add(e.authority.rsplit(":", 1)[0] if not e.authority.endswith("]") else e.authority)
        page_conns.add(e.connection)
    servers: dict[tuple, int] = {}
    for c in an.connections:
        if c.id in page_conns:
            servers.setdefault((c.transport, tuple(c.server)), c.id)
    out: dict[int, str] = {}
    for c in an.connections:
        if c.id not in cids:
            continue
        sni = (c.tls and c.tls.sni) or (c.quic and c.quic.sni)
        other = servers.get((c.transport, tuple(c.server)))
        if other is not None:
            host = c.server[0] if ":" not in str(c.server[0]) else f"[{c.server[0]}]"
            out[c.id] = f"its server {host}:{c.server[1]} carried the page's requests on connection {other}"
        elif sni and sni in hosts:
            out[c.id] = f"its SNI {sni} is a host of the page's requests"
    return out


def _background(an: Analysis, cid: int, cc: ConnectionCompleteness, ids: list[int] | None, bg: dict[int, str]) -> bool:
    """With ``ids``: whether what connection ``cid`` misses is background traffic's, not the page's:
    every request on it is background traffic (``page_of``).  Without: whether it carried none in
    the capture — and that is known (whose it is then is not: ``_compute`` says "unknown"):
    decrypted (or in clear), no byte of it lost or cut, no budget stopped its decoding, and for
    QUIC no byte on a request (client-initiated bidirectional) stream (amazon1's connection to a
    Google address: PINGs and ACKs, begun before the capture).  A connection not decrypted may
    have carried the page's requests: never background."""
    if ids:
        return all(i in bg for i in ids)
    if cc.not_decrypted or cc.bytes_lost or cc.gaps or cc.cut_short or cc.budgets or cc.unknown_requests:
        return False
    conn = next((c for c in an.connections if c.id == cid), None)
    if conn is None:
        return False
    if conn.quic is not None:
        streams = ((getattr(an, "quic_stats", None) or {}).get(cid) or {}).get("streams") or {}
        if any(int(k.partition(":")[2]) & 2 == 0 and (v or {}).get("bytes") for k, v in streams.items()):
            return False  # (request-stream bytes whose requests were not made out)
    return True


def _warning_next_step(w: str) -> str:
    wl = w.lower()
    if "snap length" in wl:
        return "capture without a snap length (tcpdump -s 0)"
    if "truncated" in wl or "corrupt" in wl or "stopped reading" in wl:
        return "the capture file is cut short or damaged: stop the capture cleanly (tcpdump flushes on exit) and copy it whole"
    if "key log" in wl:
        return "check the key log file"
    return "see the warning"


# ------------------------------------------------------------------------------- output


def _kb(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1 << 20:
        return f"{n / 1024:.0f} KB"
    return f"{n / (1 << 20):.1f} MB"


_PROTO_NAMES = {"quic": "QUIC", "gquic": "gQUIC", "h2": "HTTP/2", "h2c": "HTTP/2", "tls": "TLS", "dns": "DNS"}


def _proto_name(p: str | None) -> str:
    if not p:
        return ""
    if p.startswith("h3"):
        return "HTTP/3"
    if p.startswith("spdy"):
        return "SPDY"
    return _PROTO_NAMES.get(p, p.upper())


class _Side:
    """The counts one side of the headline states (the page's, or background traffic's)."""

    __slots__ = ("joined", "joined_idle", "joined_protos", "unknown_url", "unknown", "unknown_authority", "unknown_background",
                 "unknown_status", "unknown_body", "bytes_lost", "cut_short", "not_decrypted", "budgets", "warnings", "no_packets",
                 "keylog", "records_failed", "requests_not_decrypted", "joined_tied", "joined_logged")

    def __init__(self) -> None:
        self.records_failed = self.requests_not_decrypted = self.joined_tied = 0
        self.joined_logged: dict[str, int] = {}  # of joined_tied, those a browser log ties: its kind -> how many
        self.joined = self.joined_idle = self.unknown_url = self.unknown = self.unknown_authority = 0
        self.unknown_status = 0
        self.unknown_background = self.unknown_body = self.bytes_lost = self.cut_short = self.not_decrypted = 0
        self.budgets = self.warnings = 0
        self.joined_protos: set[str] = set()
        self.no_packets: str | None = None
        self.keylog: list[str] = []  # what the key logs' own issues say, in a few words each

    def parts(self, background: bool = False) -> list[str]:
        parts = []
        if self.records_failed:  # (first: the requests with unknown fields below are mostly these)
            parts.append(f"{plural(self.records_failed, 'TLS record')} did not decrypt (damaged bytes or a wrong key): "
                         f"{plural(self.requests_not_decrypted, 'request')} after it not decrypted")
        if self.joined:
            proto = next(iter(self.joined_protos)) if background and len(self.joined_protos) == 1 else ""
            s = f"{plural(self.joined, (proto + ' ' if proto else '') + 'connection')} joined mid-way"
            notes = []
            if background:
                notes.append("began before the capture" + (", no request on it" if self.joined_idle == self.joined == 1 else
                                                           ", no request on them" if self.joined_idle == self.joined else ""))
            by_log = sum(self.joined_logged.values())
            if self.joined_tied > by_log:  # (no request seen, tied to the page by its server or SNI: Issue.tie)
                notes.append(f"{self.joined_tied - by_log} with no request seen, its server or SNI the page's")
            for kind, n in self.joined_logged.items():  # (by a browser log's requests on it: ``_log_owners``)
                notes.append(f"{n} with no request seen, the page's by {LOG_NAMES.get(kind, kind)}")
            if self.unknown_url:
                notes.append(f"{plural(self.unknown_url, 'request')} with unknown URL")
            parts.append(s + (f" ({'; '.join(notes)})" if notes else ""))
        elif self.unknown_url:
            parts.append(f"{plural(self.unknown_url, 'request')} with unknown URL")
        other = self.unknown - self.unknown_url
        if other > 0:  # (the requests without a known host are among them: analyzer.authority)
            notes = [f"{self.unknown_authority} with unknown host"] if self.unknown_authority else []
            if self.unknown_background and not background:  # (not the page's: a metadata long-poll the capture ends in)
                notes.append("background traffic, not the page's" if self.unknown_background >= self.unknown
                             else f"{self.unknown_background} of them background traffic")
            parts.append(f"{plural(other, 'request')} with unknown fields" + (f" ({'; '.join(notes)})" if notes else ""))
        if self.unknown_status:  # (responses that came, among the requests above: a blank status reads as "no response")
            parts.append(f"{plural(self.unknown_status, 'response')} with unknown status")
        if self.unknown_body:  # (among the requests above: what every view says of "≥ N" body sizes)
            parts.append(f"{plural(self.unknown_body, 'body size')} only a lower bound")
        if self.bytes_lost:
            parts.append(f"{_kb(self.bytes_lost)} lost")
        if self.cut_short:
            parts.append(f"{plural(self.cut_short, 'frame')} cut by the capture's end")
        if self.not_decrypted:
            parts.append(f"{plural(self.not_decrypted, 'connection')} not decrypted")
        parts.extend(self.keylog)
        if self.budgets:
            parts.append(f"{plural(self.budgets, 'budget')} ran out")
        if self.warnings:
            parts.append(f"capture damaged ({plural(self.warnings, 'warning')})")
        if self.no_packets is not None:
            parts.insert(0, self.no_packets)
        return parts


# what the headline says of each key-log issue ({} its file's name)
_KEYLOG_WORDS = {"keylog_unreadable": "key log {} could not be read", "keylog_no_secrets": "key log {} holds no secret",
                 "keylog_damaged": "key log {} read in part"}


def _sides(c: Completeness) -> tuple[_Side, _Side]:
    """(the page's counts, background traffic's): the connections of
    ``c.background_connections`` are background's, everything else (the capture's own
    issues included) the page's."""
    page, bg = _Side(), _Side()
    bgc = set(c.background_connections)
    page.joined = len(c.joined_midway)
    page.unknown_url, page.unknown, page.unknown_authority = c.unknown_url, c.requests_unknown, c.unknown_authority
    page.unknown_status = c.response_status_unknown
    page.unknown_background, page.unknown_body = c.unknown_background, c.unknown_body
    page.bytes_lost, page.cut_short, page.not_decrypted = c.bytes_lost, c.cut_short, len(c.not_decrypted)
    page.warnings = len(c.warnings)
    page.keylog = [_KEYLOG_WORDS[i.kind].format(os.path.basename(i.file or "")) for i in c.issues if i.kind in _KEYLOG_WORDS]
    page.joined_tied = sum(1 for i in c.issues if i.kind == "joined_midway" and i.whose == "page")
    for i in c.issues:
        if i.kind == "joined_midway" and i.whose == "page" and i.log is not None:
            page.joined_logged[i.log["kind"]] = page.joined_logged.get(i.log["kind"], 0) + 1
    page.records_failed = sum(1 for cc in c.per_connection.values() if cc.record_failed is not None)
    page.requests_not_decrypted = c.requests_not_decrypted
    nop = next((i for i in c.issues if i.kind == "no_packets"), None)
    if nop is not None:
        page.no_packets = nop.detail.split(",", 1)[0]
    for cid in bgc:
        cc = c.per_connection.get(cid)
        if cc is None:
            continue
        if cc.joined_midway:
            bg.joined += 1
            bg.joined_idle += cc.requests == 0
            bg.joined_protos.add(_proto_name(cc.protocol))
        bg.unknown_url += cc.unknown_url
        bg.unknown += cc.unknown_requests
        bg.unknown_authority += cc.unknown_authority
        bg.unknown_status += cc.response_status_unknown
        bg.unknown_body += cc.unknown_body
        bg.bytes_lost += cc.bytes_lost
        bg.cut_short += cc.cut_short
        bg.not_decrypted += cc.not_decrypted is not None
        bg.records_failed += cc.record_failed is not None
        bg.requests_not_decrypted += cc.requests_not_decrypted
    page.joined -= bg.joined + len(c.owner_unknown_connections)  # (said apart: ``_owner_unknown_text``)
    page.records_failed -= bg.records_failed
    page.requests_not_decrypted -= bg.requests_not_decrypted
    page.unknown_url -= bg.unknown_url
    page.unknown -= bg.unknown
    page.unknown_authority -= bg.unknown_authority
    page.unknown_status -= bg.unknown_status
    page.unknown_background = max(page.unknown_background - bg.unknown, 0)
    page.unknown_body -= bg.unknown_body
    page.bytes_lost -= bg.bytes_lost
    page.cut_short -= bg.cut_short
    page.not_decrypted -= bg.not_decrypted
    for cids in c.budgets_hit.values():
        if all(cid in bgc for cid in cids):
            bg.budgets += 1
        else:
            page.budgets += 1
    return page, bg


def _owner_unknown_text(c: Completeness) -> str | None:
    """The part of the headline for the connections joined mid-way with no request seen whose
    owner nothing says: "1 QUIC connection joined mid-way, no request seen: whose it is is unknown"."""
    ids = c.owner_unknown_connections
    if not ids:
        return None
    protos = {_proto_name(c.per_connection[i].protocol) for i in ids if i in c.per_connection}
    proto = next(iter(protos)) + " " if len(protos) == 1 and "" not in protos else ""
    one = len(ids) == 1
    return (f"{plural(len(ids), proto + 'connection')} joined mid-way, no request seen: "
            + ("whose it is is unknown" if one else "whose they are is unknown"))


def _headline(c: Completeness) -> str:
    if c.complete and not c.connections and not c.requests:  # (an empty capture: "0 connections seen from the start" read oddly)
        return "Complete: no connection or request in the capture (nothing of one can be missing)"
    if c.complete:
        return (f"Complete: {plural(c.connections, 'connection')} seen from the start, {plural(c.requests, 'request')} "
                "with every field known, no byte missing from the capture, nothing left encrypted")
    page, bg = _sides(c)
    bg_parts = bg.parts(background=True) if c.background_connections else []
    # (neither the page's nor background traffic's: what the capture cannot know is said so)
    rest = [t for t in (_owner_unknown_text(c), "background traffic (not the page's): " + ", ".join(bg_parts) if bg_parts else None) if t]
    if c.page_complete and rest:  # (never "Incomplete" for what is not the page's; never silent about it either)
        return (f"Page complete: its {plural(c.page_requests, 'request')} with every field known, their connections seen "
                "from the start; " + "; ".join(rest))
    return "Incomplete: " + ", ".join(page.parts()) + "".join("; " + t for t in rest)


def headline(an: Analysis) -> str:
    """One line for status bars and image subtitles: "Complete: …", "Incomplete: …" (the page's
    part first, then background traffic's), or "Page complete: …; background traffic (not the
    page's): …" when only background traffic is partial."""
    return _headline(compute(an))


def to_dict(c: Completeness) -> dict[str, Any]:
    """The ``completeness`` object of ``summary --json`` and ``stats --json`` (docs/JSON.md)."""
    return {
        "complete": c.complete,
        "page_complete": c.page_complete,
        "headline": _headline(c),
        "connections": c.connections,
        "requests": c.requests,
        "joined_midway": list(c.joined_midway),
        "requests_on_joined": c.requests_on_joined,
        "requests_unknown": c.requests_unknown,
        "requests_unknown_background": c.unknown_background,
        "background_connections": list(c.background_connections),
        "owner_unknown_connections": list(c.owner_unknown_connections),
        "requests_not_decrypted": c.requests_not_decrypted,
        "unknown": {"url": c.unknown_url, "method": c.unknown_method, "status": c.unknown_status, "headers": c.unknown_headers,
                    "body": c.unknown_body, "authority": c.unknown_authority, "response_status": c.response_status_unknown},
        "bytes_lost": c.bytes_lost,
        "gaps": c.gaps,
        "not_decrypted": {str(k): v for k, v in c.not_decrypted.items()},
        "budgets_hit": {k: list(v) for k, v in c.budgets_hit.items()},
        "cut_short": c.cut_short,
        "warnings": list(c.warnings),
        "issues": [{"kind": i.kind, "connection": i.connection, "count": i.count, "detail": i.detail, "next_step": i.next_step,
                    "background": i.background, **({"file": i.file} if i.file is not None else {}),
                    **({"whose": i.whose} if i.whose is not None else {}), **({"tie": i.tie} if i.tie is not None else {}),
                    **({"log": i.log} if i.log is not None else {})}
                   for i in c.issues],
        "per_connection": [
            {"id": p.id, "requests": p.requests, "joined_midway": p.joined_midway, "unknown_requests": p.unknown_requests,
             "unknown": {"url": p.unknown_url, "method": p.unknown_method, "status": p.unknown_status, "headers": p.unknown_headers,
                         "body": p.unknown_body, "authority": p.unknown_authority, "response_status": p.response_status_unknown},
             "bytes_lost": p.bytes_lost, "gaps": p.gaps, "not_decrypted": p.not_decrypted, "budgets": list(p.budgets),
             "cut_short": p.cut_short,
             **({"record_failed": p.record_failed, "requests_not_decrypted": p.requests_not_decrypted}
                if p.record_failed is not None else {})}
            for p in c.per_connection.values()
        ],
    }


def render_text(c: Completeness, limit: int = 20) -> list[str]:
    """The headline, then one line per issue (at most ``limit``) with its next step."""
    out = [_headline(c)]
    for i in c.issues[:limit]:
        out.append(f"  - {i.detail}; next: {i.next_step}")
    if len(c.issues) > limit:
        out.append(f"  - … {len(c.issues) - limit} more (--json lists them all)")
    return out


def entry_comment(c: Completeness, e: Exchange) -> str | None:
    """What the HAR entry of ``e`` should say of its completeness, or None."""
    parts = []
    u = c.unknown_exchanges.get(e.id)
    if u:
        parts.append("unknown in the capture: " + ", ".join(u))
    src = e.sources or {}
    low = [w for w, k in (("request", "request_body_bytes"), ("response", "response_body_bytes")) if src.get(k) == "lower_bound"]
    if low:  # the HAR's bodySize stays the number counted; the comment says it is a lower bound
        parts.append(f"{' and '.join(low)} bodySize is a lower bound: not all of its bytes are in the capture (joined mid-way, "
                     "or cut by the capture's end or a limit)")
    if src.get("response_body_decoded_bytes") == "lower_bound":  # (decoded from a body cut short, or stopped at a limit)
        parts.append("response content size is a lower bound: " + ("decoded from the part of the body in the capture"
                     if src.get("response_body_bytes") == "lower_bound" else "its decoding stopped at a limit"))
    p = c.per_connection.get(e.connection)
    if p is not None:
        if p.joined_midway:
            parts.append("its connection was opened before the capture started")
        if p.bytes_lost:
            parts.append(f"its connection lost {p.bytes_lost} bytes in the capture")
        if p.not_decrypted:
            parts.append(f"its connection was not decrypted ({p.not_decrypted})")
        if p.record_failed is not None and u:
            parts.append(f"its connection's decryption stopped at a TLS record that did not decrypt (packet {p.record_failed}; "
                         "damaged bytes or a wrong key): what it lacks may be in the capture, not decrypted")
    return "; ".join(parts) if parts else None
