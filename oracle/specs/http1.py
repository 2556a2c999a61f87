"""HTTP/1.x as tshark shows it: request method and target or response status, at the packet of the message's last byte, and the header lines.

A ``Spec`` (``oracle.spec``) registered on import; ``oracle.crosscheck`` imports this module
for the ``http1`` registry descriptor."""
from __future__ import annotations

from wirefall.analyzer.model import Analysis, Frame
from wirefall.oracle.spec import (
    _fl,
    TCP_ARGS,
    Entry,
    Spec,
    TFrame,
    _as_list,
    _conn_of,
    _find,
    _first,
    _oracle,
    _ports,
    _tcp_fin,
    register,
)


# -- HTTP/1.x --------------------------------------------------------------------------------
# Per packet, the messages that end in it (tshark shows a message where its last byte, body
# included, arrived): requests by method and target, responses by status code. Known tshark
# 4.0 differences, set aside and counted:
# - a close-delimited response body: tshark completes the message only at the server's FIN;
#   the response is expected at the first packet of that direction where tshark shows HTTP
#   with the FIN flag (its TCP layer) at or after the body's last byte; over TLS tshark never
#   completes it (the FIN carries no record), nor when the capture ends first: then the
#   response is set aside and counted;
# - a HEAD request pipelined behind/ahead of others: tshark frames its body-less response with
#   the next response as its body, so the responses of that connection from the HEAD's on are
#   set aside (nginx's own log is the truth in tests/test_http1.py);
# - an HTTP/1.1 ``Upgrade: h2c`` exchange: the 101 and the upgraded request are HTTP/1.1 on the
#   wire and compared; the response to it comes as HTTP/2 on stream 1 (compared as http2).
def _h1_lines(v) -> list[tuple[str, str]]:
    """tshark's header lines ("Name: value\\r\\n") as (name, value) pairs."""
    out = []
    for line in _as_list(v):
        line = str(line)
        if line.endswith("\r\n"):
            line = line[:-2]
        name, _, value = line.partition(":")
        out.append((name, value.strip(" \t")))
    return out


def _h1_extract(layers: dict, num: int, ts: float, state: dict) -> list[TFrame]:
    out = []
    ports = _ports(layers)
    fin = _tcp_fin(layers)
    for u in _as_list(layers.get("http")):
        if not isinstance(u, dict):
            continue
        meth = _find(u, "http.request.method")
        code = _find(u, "http.response.code")
        if meth is not None:
            uri = _find(u, "http.request.uri")
            hdrs = _h1_lines(u.get("http.request.line"))
            out.append(TFrame(num, ts, {"fin": fin}, "REQUEST", hdrs, ("REQUEST", str(_first(meth)), str(_first(uri))), ports))
        elif code is not None:
            hdrs = _h1_lines(u.get("http.response.line"))
            out.append(TFrame(num, ts, {"fin": fin}, "RESPONSE", hdrs, ("RESPONSE", int(_first(code))), ports))
    return out


_H1_CLOSE = "close-delimited response: tshark completes it only at a FIN it shows (never over TLS)"
_H1_HEAD = "responses after a pipelined HEAD (tshark takes the next response as the HEAD's body)"
_H1_CUT = "messages whose body the connection's or the capture's end cuts (tshark shows only reassembled ones)"


def _h1_pipelined_head(an: Analysis) -> dict[int, int]:
    """connection -> packet of the first response (wirefall) from which tshark mis-frames."""
    by_conn: dict[int, list[Frame]] = {}
    for f in an.frames:
        if f.protocol.startswith("http/1") and f.type in ("REQUEST", "RESPONSE"):
            by_conn.setdefault(f.connection, []).append(f)
    out: dict[int, int] = {}
    for cid, frs in by_conn.items():
        reqs = [f for f in frs if f.type == "REQUEST"]
        for i, r in enumerate(reqs):
            if _fl(r).get("method") != "HEAD":
                continue
            ex = _fl(r).get("exchange")
            # pipelined: another request was sent before this HEAD's response began
            resp = [f for f in frs if f.type == "RESPONSE" and _fl(f).get("exchange") == ex]
            if not resp:
                continue
            later = [q for q in reqs[i + 1:] if q.first_packet <= resp[0].first_packet]
            if later:
                out[cid] = min(out.get(cid, resp[0].packet), resp[0].first_packet)
    return out


