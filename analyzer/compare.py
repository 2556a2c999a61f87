"""Compare two captures of the same page: requests matched one by one, and the page-level
table in the SPDY whitepaper's form (A, B, the difference and the speedup (A − B) / A).

Both sides are pages (``analyzer.waterfall.page_of``, as ``wirefall stats`` and ``batch`` count
them): times from the page's start, page requests matched only with page requests, the
background requests of each capture listed apart (``background_a``/``background_b``, with
page_of's reason), never matched, and counted apart in the page table.

Matching: by normalised URL (scheme, host, port without its default, path and query); a
URL loaded several times is matched in order.  When the two captures load the page from
different origins (another host or port, as a lab or staging server does) and matching by
URL finds fewer pairs than matching by path and query, the latter is used and said so.  An
exchange without a URL (a response whose request the capture does not show) is listed as
only-A/only-B with its reason.  Warnings (``warning_items``: kind, side, text) say what makes
the two loads less comparable: a capture not decrypted, incomplete (then no difference or saving
is given: ``withheld`` says why, ``lower_bounds`` which of its figures count only what the capture
holds), different clients (User-Agent), different servers (the responses'
``server``), different header sets, different links (largest frame), retransmissions, a side
that is a browser log (no packets: what it cannot know is unknown, null, never 0).
"""
from __future__ import annotations

from collections import defaultdict, deque
from typing import Any
from urllib.parse import urlsplit

from .model import Analysis, Exchange, no_network_connections, not_sent_of
from .request_detail import ttfb
from .stats import page_once, req_wire, resp_wire
from .waterfall import Page

DEFAULT_PORTS = {"http": 80, "https": 443}
LOW_MATCH = 0.5  # below this share of requests matched, warn that the pages differ


def normalise_url(url: str | None, with_origin: bool = True) -> str:
    if not url:
        return ""
    try:
        u = urlsplit(url)
        port = u.port
    except ValueError:
        return url
    scheme = (u.scheme or "").lower()
    host = (u.hostname or "").lower()
    path = u.path or "/"
    q = f"?{u.query}" if u.query else ""
    if not with_origin:
        return path + q
    netloc = host if port in (None, DEFAULT_PORTS.get(scheme)) else f"{host}:{port}"
    return f"{scheme}://{netloc}{path}{q}"


def _start(e: Exchange) -> float | None:
    return e.request_start if e.request_start is not None else e.response_start


def _ordered(exs: list[Exchange]) -> list[Exchange]:
    """In start order (exchanges without any time last, by id)."""
    return sorted(exs, key=lambda e: (_start(e) is None, _start(e) or 0.0, e.id))


def _match(a: list[Exchange], b: list[Exchange], with_origin: bool):
    """Pairs by normalised URL (a URL loaded several times: in order).  An exchange without a
    URL (a response whose request the capture does not show) has nothing to be matched by: it
    stays unmatched, with its reason (``NO_URL``); nor has a browser log's request that never
    reached the network (a cache hit, a failure before sending: ``not_sent_of``), whose times and
    bytes are no load's (``NOT_SENT``)."""
    norm = _normaliser(with_origin)
    queues: dict[str, deque] = defaultdict(deque)
    for e in b:
        if e.url and not not_sent_of(e.browser):
            queues[norm(e.url)].append(e)
    pairs, only_a = [], []
    for e in a:
        q = queues.get(norm(e.url)) if e.url and not not_sent_of(e.browser) else None
        if q:
            pairs.append((e, q.popleft()))
        else:
            only_a.append(e)
    used = {id(y) for _, y in pairs}
    only_b = [e for e in b if id(e) not in used]
    return pairs, only_a, only_b


def _normaliser(with_origin: bool):
    """``normalise_url(url, with_origin)``, each distinct URL normalised once (a request-heavy
    capture asks for the same few URLs again and again)."""
    memo: dict[str, str] = {}

    def norm(url: str) -> str:
        n = memo.get(url)
        if n is None:
            n = memo[url] = normalise_url(url, with_origin)
        return n

    return norm


NO_URL = "no URL: the capture holds this response but not its request, so it cannot be matched"
NOT_IN = "no request for this URL in {side}"
# the other side has connections not decrypted, or its page is otherwise incomplete: the request
# may be in what it does not show
NOT_IN_UNDECRYPTED = ("no request for this URL in what {side} shows: {side} has {n} not decrypted: "
                      "the URL may be there")
NOT_IN_INCOMPLETE = ("no request for this URL in {side}, whose page is incomplete: the request may be in what "
                     "its capture does not hold")


def not_sent_reason(e: Exchange) -> str | None:
    """Why a browser log's request is no load's: "not sent by the browser (from the disk
    cache)", "not sent by the browser (failed: ERR_CONNECTION_REFUSED)" — its browser record's
    ``not_sent`` (``model.not_sent_of``, the label `wirefall requests` shows in its status
    column) and net error; None for a request that reached the network."""
    ns = not_sent_of(e.browser)
    if ns is None:
        return None
    err = e.browser.get("error") if isinstance(e.browser, dict) else None
    what = f"from the {ns}" if ns.endswith("cache") else ns
    if isinstance(err, str) and err and not ns.endswith("cache"):
        what += f": {err[:80]}"
    return f"not sent by the browser ({what})"


def _and_not_sent(why: str, e: Exchange) -> str:
    """A background row's reason, with ``not_sent_reason`` where the browser never sent it."""
    ns = not_sent_reason(e)
    return f"{why}; {ns}" if ns else why


def response_state(e: Exchange) -> str:
    """How much of ``e``'s response the capture (or log) holds: ``"complete"`` (its last byte),
    ``"cut"`` (it began, but its end is not in the capture — no ``response_end``, or a body size
    that is only a lower bound: the capture ends inside it), ``"none"`` (sent, no response in
    the capture), ``"reset"`` (the stream or connection was reset before its end) or
    ``"not_sent"`` (a browser log's request that never reached the network)."""
    if not_sent_of(e.browser):
        return "not_sent"
    if e.response_end is not None and (e.sources or {}).get("response_body_bytes") != "lower_bound":
        return "complete"
    if e.reset:
        return "reset"
    return "none" if e.response_start is None else "cut"


def _side(e: Exchange, t0: float, reason: str | None = None) -> dict[str, Any]:
    s = _start(e)
    state = response_state(e)
    # a response whose end the capture does not hold has no duration ("–"), not its TTFB (before
    # 2026-12-04 the end fell back to the response's start) nor the part of its body captured
    end = e.response_end if state in ("complete", "reset") else None
    return {
        "exchange": e.id,
        "url": e.url,
        "protocol": e.protocol,
        "connection": e.connection,
        "stream_id": e.stream_id,
        "status": e.status,
        "start": None if s is None else s - t0,  # (from the page's start: analyzer.waterfall.page_of)
        # the request's last byte to the response's first (request_detail.ttfb: `requests`' "ttfb
        # ms", the detail's "Waiting (TTFB)", a HAR's timings.wait); before 2026-12-05 from the
        # request's first byte, an upload's send counted in, and 0 where the request is not in
        # the capture
        "ttfb": ttfb(e),
        "duration": None if s is None or end is None else end - s,
        "bytes": e.response_body_bytes,
        # (HTTP/3: QPACK encoder-stream bytes included; a browser log's exchange has none: unknown)
        "header_bytes_wire": None if (e.sources or {}).get("request_header_bytes_wire") == "unknown" else req_wire(e) + resp_wire(e),
        "pushed": e.pushed,
        "reason": reason,
        "response": state,
    }


def _diff(a, b):
    return None if a is None or b is None else b - a


def _bytes_diff(sa: dict, sb: dict) -> dict:
    """No bytes difference where a side's response is not whole (``cut``, ``none``: its bytes
    are the capture's, not the response's): B − A of a cut hero.jpg read -40,000 bytes."""
    return {"bytes": None} if sa.get("response") in ("cut", "none") or sb.get("response") in ("cut", "none") else {}


def _speedup(a, b):
    return None if a in (None, 0) or b is None else (a - b) / a


def split_page(an: Analysis, page: Page | None = None) -> tuple[Page, list[Exchange], list[Exchange]]:
    """The page (``analyzer.waterfall.page_of``: what ``stats``, the waterfall and ``batch``
    count), its exchanges and the background exchanges, in the model's order."""
    if page is None:
        page = page_once(an)  # (page_of, with the phases made only for the rows that need them)
    bg = page.background
    if not bg:
        return page, list(an.exchanges), []
    return page, [e for e in an.exchanges if e.id not in bg], [e for e in an.exchanges if e.id in bg]


def _page_t0(an: Analysis, page: Page) -> float:
    """Where the page's times start: its first row (``page.start``), else the capture's first
    packet — as ``wirefall stats`` measures the page's TTFB and load time; for a browser log
    opened alone (no packet), its first connection's start (``Analysis.start_time``)."""
    return page.start if page.start is not None else an.start_time


