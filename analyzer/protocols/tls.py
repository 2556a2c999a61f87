"""TLS records in the packet list: the handshake messages of a record in Wireshark's words
(``Client Hello``), ``Alert (Level: Warning, Description: Close Notify)`` or ``Encrypted
Alert`` when it cannot be read, ``Hello Retry Request``; the protocol column names the
version (``TLSv1.3``; the record-layer version before the ServerHello)."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from wirefall.analyzer.model import Analysis, Frame

if TYPE_CHECKING:
    from wirefall.analyzer.info import InfoContext

_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


def title(name: Any) -> str:
    """CLIENT_HELLO or ClientHello -> Client Hello (Wireshark's wording)."""
    s = str(name)
    if "_" not in s and not s.isupper():
        s = _CAMEL.sub(" ", s)
    return " ".join(w.capitalize() for w in s.replace("_", " ").split())


def summary(fr: Frame) -> str:
    f = fr.fields or {}
    msgs = f.get("messages")
    if msgs and isinstance(msgs, (list, tuple)):
        return ", ".join(title(m) for m in msgs)
    if f.get("encrypted") and not f.get("decrypted") and fr.type == "HANDSHAKE":
        return "Encrypted Handshake Message"
    return title(fr.type)


def _version_name(analysis: Analysis, conn_id: int) -> str:
    try:
        c = analysis.connections[conn_id]
    except IndexError:
        return "TLS"
    return _column_name(c.tls.version if c.tls is not None else None)


def _column_name(v: str | None) -> str:
    """A version as Wireshark's protocol column names it: "TLS 1.3" -> TLSv1.3, "TLS 1.0" ->
    TLSv1, "SSL 3.0" -> SSLv3, "SSL 2.0" -> SSLv2; None -> TLS."""
    if not v:
        return "TLS"
    v = str(v).replace(" ", "")
    if v.upper().startswith("SSL"):
        return "SSLv" + v[3:].lstrip("v").split(".")[0]
    if v.upper().startswith("TLS"):
        v = "TLSv" + v[3:].lstrip("v")
        return "TLSv1" if v == "TLSv1.0" else v
    return v


def proto_name(analysis: Analysis, fr: Frame) -> str:
    f = fr.fields or {}
    if f.get("version"):
        try:
            c = analysis.connections[fr.connection]
        except IndexError:
            c = None
        t = c.tls if c is not None else None
        sh = t.server_hello_time if t is not None else None
        before = sh is None or fr.time < sh
        if before and t is not None and ("SERVER_HELLO" in (f.get("messages") or ())  # (a HelloRetryRequest: a ServerHello)
                                         or t.hello_retry and t.client_hello_time is not None and fr.time > t.client_hello_time):
            before = False  # the HelloRetryRequest, and after it: its version is known
        if before:
            # before the ServerHello — or with none seen, joined mid-way — Wireshark names the
            # record-layer version of the packet's first record (a ClientHello's TLS 1.0 even
            # with 0-RTT data after it)
            from wirefall.analyzer.detail import frames_on_packet

            first = next((x for x in frames_on_packet(analysis, fr.packet)
                          if x.protocol == "tls" and x.connection == fr.connection and x.packet == fr.packet and (x.fields or {}).get("version")), fr)
            return _column_name((first.fields or {}).get("version") or f["version"])
    return _version_name(analysis, fr.connection)


_ALERT_WORDS = {"mac": "MAC", "psk": "PSK", "ca": "CA"}


def alert_text(fr: Frame) -> str:
    f = fr.fields or {}
    a = f.get("alert")
    if isinstance(a, str) and ": " in a:
        level, desc = a.split(": ", 1)
        words = " ".join(_ALERT_WORDS.get(w, w.capitalize()) for w in desc.split("_"))
        return f"Alert (Level: {level.capitalize()}, Description: {words})"
    if f.get("encrypted") and not f.get("decrypted"):
        return "Encrypted Alert"
    return "Alert"


def hrr_packets(analysis: Analysis) -> set[int]:
    """Packets of the first ServerHello of each connection that had a HelloRetryRequest."""
    frames = analysis.frames
    memo = analysis.__dict__.get("_wf_hrr")
    if memo is not None and memo[0] == len(frames):
        return memo[1]
    conns = analysis.connections
    seen: dict[int, int] = {}
    # (the frames are read only until every retried connection's first ServerHello is found:
    # at its start; a reopened analysis unpacks its frames a chunk at a time, analyzer.cache)
    retried = sum(1 for c in conns if c.tls is not None and c.tls.hello_retry)
    for fr in frames if retried else ():
        if fr.protocol != "tls" or fr.connection in seen or not 0 <= fr.connection < len(conns):
            continue
        t = conns[fr.connection].tls
        msgs = (fr.fields or {}).get("messages") or ()
        if t is not None and t.hello_retry and any(str(m).upper().replace("_", "") == "SERVERHELLO" for m in msgs):
            seen[fr.connection] = fr.packet
            if len(seen) == retried:
                break
    out = set(seen.values())
    analysis.__dict__["_wf_hrr"] = (len(frames), out)
    return out


def info(ctx: InfoContext, fr: Frame) -> str:
    if fr.type == "ALERT":
        return alert_text(fr)
    s = summary(fr).replace("End Of Early Data", "End of Early Data")
    if s.startswith("Server Hello") and ctx.n in hrr_packets(ctx.analysis):
        s = "Hello Retry Request" + s[len("Server Hello"):]
    return s