def _h1_entries(an: Analysis, tframes) -> tuple[list[Entry], dict[str, int]]:
    aside: dict[str, int] = {}
    fins: dict[tuple[int, int], list[int]] = {}
    for t in tframes:
        if t.values.get("fin") and t.ports:
            fins.setdefault(t.ports, []).append(t.packet)
    bodies: dict[tuple[int | None, int], Frame] = {}  # (exchange id, direction) -> body frame
    for f in an.frames:
        if f.protocol.startswith("http/1") and f.type == "BODY" and f.fields:
            bodies[(f.fields.get("exchange"), f.direction)] = f
    heads = _h1_pipelined_head(an)
    out = []
    for f in an.frames:
        if not f.protocol.startswith("http/1") or f.type not in ("REQUEST", "RESPONSE"):
            continue
        fl = f.fields or {}
        c = _conn_of(an, f)
        if f.type == "RESPONSE" and f.connection in heads and f.first_packet >= heads[f.connection]:
            aside[_H1_HEAD] = aside.get(_H1_HEAD, 0) + 1
            continue
        pkt = f.packet
        body = None if fl.get("interim") else bodies.get((fl.get("exchange"), f.direction))
        if body is not None:
            if (body.fields or {}).get("incomplete"):
                aside[_H1_CUT] = aside.get(_H1_CUT, 0) + 1
                continue
            pkt = max(pkt, body.packet)
            if (body.fields or {}).get("framing") == "close":
                sport, dport = (c.server[1], c.client[1]) if f.direction == 1 else (c.client[1], c.server[1])
                at = [p for p in fins.get((sport, dport), []) if p >= body.packet]
                if not at:
                    aside[_H1_CLOSE] = aside.get(_H1_CLOSE, 0) + 1
                    continue
                pkt = at[0]
        key = ("REQUEST", fl.get("method"), fl.get("target")) if f.type == "REQUEST" else ("RESPONSE", fl.get("status"))
        out.append(Entry(pkt, key, f))
    out.sort(key=lambda e: (e.packet, e.frame.direction, e.frame.offset))
    return out, aside


def _h1_limits(an: Analysis, tframes: list[TFrame]) -> tuple[list[TFrame], dict[str, int]]:
    heads = _h1_pipelined_head(an)
    if not heads:
        return tframes, {}
    cports = {}
    for cid, pkt in heads.items():
        c = an.connections[cid]
        cports[(c.server[1], c.client[1])] = pkt
    kept, n = [], 0
    for t in tframes:
        p = cports.get(t.ports) if t.ports else None
        if t.type == "RESPONSE" and p is not None and t.packet >= p:
            n += 1
            continue
        kept.append(t)
    return kept, ({_H1_HEAD: n} if n else {})


def _h1_decode_as(an: Analysis) -> list[str]:
    conns = {f.connection for f in an.frames if f.protocol.startswith("http/1")}
    ports = sorted({an.connections[c].server[1] for c in conns
                    if an.connections[c].transport == "tcp" and not an.connections[c].tls})
    return [a for p in ports for a in ("-d", f"tcp.port=={p},http")]


register(Spec(
    name="http1", layer=_oracle("http1").layer, unit=None, protocols=("http/1.0", "http/1.1"), fields={}, type_field="",
    type_name=str, headers=("http.request.line", "", ""), layers=("tcp",), extract=_h1_extract, entries=_h1_entries, limits=_h1_limits,
    decode_as=_h1_decode_as, args=TCP_ARGS, fmt=lambda k: " ".join(str(x) for x in k),
))