def retransmitted(an: Analysis, conns: list) -> tuple[list[int], list[int]]:
    """The data the connections ``conns`` carried again, per direction ``[c2s, s2c]``: (the
    data's bytes, the wire bytes to take off the ``bytes`` rows for the data carried once).

    TCP: the segments whose bytes the capture had already carried — ``wirefall stats``'
    ``retransmissions`` and ``retransmitted_bytes`` (TCP payload), the packets tshark marks
    ``tcp.analysis.retransmission`` that repeat captured bytes; a segment that filled a hole
    left by a loss before the capture point repeats nothing the capture holds and is not one
    (tshark marks it too: ``stats``' ``tcp_retransmissions``).  Their wire bytes are the
    frames' lengths (``frame.len``); beyond the first ``DirStats.MAX_LISTED`` of a
    connection's direction, the payload plus the direction's mean header bytes per packet.
    QUIC (decrypted): the STREAM and CRYPTO bytes received again (``quic_stats``); QUIC sends
    them in new packets beside other frames, so only those bytes are taken off."""
    data, wire = [0, 0], [0, 0]
    origlen = an.index.origlen
    n = len(an.index)
    for c in conns:
        for d in (0, 1):
            st = c.stats[d]
            if st.retransmissions:
                data[d] += st.retransmitted_bytes
                listed = [k for k in st.retransmission_packets if 1 <= k <= n]
                w = int(sum(int(origlen[k - 1]) for k in listed))
                rest = st.retransmissions - len(listed)
                if rest > 0:
                    per = (st.bytes - st.payload) / st.packets if st.packets else 0.0
                    w += round(st.retransmitted_bytes * rest / st.retransmissions + rest * per)
                wire[d] += w
        q = (an.quic_stats or {}).get(c.id) if getattr(c, "transport", None) == "udp" else None
        if isinstance(q, dict):
            for d in (0, 1):
                dup = sum(int((q.get(k) or (0, 0))[d] or 0) for k in ("stream_dup_bytes", "crypto_dup_bytes"))
                data[d] += dup
                wire[d] += dup
    return data, wire


def tcp_retransmissions(an: Analysis, conns: list) -> tuple[list[int], list[int]] | None:
    """The TCP retransmissions of the connections ``conns`` as tshark counts them, per direction
    ``[c2s, s2c]``: (segments, their TCP payload bytes — tshark's ``tcp.len``).  The segments are
    those tshark's TCP analysis flags ``tcp.analysis.retransmission`` (``analyzer.tcp_analysis``;
    fast and spurious retransmissions included, as tshark sets the field on them too), whether
    or not the capture carried their bytes before: a segment lost before the capture point and
    sent again is a retransmission the capture carries once (it is not in ``retransmitted``).
    What ``wirefall stats`` counts in its ``retrans`` column (``tcp_retransmissions``).  The
    segments' lengths and senders are read again from the capture.  None when no connection of
    ``conns`` is TCP, the analysis is a browser log's (no packets) or its capture cannot be read
    again."""
    tcp = [c for c in conns if getattr(c, "transport", None) == "tcp"]
    if not tcp or (getattr(an, "source", "capture") or "capture") != "capture" or not len(an.index):
        return None
    import os

    from .capture import PacketSource
    from .packet import Decoded, Decoder, addr_str
    from .tcp_analysis import finished, retransmissions_of, tcp_analysis

    segs, data = [0, 0], [0, 0]
    source = None
    try:
        ta = finished(an)
        if ta is None:
            if not an.path or not os.path.isfile(an.path):
                return None
            source = PacketSource(an.path)
            ta = tcp_analysis(an, source)
        idx = an.index
        dec = Decoder()
        for c in tcp:
            hits = retransmissions_of(an, ta, c)
            if not hits:
                continue
            if source is None:
                if not an.path or not os.path.isfile(an.path):
                    return None
                source = PacketSource(an.path)
            client = (str(c.client[0]), int(c.client[1]))
            for k, d, _f in hits:
                i = k - 1
                flen = int(idx.origlen[i])
                raw = source.read(int(idx.offset[i]), int(idx.caplen[i]))
                try:
                    p = dec.decode(int(idx.linktype[i]), raw)
                except (IndexError, ValueError):
                    p = None
                n = 0
                if type(p) is Decoded:
                    if (addr_str(p.src), p.sport) == client:
                        d = 0
                    elif d is None:
                        d = 1
                    if p.l4_off < 0:  # (a datagram reassembled from IPv4 fragments: all of it is here)
                        n = len(p.payload)
                    else:
                        end = min(p.l3_end if p.l3_end >= 0 else flen, flen)  # (tshark's reported length, as tcp_analysis)
                        n = max(0, end - p.l4_off - (raw[p.l4_off + 12] >> 4) * 4)
                segs[d or 0] += 1
                data[d or 0] += n
    except (OSError, ValueError, EOFError):  # the capture changed or went away
        return None
    finally:
        if source is not None:
            source.close()
    return segs, data


def browser_events(an: Analysis, t0: float | None) -> dict[str, float]:
    """The browser's page events — a HAR's ``onLoad`` and ``onContentLoad`` (the load event,
    DOMContentLoaded), of a HAR laid over the capture or of a HAR side — in seconds from
    ``t0``, placed on the capture's clock as ``wirefall stats`` places them
    (``stats --json``'s ``browser_events``: ``waterfall.browser_milestones``); of several
    pages placed, the first's.  {} when no log gives them."""
    if t0 is None or not (isinstance(an.browser, dict) and an.browser.get("pages")):
        return {}
    from .waterfall import browser_milestones

    idx = an.index
    ends = [e.response_end for e in an.exchanges if e.response_end is not None]
    t_end = max([float(idx.ts[-1]) if len(idx) else t0] + ends)
    out: dict[str, float] = {}
    for m in browser_milestones(an, float(idx.ts[0]) if len(idx) else t0, t_end):
        out.setdefault(m.name, m.time - t0)
    return out


def page_figures(an: Analysis, page: Page | None = None,
                 split: tuple[Page, list[Exchange], list[Exchange]] | None = None, tcp_analysis: bool = False) -> dict[str, Any]:
    """The whitepaper's page-level quantities for one capture, of the page alone
    (``analyzer.waterfall.page_of``, as ``wirefall stats`` and ``wirefall batch`` count it):
    page load time (the page's last response byte) and TTFB from the page's start (its first
    row, not the capture's first packet), the browser's load event and DOMContentLoaded where a
    browser log gives them (``browser_events``), its requests, the connections that carried
    them and their packets and bytes (retransmissions included; the data carried again and the
    bytes without it beside them: ``retransmitted``), and its requests' header bytes.  With
    ``tcp_analysis`` (``compare`` asks for it: a pass over the capture's TCP headers), the TCP
    retransmissions as tshark counts them (``tcp_retransmissions``: segments and their payload;
    None where it cannot be had), four keys that are absent without it (``batch`` and the lab's
    stored figures do not make that pass).

    Nothing is left out unsaid: the background requests (another program's, another host's, a
    long-poll open before the page: ``page.background``) and the connections that carried only
    them are counted apart (``background_requests``, ``background_connections``,
    ``background_bytes`` both ways), and so are web connections that carried no request at all
    — a preconnect never used, a handshake the browser dropped, a connection not decrypted —
    (``connections_without_requests`` and their ``bytes_without_requests``, both ways); DNS and
    unrecognised flows are neither.  ``split``: ``split_page(an, page)``, when the caller has it."""
    from .stats import Block, _times

    page, page_exs, bg_exs = split_page(an, page) if split is None else split
    # a browser log's requests that never reached the network (a cache hit, a failure before
    # sending) are rows of the page but no connection's, protocol's or request count's:
    # ``not_sent_requests`` (before 2026-12-04 a NetLog's counted as an HTTP/1.1 connection)
    no_net = no_network_connections(an)
    web = {e.connection for e in page_exs} - no_net
    bg_only = {e.connection for e in bg_exs} - web
    conns = [c for c in an.connections if c.id in web]
    # a connection without a request that the completeness calls background traffic is background
    # here too, not the page's unused one; one joined mid-way with no request seen (a QUIC keep-alive:
    # amazon's to Google) is of unknown owner there and here — neither the page's nor background
    # (since 2026-12-05; before, background: a connection cut from the page's early requests read so)
    from .completeness import compute as completeness

    cc = completeness(an)
    bg_quiet = set(cc.background_connections) - web
    unknown_owner = set(cc.owner_unknown_connections) - web - bg_quiet
    bgc = [c for c in an.connections if c.id in bg_only or c.id in bg_quiet]
    unk = [c for c in an.connections if c.id in unknown_owner and c.id not in bg_only]
    idle = [c for c in an.connections if c.id not in web and c.id not in bg_only and c.id not in bg_quiet
            and c.id not in unknown_owner and c.protocol not in (None, "dns")]
    blk = Block(name="page")
    _times(blk, page_exs, _page_t0(an, page))  # (the definition of `stats`' capture block, on the same requests)
    # the page's requests' sums, in one pass (every one an integer)
    req_w = req_d = resp_w = resp_d = req_q = resp_q = requests = pushes = 0
    protocols = set()
    not_sent = 0
    for e in page_exs:
        if e.connection in no_net:
            not_sent += 1
            continue
        req_q += e.request_qpack_encoder_bytes
        resp_q += e.response_qpack_encoder_bytes
        req_w += e.request_header_bytes_wire
        resp_w += e.response_header_bytes_wire
        req_d += e.request_header_bytes_decoded
        resp_d += e.response_header_bytes_decoded
        if e.pushed:
            pushes += 1
        else:
            requests += 1
        protocols.add(e.protocol)
    req_w += req_q  # (req_wire, resp_wire: HTTP/3's QPACK encoder-stream bytes included)
    resp_w += resp_q
    t0 = _page_t0(an, page)
    events = browser_events(an, t0)
    rx_data, rx_wire = retransmitted(an, conns)
    tsh = tcp_retransmissions(an, conns) if tcp_analysis else None
    bytes_dir = [sum(c.stats[d].bytes for c in conns) for d in (0, 1)]
    return {
        "page_load_time": blk.page_load_time,
        "load_event": events.get("load_event"),
        "dom_content_loaded": events.get("dom_content_loaded"),
        "ttfb": blk.ttfb,
        "connections": len(conns),
        "connections_without_requests": len(idle),
        "bytes_without_requests": sum(c.stats[0].bytes + c.stats[1].bytes for c in idle),
        "background_connections": len(bgc),
        "background_bytes": sum(c.stats[0].bytes + c.stats[1].bytes for c in bgc),
        "owner_unknown_connections": len(unk),
        "owner_unknown_bytes": sum(c.stats[0].bytes + c.stats[1].bytes for c in unk),
        "requests": requests,
        "background_requests": len(bg_exs),
        "not_sent_requests": not_sent,
        "pushes": pushes,
        "packets_c2s": sum(c.stats[0].packets for c in conns),
        "packets_s2c": sum(c.stats[1].packets for c in conns),
        "bytes_c2s": bytes_dir[0],
        "bytes_s2c": bytes_dir[1],
        **({"tcp_retransmissions_c2s": None if tsh is None else tsh[0][0],
            "tcp_retransmissions_s2c": None if tsh is None else tsh[0][1],
            "tcp_retransmitted_bytes_c2s": None if tsh is None else tsh[1][0],
            "tcp_retransmitted_bytes_s2c": None if tsh is None else tsh[1][1]} if tcp_analysis else {}),
        "retransmitted_bytes_c2s": rx_data[0],
        "retransmitted_bytes_s2c": rx_data[1],
        "bytes_c2s_without_retransmissions": bytes_dir[0] - rx_wire[0],
        "bytes_s2c_without_retransmissions": bytes_dir[1] - rx_wire[1],
        "request_header_bytes_wire": req_w,
        "request_header_bytes_decoded": req_d,
        "response_header_bytes_wire": resp_w,
        "response_header_bytes_decoded": resp_d,
        "request_header_compression": (1 - req_w / req_d) if req_d else None,
        "response_header_compression": (1 - resp_w / resp_d) if resp_d else None,
        "request_qpack_encoder_bytes": req_q,
        "response_qpack_encoder_bytes": resp_q,
        "protocols": sorted(protocols),
    }


PAGE_ROWS = [
    ("page_load_time", "page load time: last response byte (s)"),
    ("load_event", "browser load event, onload (s)"),
    ("dom_content_loaded", "browser DOMContentLoaded (s)"),
    ("connections", "connections"),
    ("connections_without_requests", "  web connections without a request"),
    ("bytes_without_requests", "  their bytes, both ways (not in the rows below)"),
    ("background_connections", "  background connections (not the page's)"),
    ("background_bytes", "  their bytes, both ways (not in the rows below)"),
    ("owner_unknown_connections", "  joined mid-way, no request seen: whose unknown"),
    ("owner_unknown_bytes", "  their bytes, both ways (not in the rows below)"),
    ("requests", "requests"),
    ("background_requests", "  background requests (not the page's, listed apart)"),
    ("pushes", "pushes"),
    ("packets_c2s", "packets client→server"),
    ("packets_s2c", "packets server→client"),
    ("bytes_c2s", "bytes client→server (wire, retransmissions in)"),
    ("bytes_s2c", "bytes server→client (wire, retransmissions in)"),
    ("tcp_retransmissions_c2s", "  TCP retransmissions client→server (tshark's, segments)"),
    ("tcp_retransmissions_s2c", "  TCP retransmissions server→client (tshark's, segments)"),
    ("tcp_retransmitted_bytes_c2s", "    their TCP payload client→server (bytes)"),
    ("tcp_retransmitted_bytes_s2c", "    their TCP payload server→client (bytes)"),
    ("retransmitted_bytes_c2s", "  data the capture carried twice client→server"),
    ("retransmitted_bytes_s2c", "  data the capture carried twice server→client"),
    ("bytes_c2s_without_retransmissions", "bytes client→server less the data carried twice"),
    ("bytes_s2c_without_retransmissions", "bytes server→client less the data carried twice"),
    ("request_header_bytes_wire", "request header bytes (wire)"),
    ("request_header_bytes_decoded", "request header bytes (decoded)"),
    ("response_header_bytes_wire", "response header bytes (wire)"),
    ("response_header_bytes_decoded", "response header bytes (decoded)"),
    ("request_qpack_encoder_bytes", "  of the request wire: QPACK encoder stream"),
    ("response_qpack_encoder_bytes", "  of the response wire: QPACK encoder stream"),
    ("request_header_compression", "request header compression"),
    ("response_header_compression", "response header compression"),
    ("log_bytes_in", "HAR page's own _bytesIn"),
    ("log_bytes_out", "HAR page's own _bytesOut"),
    ("log_connections", "HAR page's own _connections"),
]
# rows without a saving: ratios (their difference is in points), what is not the page's, and the
# retransmissions (fewer of them is no "saving" of the page: their difference says it)
RETRANSMISSION_ROWS = ("tcp_retransmissions_c2s", "tcp_retransmissions_s2c", "tcp_retransmitted_bytes_c2s",
                       "tcp_retransmitted_bytes_s2c", "retransmitted_bytes_c2s", "retransmitted_bytes_s2c")
NO_SPEEDUP = frozenset({"request_header_compression", "response_header_compression", "background_connections",
                        "background_bytes", "background_requests", "owner_unknown_connections", "owner_unknown_bytes",
                        *RETRANSMISSION_ROWS})
# rows the text table shows only when a side has a value (a browser log's)
OPTIONAL_ROWS = frozenset({"load_event", "dom_content_loaded", "log_bytes_in", "log_bytes_out", "log_connections"})
# what a browser log (HAR, NetLog, qlog: no packet) cannot know: unknown (null, "–"), never 0
NO_PACKETS = ("packets_c2s", "packets_s2c", "bytes_c2s", "bytes_s2c", "tcp_retransmissions_c2s", "tcp_retransmissions_s2c",
              "tcp_retransmitted_bytes_c2s", "tcp_retransmitted_bytes_s2c", "retransmitted_bytes_c2s", "retransmitted_bytes_s2c",
              "bytes_c2s_without_retransmissions", "bytes_s2c_without_retransmissions", "connections_without_requests",
              "bytes_without_requests", "background_bytes", "owner_unknown_bytes")
HEADER_BYTES = ("request_header_bytes_wire", "request_header_bytes_decoded", "response_header_bytes_wire",
                "response_header_bytes_decoded", "request_header_compression", "response_header_compression",
                "request_qpack_encoder_bytes", "response_qpack_encoder_bytes")
# a HAR page's own figures (WebPageTest's page record): page key -> the HAR's field
LOG_PAGE_FIELDS = {"log_bytes_in": "_bytesIn", "log_bytes_out": "_bytesOut", "log_connections": "_connections"}
FRAME_RATIO = 2.0  # largest frames this many times apart: the links (or their offloads) differ


def _user_agent(e: Exchange | None) -> str | None:
    if e is None:
        return None
    return next((v for k, v in e.request_headers if k.lower() == "user-agent"), None)


def _page_agent(page: Page, page_exs: list[Exchange]) -> str | None:
    """The User-Agent of the page's first request: its document's, else the first page
    request (in start order) that sends one."""
    doc = next((e for e in page_exs if e.id == page.document), None)
    ua = _user_agent(doc)
    if ua is None:
        ua = next((u for e in _ordered(page_exs) if (u := _user_agent(e)) is not None), None)
    return ua


def _esc(v: str, limit: int = 80) -> str:
    """A value from the capture (a header's name or value) fit for a line of text: as it is
    when printable, else its repr's escapes; at most ``limit`` characters."""
    t = v if v.isprintable() else repr(v)[1:-1]
    return t if len(t) <= limit else t[:limit - 1] + "…"


def _servers(page_exs: list[Exchange]) -> list[tuple[str, int]]:
    """The responses' ``server`` values and how many responses name each, the most common
    first (ties: the first seen, in start order)."""
    seen: dict[str, int] = {}
    for e in _ordered(page_exs):
        v = next((v for k, v in e.response_headers if k.lower() == "server"), None)
        if v is not None:
            seen[v] = seen.get(v, 0) + 1
    order = {v: i for i, v in enumerate(seen)}
    return sorted(seen.items(), key=lambda kv: (-kv[1], order[kv[0]]))


# header fields a protocol itself decides (not the client's or server's software): the
# connection's own, HTTP/1's Host (h2/h3's :authority), h2/h3's Priority (RFC 9218) and
# SPDY/2's request and status line as plain fields; pseudo-headers (":…") are never counted
CONNECTION_FIELDS = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "host",
                               "priority"})
SPDY2_FIELDS = frozenset({"method", "url", "version", "scheme", "status"})
HEADERS_DIFFER = 2  # usual fields of one side that none of the other side's messages has: from this many, warn
NAMES_LISTED = 8


def _header_names(exs: list[Exchange], response: bool) -> tuple[int, dict[str, int]]:
    """(messages with headers, field name -> messages that have it) of the page's requests or
    responses, leaving out pseudo-headers and ``CONNECTION_FIELDS``."""
    n = 0
    names: dict[str, int] = {}
    for e in exs:
        hs = e.response_headers if response else e.request_headers
        if not hs:
            continue
        n += 1
        skip = CONNECTION_FIELDS | (SPDY2_FIELDS if (e.protocol or "").startswith("spdy/2") else frozenset())
        for k in {k.lower() for k, _v in hs}:
            if not k.startswith(":") and k not in skip:
                names[k] = names.get(k, 0) + 1
    return n, names


def _headers_lacking(a: tuple[int, dict[str, int]], b: tuple[int, dict[str, int]]) -> list[str]:
    """The fields at least half of one side's messages have that none of the other's has."""
    return sorted(k for k, c in a[1].items() if 2 * c >= a[0] and not b[1].get(k))


def _har_page_fields(an: Analysis) -> dict[str, Any]:
    """A HAR's own page record for the page compared (the page shown, or the page laid over
    the capture): its numeric fields of ``LOG_PAGE_FIELDS`` and its load times
    (``onLoad``, WebPageTest's ``_loadTime`` and ``_fullyLoaded``, in ms from its
    ``startedDateTime``), those it has (a negative value, WebPageTest's "none", left out).
    The HAR is read again: ``Analysis.browser`` keeps only the page's id, title and times."""
    b = an.browser if isinstance(an.browser, dict) else {}
    log = next((lg for lg in b.get("logs") or () if isinstance(lg, dict) and lg.get("kind") == "har"
                and isinstance(lg.get("file"), str)), None)
    if log is None:
        return {}
    pid = next((p.get("id") for p in b.get("pages") or () if isinstance(p, dict) and p.get("source") == "har"), None)
    from .browserlog.detect import BrowserLogError, read_text

    try:
        import json

        pages = json.loads(read_text(log["file"])[0])["log"]["pages"]
    except (BrowserLogError, OSError, ValueError, KeyError, TypeError, RecursionError):
        return {}
    if not isinstance(pages, list):
        return {}
    rec = next((p for p in pages if isinstance(p, dict) and pid is not None and p.get("id") == pid), None)
    if rec is None and pid is None and len(pages) == 1 and isinstance(pages[0], dict):
        rec = pages[0]
    if rec is None:
        return {}
    pt = rec.get("pageTimings")
    pt = pt if isinstance(pt, dict) else {}
    out: dict[str, Any] = {"id": pid}
    for k, v in [(f, rec.get(f)) for f in (*LOG_PAGE_FIELDS.values(), "_loadTime", "_fullyLoaded")] + [("onLoad", pt.get("onLoad"))]:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0:
            out[k] = v
    return out


def _log_facts(an: Analysis, fig: dict[str, Any]) -> dict[str, Any] | None:
    """A side that is a browser log (HAR, NetLog, qlog): which, which of its pages, the
    figures it cannot know (``unknown``: page key -> why) and its HAR page's own fields."""
    b = an.browser if isinstance(an.browser, dict) else {}
    logs = [lg for lg in b.get("logs") or () if isinstance(lg, dict)]
    source = getattr(an, "source", "capture") or "capture"
    har = _har_page_fields(an)
    if source == "capture" and not har:
        return None
    log = logs[0] if logs else {}
    shown = log.get("page_shown") if isinstance(log.get("page_shown"), dict) else None
    unknown: dict[str, str] = {}
    if source != "capture":
        for k in NO_PACKETS:
            unknown[k] = "a browser log has no packets"
        own = str(log.get("creator") or "").startswith("wirefall")  # (wirefall's HAR: its own wire and decoded sizes)
        for k in HEADER_BYTES:
            if not own:
                unknown[k] = ("a HAR's headersSize is the browser's uncompressed HTTP/1-style size, not wire bytes; "
                              "no decoded size" if source == "har" else "the log gives no header sizes")
            elif "qpack" in k or ("h3" in fig["protocols"] and ("wire" in k or "compression" in k)):
                unknown[k] = "wirefall's HAR does not carry the QPACK encoder-stream bytes"
    return {"kind": source, "creator": log.get("creator"), "page": shown.get("notice") if shown else None,
            "page_number": shown.get("number") if shown else None, "unknown": unknown, "har_page": har}


def _facts(an: Analysis, page: Page, page_exs: list[Exchange], bg_exs: list[Exchange], fig: dict[str, Any]) -> dict[str, Any]:
    """One side's header: what was compared (the page's requests, the background set apart),
    whether the capture is complete and decrypted, and what tells two loads apart (client,
    link)."""
    from . import completeness

    comp = completeness.compute(an)
    nd = [{"connection": cid, "reason": why} for cid, why in sorted(comp.not_decrypted.items())]
    servers = _servers(page_exs)
    return {
        "file": an.path,
        "protocols": fig["protocols"],
        "requests": len(page_exs),  # (pushes and exchanges without a URL included: every row of the page)
        "background_requests": len(bg_exs),
        "not_sent_requests": fig["not_sent_requests"],  # (of ``requests``: a browser log's that never reached the network)
        "page_start": page.start,
        "complete": comp.complete,
        "completeness": completeness.headline(an),
        "not_decrypted": nd,
        "user_agent": _page_agent(page, page_exs),
        "server": servers[0][0] if servers else None,
        "servers": dict(servers[:10]),
        "max_frame_bytes": int(max(an.index.origlen)) if len(an.index) else None,
        "source": getattr(an, "source", "capture") or "capture",
        "browser_log": _log_facts(an, fig),
    }


# the page figures that count what a capture holds: of a page that is incomplete, the page's own
# can only be larger (its load time: a start no later and an end no earlier; its requests,
# connections, packets and bytes: more of them) — ``lower_bounds``, "≥" in the text table
LOWER_BOUND_ROWS = ("page_load_time", "connections", "requests", "pushes", "packets_c2s", "packets_s2c", "bytes_c2s",
                    "bytes_s2c", "bytes_c2s_without_retransmissions", "bytes_s2c_without_retransmissions",
                    "request_header_bytes_wire", "request_header_bytes_decoded", "response_header_bytes_wire",
                    "response_header_bytes_decoded", "request_qpack_encoder_bytes", "response_qpack_encoder_bytes")


def _page_gaps(an: Analysis, page_exs: list[Exchange], t0: float | None) -> dict[str, Any]:
    """Whether the side's page is whole, and what of it is not: the completeness model's issues
    of the page (``completeness.Completeness.page_complete``: connections not decrypted or joined
    mid-way, bytes lost, fields unknown, frames cut by the capture's end …; a browser log's
    "no packets" is not one — what it cannot know is unknown, null, per figure), and the page's
    responses whose end the capture does not hold (``response_state``: ``cut`` — a body cut by
    the capture's end is not always an issue of the model — or ``none``)."""
    from . import completeness

    issues = _page_issues(an)
    states = [(e.id, response_state(e)) for e in page_exs]
    cut = [i for i, st in states if st == "cut"]
    none = [i for i, st in states if st == "none"]
    parts = []
    if issues:
        # the headline's page part alone: what background traffic misses is not the page's (bg-mixed's
        # page read "incomplete (1 connection not decrypted; background traffic (not the page's): 1
        # request with unknown fields)", a metadata long-poll the capture ends in counted against it)
        page_part = ", ".join(completeness._sides(completeness.compute(an))[0].parts())
        parts.append(page_part or completeness.headline(an).removeprefix("Incomplete: "))
    if cut or none:
        r = []
        if none:
            r.append(f"{len(none)} response{'s' * (len(none) != 1)} not in the capture")
        if cut:
            r.append(f"{len(cut)} cut before {'its' if len(cut) == 1 else 'their'} last byte")
        text = ", ".join(r)
        if len(an.index) and t0 is not None:
            text += f" (its last packet: {float(an.index.ts[-1]) - t0:.3f} s from the page's start)"
        parts.append(text)
    return {"page_complete": not (issues or cut or none), "responses_cut": cut, "responses_missing": none,
            "incomplete": "; ".join(parts) or None}


def _page_issues(an: Analysis) -> list:
    """The completeness model's issues counted against the capture's page: not background
    traffic's, not a browser log's "no packets" (``completeness.Issue``)."""
    from . import completeness

    # (a connection of unknown owner — joined mid-way, no request seen — is not counted against the page,
    # as completeness.page_complete does not: its figures are apart, ``owner_unknown_connections``)
    return [i for i in completeness.compute(an).issues
            if not i.background and i.kind != "no_packets" and getattr(i, "whose", None) != "unknown"]


def page_gaps(an: Analysis) -> dict[str, Any]:
    """``_page_gaps`` of the capture's own page (``split_page``), and its page's exchanges
    (``page_exchanges``) and the issues counted against it (``issues``): what ``compare``
    withholds a side on, for the lab's medians."""
    page, page_exs, _bg = split_page(an)
    g = _page_gaps(an, page_exs, _page_t0(an, page))
    g["page_exchanges"], g["issues"] = page_exs, _page_issues(an)
    return g


def _warn(items: list[dict[str, Any]], kind: str, text: str, side: str | None = None) -> None:
    items.append({"kind": kind, "side": side, "text": text})


def compare(a: Analysis, b: Analysis) -> dict[str, Any]:
    """The two captures' pages compared: page requests matched with page requests, the
    background requests of each listed apart (never matched), every exchange in one list."""
    pg_a, page_a, bg_a = split_page(a)
    pg_b, page_b, bg_b = split_page(b)
    ea, eb = _ordered(page_a), _ordered(page_b)
    pairs, only_a, only_b = _match(ea, eb, True)
    mode = "url"
    if any(e.url for e in ea) and any(e.url for e in eb):
        p2, oa2, ob2 = _match(ea, eb, False)
        if len(p2) > len(pairs):
            pairs, only_a, only_b, mode = p2, oa2, ob2, "path"
    ta, tb = _page_t0(a, pg_a), _page_t0(b, pg_b)
    matched = []
    norm = _normaliser(mode == "url")
    for x, y in pairs:
        sa, sb = _side(x, ta), _side(y, tb)
        matched.append({
            "url": norm(x.url),
            "a": sa,
            "b": sb,
            "diff": {k: _diff(sa[k], sb[k]) for k in ("start", "ttfb", "duration", "bytes", "header_bytes_wire")}
            | _bytes_diff(sa, sb),
        })
    pa = page_figures(a, split=(pg_a, page_a, bg_a), tcp_analysis=True)
    pb = page_figures(b, split=(pg_b, page_b, bg_b), tcp_analysis=True)
    fa, fb = _facts(a, pg_a, page_a, bg_a, pa), _facts(b, pg_b, page_b, bg_b, pb)
    for fig, f in ((pa, fa), (pb, fb)):  # what a browser log cannot know: unknown, not 0; its HAR page's own figures
        lf = f["browser_log"] or {}
        for k in lf.get("unknown") or ():
            fig[k] = None
        har = lf.get("har_page") or {}
        for k, field in LOG_PAGE_FIELDS.items():
            fig[k] = har.get(field)

    items: list[dict[str, Any]] = []
    if mode == "path":
        _warn(items, "different_origins", "the captures load the page from different origins; requests matched by path and query")
    for f, an, pg, exs in ((fa, a, pg_a, page_a), (fb, b, pg_b, page_b)):
        f.update(_page_gaps(an, exs, _page_t0(an, pg)))
    # why no difference or saving is given: a side that shows no page, or whose page is incomplete
    # (its figures then count only what the capture holds: ``lower_bounds``)
    withheld: list[dict[str, Any]] = []
    lower_bounds: dict[str, list[str]] = {"a": [], "b": []}
    for side, f, fig in (("A", fa, pa), ("B", fb, pb)):
        s = side.lower()
        if not f["requests"]:
            withheld.append({"side": s, "kind": "no_requests", "text": f"{side} shows no request of a page"
                             + (" (connections not decrypted)" if f["not_decrypted"] else "")})
        elif not f["page_complete"]:
            withheld.append({"side": s, "kind": "incomplete",
                             "text": f"{side}'s page is incomplete ({f['incomplete']}): its figures count what the capture "
                                     f"holds, the page's own load time, requests and bytes can only be larger (≥)"})
            lower_bounds[s] = [k for k in LOWER_BOUND_ROWS if fig.get(k) is not None]
    comparable = not withheld
    for side, f in (("A", fa), ("B", fb)):
        s = side.lower()
        if f["not_decrypted"]:
            reasons = sorted({d["reason"] for d in f["not_decrypted"]})
            n = len(f["not_decrypted"])
            what = (f"{side} was not decrypted: {n} TLS/QUIC connection{'s' * (n != 1)} not decrypted ({'; '.join(reasons)}) "
                    if not f["requests"] else
                    f"{side}: {n} TLS/QUIC connection{'s' * (n != 1)} not decrypted ({'; '.join(reasons)}): "
                    f"any request they carried is missing from {side}'s figures")
            if not f["requests"]:
                what += "and no request of it is seen: its figures are not a page load, no difference or saving is given"
            _warn(items, "not_decrypted", what, s)
        elif not f["requests"]:
            _warn(items, "no_requests", f"{side} shows no request of a page: no difference or saving is given", s)
        if not f["complete"]:
            _warn(items, "incomplete", f"{side}: {f['completeness']}", s)
    nu = [sum(1 for e in x if not e.url) for x in (ea, eb)]
    for side, n in zip("AB", nu):
        if n:
            _warn(items, "no_url", f"{side}: {n} response{'s' * (n != 1)} without a request in the capture (no URL): listed "
                                   f"only in {side}, not matched", side.lower())
    total = max(len(ea), len(eb))
    share = len(pairs) / total if total else 0.0
    if total and share < LOW_MATCH:
        _warn(items, "low_match", f"only {len(pairs)} of {total} requests matched: the captures may not load the same page")
    ua, ub = fa["user_agent"], fb["user_agent"]
    if ua is not None and ub is not None and ua != ub:
        _warn(items, "user_agent_differs", f"different clients: the page's first request has User-Agent {ua!r} in A, "
                                           f"{ub!r} in B — the loads may differ by more than the protocol")
    _software_warnings(items, fa, fb, page_a, page_b)
    ma, mb = fa["max_frame_bytes"], fb["max_frame_bytes"]
    if ma and mb and max(ma, mb) >= FRAME_RATIO * min(ma, mb):
        _warn(items, "frame_size_differs", f"the largest frames differ: {ma:,} bytes in A, {mb:,} in B (another link, MTU or "
                                           "segmentation offload): packet counts and timings are not comparable one for one")
    _retransmission_warning(items, pa, pb)
    for side, an, pg, f in (("A", a, pg_a, fa), ("B", b, pg_b, fb)):
        _log_warnings(items, side, an, pg, f)
    for side, f in (("A", fa), ("B", fb)):  # (a page incomplete for want of a response alone: its own warning)
        if f["incomplete"] and (f["complete"] or f["completeness"].startswith("Page complete")):
            _warn(items, "incomplete", f"{side}: Incomplete: {f['incomplete']}", side.lower())
    page = {}
    for key, _label in PAGE_ROWS:
        va, vb = pa.get(key), pb.get(key)
        page[key] = {"a": va, "b": vb, "diff": _diff(va, vb) if comparable else None,
                     "speedup": _speedup(va, vb) if comparable and key not in NO_SPEEDUP else None}
    return {
        "a": fa,
        "b": fb,
        "comparable": comparable,
        "withheld": withheld,
        "lower_bounds": lower_bounds,
        "match_mode": mode,
        "match_share": share,
        "matched": matched,
        "only_a": [_side(e, ta, _unmatched(e, "B", fb)) for e in only_a],
        "only_b": [_side(e, tb, _unmatched(e, "A", fa)) for e in only_b],
        # (a background row the browser never sent says that too: "…; not sent by the browser
        # (failed: ERR_CONNECTION_REFUSED)", as a page row's reason does)
        "background_a": [_side(e, ta, _and_not_sent(pg_a.background[e.id], e)) for e in _ordered(bg_a)],
        "background_b": [_side(e, tb, _and_not_sent(pg_b.background[e.id], e)) for e in _ordered(bg_b)],
        "page": page,
        "warnings": [w["text"] for w in items],
        "warning_items": items,
    }


def _unmatched(e: Exchange, other: str, f: dict[str, Any]) -> str:
    """Why the page exchange ``e`` has no partner on side ``other`` (its facts ``f``)."""
    why = not_sent_reason(e)
    if why is not None:
        return why
    if not e.url:
        return NO_URL
    n = len(f["not_decrypted"])
    if n:
        return NOT_IN_UNDECRYPTED.format(side=other, n=f"{n} connection{'s' * (n != 1)}")
    if not f["page_complete"]:
        return NOT_IN_INCOMPLETE.format(side=other)
    return NOT_IN.format(side=other)


def _software_warnings(items: list[dict[str, Any]], fa: dict[str, Any], fb: dict[str, Any],
                       page_a: list[Exchange], page_b: list[Exchange]) -> None:
    """Different server software (the responses' most common ``server``), and header sets
    that differ by more than the protocol (``HEADERS_DIFFER`` usual fields or more of one
    side that the other side never sends): the table would count them as the protocol's."""
    sa, sb = fa["server"], fb["server"]
    heard = [any(e.response_headers for e in x) for x in (page_a, page_b)]  # (a side with no response header says nothing)
    if sa != sb and all(heard):
        def said(side, f, v):
            n = sum(f["servers"].values())
            return (f"{side}'s responses name no server" if v is None else
                    f"{side}'s name {v[:80]!r} ({f['servers'][v]} of the {n} that name one)")

        _warn(items, "server_differs", f"different servers: {said('A', fa, sa)}, {said('B', fb, sb)} — the loads may "
                                       "differ by the server software as much as by the protocol")
    for what, response in (("request", False), ("response", True)):
        ha, hb = _header_names(page_a, response), _header_names(page_b, response)
        if not ha[0] or not hb[0]:
            continue
        la, lb = _headers_lacking(ha, hb), _headers_lacking(hb, ha)
        if max(len(la), len(lb)) < HEADERS_DIFFER:
            continue

        def names(xs):
            if not xs:
                return "none"
            shown = ", ".join(_esc(x, 40) for x in xs[:NAMES_LISTED])
            return shown + (f" and {len(xs) - NAMES_LISTED} more" if len(xs) > NAMES_LISTED else "") + f" ({len(xs)})"

        def per(h):
            return sum(h[1].values()) / h[0]

        _warn(items, f"{what}_headers_differ",
              f"different {what} headers: fields most of A's {what}s have and none of B's: {names(la)}; of B's and none of "
              f"A's: {names(lb)}; {per(ha):.1f} fields a {what} in A, {per(hb):.1f} in B (pseudo-headers and "
              f"connection fields not counted) — the header byte rows measure the software's headers as much as the "
              f"protocol's compression")


def _retransmission_warning(items: list[dict[str, Any]], pa: dict[str, Any], pb: dict[str, Any]) -> None:
    """Retransmissions on either side, both figures: the TCP retransmissions as tshark counts them
    (segments and their payload) and the data the capture carried twice (what the "less the data
    carried twice" rows take off) — a segment lost before the capture point and sent again is
    the first, not the second."""
    def n(v) -> str:
        return "–" if v is None else f"{v:,}"

    def tcp(side, f):
        def one(d):
            segs, data = f.get(f"tcp_retransmissions_{d}"), f.get(f"tcp_retransmitted_bytes_{d}")
            return f"{n(segs)} ({n(data)} bytes)"

        return f"{side} {one('c2s')} client→server, {one('s2c')} server→client"

    def twice(side, f):
        return f"{side} {f['retransmitted_bytes_c2s']:,} client→server, {f['retransmitted_bytes_s2c']:,} server→client"

    have = [(side, f) for side, f in (("A", pa), ("B", pb))
            if f["retransmitted_bytes_c2s"] is not None and f["retransmitted_bytes_s2c"] is not None]
    any_tcp = any(f.get(k) for _s, f in have for k in ("tcp_retransmissions_c2s", "tcp_retransmissions_s2c"))
    any_twice = any(f["retransmitted_bytes_c2s"] or f["retransmitted_bytes_s2c"] for _s, f in have)
    if not (any_tcp or any_twice):
        return
    with_tcp = [(s, f) for s, f in have if f.get("tcp_retransmissions_c2s") is not None]
    text = "retransmissions: "
    if with_tcp:
        text += (f"TCP retransmissions as tshark flags them (tcp.analysis.retransmission, fast and spurious ones in), segments "
                 f"(payload): {'; '.join(tcp(s, f) for s, f in with_tcp)}; ")
    text += (f"data the capture carried twice (bytes): {'; '.join(twice(s, f) for s, f in have)} — a segment lost before "
             "the capture point and sent again is a retransmission the capture carries once; the 'bytes' rows count every "
             "frame, the 'less the data carried twice' rows leave out only the second copies")
    quic = [side for side, f in have if any(str(p).startswith(("h3", "quic")) for p in f.get("protocols") or ())]
    if quic:  # (beside a TCP side's flagged retransmissions, a QUIC side's 0 reads as "no loss": it is not one)
        text += (f"; {' and '.join(quic)} {'is' if len(quic) == 1 else 'are'} QUIC: packets lost before the capture point "
                 "are counted nowhere (QUIC sends their data again in new packets, carried once), so no figure here says "
                 f"how much {' or '.join(quic)} lost")
    _warn(items, "retransmissions", text)


def _log_warnings(items: list[dict[str, Any]], side: str, an: Analysis, pg: Page, f: dict[str, Any]) -> None:
    """A side that is a browser log: which page of it, what it cannot know, where its times run from."""
    lf = f["browser_log"]
    if not lf or lf["kind"] == "capture":
        return
    s = side.lower()
    what = {"har": "a HAR", "netlog": "a Chrome NetLog", "qlog": "a qlog"}.get(lf["kind"], "a browser log")
    if lf.get("creator"):
        what += f" ({_esc(str(lf['creator']))})"
    if lf.get("page"):
        _warn(items, "log_page", f"{side}: {lf['page']}", s)
    unknown = lf["unknown"]
    har = lf.get("har_page") or {}
    text = (f"{side} is {what}, not a capture: it has no packets, so its packets, bytes on the wire, retransmissions and "
            "connections without a request are unknown (–)")
    if any(k in unknown for k in HEADER_BYTES):
        text += ", and so are its header bytes" + (" (a HAR's headersSize is the browser's uncompressed HTTP/1-style "
                                                    "size, not wire bytes)" if lf["kind"] == "har" else "")
    have = [f"{fld} {har[fld]:,}" for fld in LOG_PAGE_FIELDS.values() if fld in har]
    if have:
        text += (f"; its HAR page's own figures ({', '.join(have)}: the browser's counts of the requests' bytes, not frames "
                 "on the wire) are in the \"HAR page's own\" rows")
    _warn(items, "browser_log", text, s)
    t0 = _page_t0(an, pg)
    b = an.browser if isinstance(an.browser, dict) else {}
    start = next((p.get("start") for p in b.get("pages") or () if isinstance(p, dict) and isinstance(p.get("start"), (int, float))), None)
    text = f"{side}'s times run from its first row (the log's first request or connection start"
    if start is not None and t0 is not None:
        text += f", {t0 - start:.3f} s after its page's start"
        own = [f"{k} {har[k]:,} ms" for k in ("onLoad", "_loadTime", "_fullyLoaded") if k in har]
        if own:
            text += f", from which the HAR's {', '.join(own)} count"
    text += "); `wirefall stats` on the log alone counts its page's times from the same start"
    _warn(items, "log_times", text, s)


def _fmt(key: str, v) -> str:
    if v is None:
        return "–"
    if key.endswith("compression"):
        return f"{100 * v:.1f} %"
    if key == "page_load_time":
        return f"{v:.3f}"
    if isinstance(v, float):
        return f"{v:.3f}"
    return f"{v:,}"


URL_CELL = 60  # characters of the text table's URL column


def elide(prefix: str, url: str | None, width: int = URL_CELL) -> str:
    """``prefix`` + ``url`` in ``width`` characters: the prefix kept whole, the URL's middle
    elided ("…"), so that its scheme and host and its file name both stay in sight."""
    u = url or "(no URL)"
    room = width - len(prefix)
    if len(u) <= room:
        return prefix + u
    if room < 3:
        return prefix + "…"
    head = (room - 1) // 2
    return prefix + u[:head] + "…" + u[len(u) - (room - 1 - head):]


def side_incomplete(f: dict[str, Any]) -> str | None:
    """What a side's header says of its page when it is incomplete (``page_complete`` false, a page
    request seen): the CLI's side line, the TUI's title and the web page's header, one text."""
    if f.get("requests") and not f.get("page_complete", True):
        return "its page INCOMPLETE: its figures are lower bounds (≥), no difference or saving given"
    return None


def side_line(name: str, f: dict[str, Any]) -> str:
    """The line `wirefall compare` prints for side ``name`` (its facts ``f``: ``res["a"]``)."""
    s = f"{name}: {f['file']} ({', '.join(f['protocols']) or '-'}): {f['requests']} page request{'s' * (f['requests'] != 1)}"
    if f.get("not_sent_requests"):
        s += f" ({f['not_sent_requests']} of them never sent: a cache, a failure before sending)"
    if f["background_requests"]:
        s += f", {f['background_requests']} background (not compared)"
    if f["not_decrypted"]:
        s += f"; {len(f['not_decrypted'])} connection{'s' * (len(f['not_decrypted']) != 1)} NOT DECRYPTED"
    inc = side_incomplete(f)
    if inc:
        s += f"; {inc}"
    lf = f.get("browser_log") or {}
    if lf.get("kind") not in (None, "capture"):
        s += f"; a browser log ({lf['kind']}), no packets" + (f", page {lf['page_number']}" if lf.get("page_number") else "")
    return s


# a QUIC side's losses: QUIC resends lost data in new packets, so a packet lost before the capture point
# leaves no second copy and no tshark flag (lossy/page-h3 lost 11 server packets — packet numbers
# 16, 18, 36 … missing — and showed "0" and "–" beside SPDY's 3 TCP retransmissions)
QUIC_LOSS_NOTE = ("QUIC: a packet lost before the capture point is counted in no row (its data comes again in new packets, "
                  "which the capture carries once, and QUIC has no tshark retransmission flag): a QUIC side's 0 and – do "
                  "not say it lost nothing")


# what the page table's rows mean: printed under it by `wirefall compare` and the TUI's compare
# table (ui/tui/compare.py), one text for both
PAGE_NOTES = [
    "(A − B) / A: the load time's speedup, as the SPDY whitepaper defines it; a count's or a size's saving (none for "
    "ratios, background rows and retransmissions: their difference says it)",
    "the page as `wirefall stats` counts it: from its first row, background requests apart; its load time is its last "
    "response byte, not the browser's load event (a row of its own where a HAR gives it: a HAR side, or a HAR laid over "
    "A with --har, over B with --har-b; a NetLog or a qlog has no page events)",
    "bytes: the frames of the connections that carried page requests, retransmissions in",
    "TCP retransmissions: the segments tshark's TCP analysis flags tcp.analysis.retransmission (fast and spurious ones "
    "in), and their TCP payload (tcp.len) — a segment lost before the capture point and sent again is one, though the "
    "capture carries it once; – without a TCP connection",
    "data the capture carried twice: TCP payload whose bytes the capture had already carried, QUIC STREAM/CRYPTO bytes "
    "received again; the bytes less the data carried twice: less those frames (QUIC: those bytes), each byte of data "
    "once as the capture saw it",
    QUIC_LOSS_NOTE,
    "–: not known to that side (a browser log has no packets) or no value; no difference or saving then",
]


def _withheld_cell(res: dict[str, Any]) -> str:
    """The saving cell of a row whose difference is withheld: which side, and why, in short."""
    return "withheld: " + "; ".join(f"{w['side'].upper()} {'incomplete' if w['kind'] == 'incomplete' else 'no page'}"
                                    for w in res.get("withheld") or ())


# what the request table's times are (under it in `wirefall compare`; the same for a browser log
# side, on its own times)
REQUEST_NOTES = [
    "ttfb: the request's last byte to the response's first (DevTools' and WebPageTest's TTFB, `wirefall requests`' "
    "ttfb and its detail's \"Waiting (TTFB)\"; a HAR side's timings.wait); dur: the request's first byte to the "
    "response's last; – where the side does not hold them",
]


LOWER_BOUND = "≥ "  # before a figure that counts only what an incomplete side's capture holds


def page_cells(res: dict[str, Any], key: str) -> list[str]:
    """The page row ``key``'s cells A, B, B − A, (A − B) / A as every front-end shows them (the
    CLI's table, the TUI's compare table, the web app's Compare tab: one formatter): a figure in
    ``lower_bounds`` "≥ 0.098", a difference or saving withheld (``withheld``: a side incomplete
    or with no page) "withheld: B incomplete" in the saving column — not a bare "–" —, "–" for
    what is unknown or has no value."""
    p = res["page"].get(key) or {"a": None, "b": None, "diff": None, "speedup": None}
    bounds = res.get("lower_bounds") or {}
    sp, d = p["speedup"], p["diff"]
    cells = [(LOWER_BOUND if key in bounds.get(s, ()) else "") + _fmt(key, p[s]) for s in "ab"]
    # (a difference withheld is said beside the numbers, not left a bare "–")
    said = bool(res.get("withheld")) and p["a"] is not None and p["b"] is not None and key not in NO_SPEEDUP
    return [*cells,
            ("–" if d is None else (f"{100 * d:+.1f} pt" if key.endswith("compression") else
                                    (f"{d:+.3f}" if isinstance(d, float) else f"{d:+,}"))),
            _withheld_cell(res) if said else "–" if sp is None else f"{100 * sp:.1f} %"]


PAGE_HEAD = ["", "A", "B", "B − A", "(A − B) / A"]


def page_table(res: dict[str, Any]) -> list[list[str]]:
    """The page table as `wirefall compare` prints it: ``PAGE_HEAD``, then per ``PAGE_ROWS`` row
    (a browser page event or a HAR page's own figure only when a side has it) its label (indented
    under its row by two spaces) and ``page_cells``."""
    rows = [list(PAGE_HEAD)]
    for key, label in PAGE_ROWS:
        p = res["page"].get(key) or {"a": None, "b": None}
        if key in OPTIONAL_ROWS and p["a"] is None and p["b"] is None:
            continue
        rows.append([label, *page_cells(res, key)])
    return rows


def withheld_lines(res: dict[str, Any]) -> list[str]:
    """Why no difference or saving is given ("no difference or saving given: B's page is
    incomplete (…)"), a line per side withheld; [] when the sides are comparable."""
    out = [f"no difference or saving given: {w['text']}" for w in res.get("withheld") or ()]
    if not res.get("comparable", True) and "withheld" not in res:  # (a result from before 2026-12-04)
        out.append("no difference or saving given: a capture shows no request of a page (see the warnings)")
    return out


def bytes_cell(side: dict[str, Any], fmt=str) -> str:
    """A request row's response bytes (``fmt`` of its ``bytes``), "≥ " before those of a response
    cut by the capture's end (``response`` ``cut``: the bytes it holds, a lower bound)."""
    return (LOWER_BOUND if side.get("response") == "cut" else "") + fmt(side.get("bytes"))


# warnings that make the two loads more than one protocol against another, in a few words each: the
# verdict's "not like for like" (the warnings under the tables say how)
CAVEATS = {"user_agent_differs": "other clients (User-Agent)", "server_differs": "other servers",
           "request_headers_differ": "other request headers", "response_headers_differ": "other response headers",
           "frame_size_differs": "other links (largest frames)", "retransmissions": "retransmissions",
           "low_match": "few requests matched", "not_decrypted": "connections not decrypted",
           "incomplete": "a page incomplete", "no_url": "responses without their request",
           "browser_log": "a browser log side (no packets)"}
SAME_TIME = 0.0005  # two last bytes closer than this (s): neither side is called faster


def _who(res: dict[str, Any], s: str) -> str:
    """"A (http/1.1)": a side's letter and its page's protocols."""
    return f"{s.upper()} ({', '.join(res[s].get('protocols') or ()) or '-'})"


def in_flight(res: dict[str, Any], s: str) -> dict[str, Any] | None:
    """Where side ``s``'s page time went, from the comparison's own rows (its matched and only-A/B
    page rows: start and duration from the page's start): ``first`` (its first request's start),
    ``span`` (from it to the page's last response byte), ``idle`` (of the span, the time with no
    page request in flight — connection set-ups, the client's own work (parsing, scripts) or
    waiting), ``gap`` (its longest such stretch, ``[from, to]``) and ``after`` (the URL of the
    request whose end opened it); ``idle`` and ``gap`` null when a row's end is not known or the
    side's page is incomplete.  A browser log's request never sent is no row of it; None when the
    side has no timed row."""
    rows = [m[s] for m in res["matched"]] + list(res.get(f"only_{s}") or ())
    rows = [r for r in rows if r.get("response") != "not_sent"]
    starts = [r["start"] for r in rows if r.get("start") is not None]
    if not starts:
        return None
    first = min(starts)
    spans = sorted((r["start"], r["start"] + r["duration"], r.get("url")) for r in rows
                   if r.get("start") is not None and r.get("duration") is not None)
    last = (res["page"].get("page_load_time") or {}).get(s)
    if last is None:
        last = max((b for _a, b, _u in spans), default=None)
    out: dict[str, Any] = {"first": first, "span": None, "idle": None, "gap": None, "after": None}
    if last is None:
        return out
    out["span"] = max(last - first, 0.0)
    if len(spans) != len(rows) or s in {w["side"] for w in res.get("withheld") or ()}:
        return out
    idle, end, after, gap = 0.0, first, None, (first, first)
    for a, b, url in spans:  # (the stretches between the union of the requests' spans, up to the last byte)
        a, b = min(a, last), min(b, last)
        if a > end:
            idle += a - end
            if a - end > gap[1] - gap[0]:
                gap, out["after"] = (end, a), after
        if b >= end:
            end, after = b, url
    if last > end:
        idle += last - end
        if last - end > gap[1] - gap[0]:
            gap, out["after"] = (end, last), after
    out["idle"], out["gap"] = idle, list(gap)
    return out


def verdict(res: dict[str, Any]) -> list[tuple[str, str]]:
    """What the comparison says at a glance, ``(kind, text)`` lines made from its figures (display
    only, nothing new is measured): ``winner`` — which side's page got its last response byte
    sooner and by how much (or why none is named: a side withheld); ``load_event`` — the same by
    the browser's load event where both sides have it, and whether the two measures disagree;
    ``time`` — where each side's time went (``in_flight``: its first request, then how much of
    the rest no page request was in flight, and its longest such stretch), a line a side, and
    ``time_note`` what that time is; ``caveats`` — what makes the loads more than one
    protocol against another (``CAVEATS`` of the warnings), or that none was found."""
    out: list[tuple[str, str]] = []
    ms = lambda v: f"{1000 * v:,.0f} ms"  # noqa: E731
    if res.get("withheld"):
        out.append(("winner", "no faster side named: " + "; ".join(
            f"{w['side'].upper()} {'shows no page' if w['kind'] == 'no_requests' else 'is incomplete, its times lower bounds'}"
            for w in res["withheld"])))
    winners: dict[str, str | None] = {}
    for key, what in (("page_load_time", "last response byte"), ("load_event", "browser's load event")):
        p = res["page"].get(key) or {}
        a, b = p.get("a"), p.get("b")
        if res.get("withheld") or a is None or b is None:
            continue
        if abs(b - a) < SAME_TIME:
            winners[key] = None
            out.append(("winner" if key == "page_load_time" else "load_event",
                        f"by the {what}: {_who(res, 'a')} and {_who(res, 'b')} alike, {ms(a)}"))
            continue
        w, l = ("b", "a") if b < a else ("a", "b")
        winners[key] = w
        sp = p.get("speedup")
        text = (f"faster by the {what}: {_who(res, w)}, {ms(p[w])} against {ms(p[l])} for {_who(res, l)}: "
                f"{ms(abs(b - a))} sooner" + ("" if sp is None else f", (A − B) / A = {100 * sp:.1f} %"))
        if key == "load_event" and winners.get("page_load_time", w) != w:
            text += " — the two measures disagree"
        logs = [x.upper() for x in "ab" if res[x].get("source", "capture") != "capture"]
        if key == "page_load_time" and logs and len(logs) < 2:  # (a browser's clock against the wire's)
            text += f" — {logs[0]}'s times are its browser log's, not the wire's"
        out.append(("winner" if key == "page_load_time" else "load_event", text))
    parts = []
    for s in "ab":
        f = in_flight(res, s)
        if f is None:
            continue
        t = f"{_who(res, s)}: first request sent at {ms(f['first'])}"
        if f["idle"] is not None:
            t += f"; of the {ms(f['span'])} from it to its last byte, {ms(f['idle'])} with no page request in flight"
            g = f["gap"]
            if g[1] - g[0] >= SAME_TIME:
                t += (f", {ms(g[1] - g[0])} of it at once ({1000 * g[0]:,.0f} → {1000 * g[1]:,.0f} ms"
                      + (f", after {_esc(normalise_url(f['after'], res.get('match_mode') != 'path'), 60)}"
                         if f["after"] else "") + ")")
        elif f["span"] is not None:
            t += f", its last byte {ms(f['span'])} later"
        parts.append(t)
    out += [("time", t) for t in parts]
    if any("in flight" in t for t in parts):
        out.append(("time_note", "no page request in flight: none between its first byte sent and its response's last byte "
                                 "received — connection set-ups, the client's own work (parsing, scripts) or waiting, not "
                                 "transfers"))
    def counts(w: dict[str, Any]) -> bool:  # (a browser log's "Incomplete: no packets" leaves its page whole: no caveat)
        return w["kind"] != "incomplete" or not (res.get(w.get("side") or "") or {}).get("page_complete", False)

    said = [CAVEATS[k] for k in CAVEATS if any(w["kind"] == k and counts(w) for w in res.get("warning_items") or ())]
    # a QUIC side beside a TCP one: the TCP side's losses are counted (tshark's flags), the QUIC side's
    # before the capture point are not (QUIC_LOSS_NOTE) — its "0" is no win
    tcp = [s for s in "ab" if (res["page"].get("tcp_retransmissions_s2c") or {}).get(s) is not None]
    quic = [s for s in "ab" if s not in tcp and res[s].get("source", "capture") == "capture"
            and any(str(p).startswith(("h3", "quic")) for p in res[s].get("protocols") or ())]
    if tcp and quic:
        said.append(f"{' and '.join(_who(res, s) for s in quic)}'s QUIC losses uncounted beside "
                    f"{' and '.join(_who(res, s) for s in tcp)}'s TCP retransmissions")
    out.append(("caveats", "not like for like: " + ", ".join(said) + " — see the warnings" if said else
                "no difference beyond the protocol found in the clients, servers, header sets or links"))
    return out


def render_text(res: dict[str, Any]) -> str:
    out = [side_line("A", res["a"]), side_line("B", res["b"]), ""]
    out += [text for _kind, text in verdict(res)]  # (at a glance: who won, where the time went, how alike the loads are)
    out.append("")
    rows = page_table(res)
    w = [max(len(r[i]) for r in rows) for i in range(5)]
    for i, r in enumerate(rows):
        out.append("  ".join([r[0].ljust(w[0])] + [r[j].rjust(w[j]) for j in range(1, 5)]))
        if i == 0:
            out.append("  ".join("-" * x for x in w))
    out += PAGE_NOTES
    out += withheld_lines(res)
    out.append("")
    bga, bgb = res.get("background_a") or [], res.get("background_b") or []
    out.append(f"{len(res['matched'])} page requests matched by {'URL' if res['match_mode'] == 'url' else 'path and query'}, "
               f"{len(res['only_a'])} only in A, {len(res['only_b'])} only in B; "
               f"background requests (listed, not compared): {len(bga)} in A, {len(bgb)} in B")
    ms = lambda v: "–" if v is None else f"{1000 * v:.1f}"
    nb = bytes_cell  # (a response cut by the capture's end: the bytes it holds, a lower bound)
    rows = [["url", "start A ms", "start B ms", "ttfb A ms", "ttfb B ms", "dur A ms", "dur B ms", "bytes A", "bytes B"]]
    for m in res["matched"]:
        a, b = m["a"], m["b"]
        rows.append([elide("", m["url"]), ms(a["start"]), ms(b["start"]), ms(a["ttfb"]), ms(b["ttfb"]), ms(a["duration"]), ms(b["duration"]),
                     nb(a), nb(b)])
    for e in res["only_a"]:
        rows.append([elide("A only: ", e["url"]), ms(e["start"]), "", ms(e["ttfb"]), "", ms(e["duration"]), "", nb(e), ""])
    for e in res["only_b"]:
        rows.append([elide("B only: ", e["url"]), "", ms(e["start"]), "", ms(e["ttfb"]), "", ms(e["duration"]), "", nb(e)])
    for e in bga:
        rows.append([elide("A background: ", e["url"]), ms(e["start"]), "", ms(e["ttfb"]), "", ms(e["duration"]), "", nb(e), ""])
    for e in bgb:
        rows.append([elide("B background: ", e["url"]), "", ms(e["start"]), "", ms(e["ttfb"]), "", ms(e["duration"]), "", nb(e)])
    w = [max(len(r[i]) for r in rows) for i in range(9)]
    out.append("")
    for i, r in enumerate(rows):
        out.append("  ".join([r[0].ljust(w[0])] + [r[j].rjust(w[j]) for j in range(1, 9)]).rstrip())
        if i == 0:
            out.append("  ".join("-" * x for x in w))
    out += REQUEST_NOTES
    notes: dict[tuple[str, str], list[str]] = {}  # (side, reason) -> exchange ids
    for k, lst in (("A", res["only_a"]), ("B", res["only_b"]), ("A", bga), ("B", bgb)):
        for e in lst:
            if e.get("reason"):
                notes.setdefault((k, e["reason"]), []).append(str(e["exchange"]))
    if notes:
        out.append("")
        out.append("why the unmatched and background rows are apart (exchange ids as in `wirefall requests`):")
        out += [f"  {k} {', '.join(ids)}: {why}" for (k, why), ids in notes.items()]
    for wmsg in res["warnings"]:
        out.append(f"warning: {wmsg}")
    return "\n".join(out)
