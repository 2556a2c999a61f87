"""TLS records in the packet list: the handshake messages of a record in Wireshark's words
(``Client Hello``), ``Alert (Level: Warning, Description: Close Notify)`` or ``Encrypted
Alert`` when it cannot be read, ``Hello Retry Request``; the protocol column names the
version (``TLSv1.3``; the record-layer version before the ServerHello)."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from wirefall.analyzer.model import Analysis, Frame
from wirefall.dissectors.quic_varint import quic_varint  # (_varint_at: at module level, a function's import costs ~2 us a call)
from wirefall.dissectors.tls import VERSIONS, ContentType, is_grease

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


def _alert_words(desc: str) -> str:
    """An alert description in Wireshark's words: close_notify -> Close Notify, bad_record_mac -> Bad Record MAC."""
    return " ".join(_ALERT_WORDS.get(w, w.capitalize()) for w in desc.split("_"))


def alert_text(fr: Frame) -> str:
    f = fr.fields or {}
    a = f.get("alert")
    if isinstance(a, str) and ": " in a:
        level, desc = a.split(": ", 1)
        return f"Alert (Level: {level.capitalize()}, Description: {_alert_words(desc)})"
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


# ---------------------------------------------------------------- the detail tree (Wireshark's)

# packet-tls-utils.c's words
_CT_WORDS = {20: "Change Cipher Spec", 21: "Alert", 22: "Handshake", 23: "Application Data", 24: "Heartbeat"}
_HS_WORDS = {0: "Hello Request", 1: "Client Hello", 2: "Server Hello", 4: "New Session Ticket", 5: "End of Early Data",
             8: "Encrypted Extensions", 11: "Certificate", 12: "Server Key Exchange", 13: "Certificate Request",
             14: "Server Hello Done", 15: "Certificate Verify", 16: "Client Key Exchange", 20: "Finished",
             22: "Certificate Status", 24: "Key Update", 67: "Encrypted Extensions"}  # (67: NPN's, named as tshark names it)
# the protocol an application-data record carries, by the connection's protocol
_APP_WORDS = {"h2": "HyperText Transfer Protocol 2", "http/1.1": "Hypertext Transfer Protocol", "http/1.0": "Hypertext Transfer Protocol",
              "spdy/3.1": "SPDY", "spdy/3": "SPDY", "spdy/2": "SPDY"}
_HEX_SHOWN = 36  # bytes of a long value written in hex before "…", as tshark's tree


def _app_protocol(analysis: Analysis, fr: Frame) -> str | None:
    """The protocol Wireshark says application data carries: the one the connection's ALPN
    names, when Wireshark could read the ALPN (the ServerHello's, or TLS 1.3's encrypted
    extensions, decrypted); None: unknown to it."""
    try:
        c = analysis.connections[fr.connection]
    except IndexError:
        return None
    t = c.tls
    if t is None or not t.alpn or t.version == "TLS 1.3" and not t.decrypted:
        return None
    return _APP_WORDS.get(t.alpn)


def _version_text(v: int) -> str:
    if is_grease(v):
        return f"Reserved (GREASE) (0x{v:04x})"
    return f"{VERSIONS.get(v, 'Unknown')} (0x{v:04x})"


def _hex(b: bytes) -> str:
    return b[:_HEX_SHOWN].hex() + ("\u2026" if len(b) > _HEX_SHOWN else "")


def _early_data_connections(analysis: Analysis) -> set[int]:
    """Connections with TLS 1.3 early data (0-RTT records), found once per analysis."""
    memo = analysis.__dict__.get("_wf_tls_early")
    if memo is None or memo[0] != len(analysis.frames):
        memo = (len(analysis.frames), {fr.connection for fr in analysis.frames
                                       if fr.protocol == "tls" and fr.fields and fr.fields.get("early_data")})
        analysis.__dict__["_wf_tls_early"] = memo
    return memo[1]


def _record_title_version(analysis: Analysis, fr: Frame, record_version: int, server_hello: bool, client_hello: bool = False) -> str:
    """The version a record's line names: the record layer's before the ServerHello is read
    (the ServerHello's own record included), the session's after it."""
    try:
        t = analysis.connections[fr.connection].tls
    except IndexError:
        t = None
    sh = t.server_hello_time if t is not None else None
    if server_hello and fr.packet in hrr_packets(analysis):  # (the HelloRetryRequest's own record)
        return _column_name(VERSIONS.get(record_version))
    if t is not None and t.hello_retry and t.client_hello_time is not None and fr.time > t.client_hello_time:
        return _version_name(analysis, fr.connection)  # (after a HelloRetryRequest, as proto_name: its version is known)
    if (not client_hello and t is not None and t.version == "TLS 1.3" and t.client_hello_time is not None
            and fr.time >= t.client_hello_time and fr.connection in _early_data_connections(analysis)):
        return "TLSv1.3"  # (after a ClientHello with 0-RTT data tshark takes the session for TLS 1.3)
    if server_hello or sh is None or fr.time < sh:
        return _column_name(VERSIONS.get(record_version))
    return _version_name(analysis, fr.connection)


def record_node(analysis: Analysis, node, fr: Frame, rb) -> object:
    """A TLS record as Wireshark's tree shows it (``tls.record.*``, the handshake messages'
    headers and hellos, alerts, application data), from its bytes (``rb``: the record header
    and its body or decrypted plaintext, ``analyzer.detail.RecordBytes``).  What the record's
    bytes do not give (a handshake message continued in the next record) is left out."""
    from wirefall.dissectors.tls import parse_handshake_messages

    from wirefall.analyzer.detail import Node, wirefall_node

    h = rb.header
    outer, rver, rlen = h[0], int.from_bytes(h[1:3], "big"), int.from_bytes(h[3:5], "big")
    inner = rb.inner_type if rb.inner_type is not None else outer
    msgs, _ = parse_handshake_messages(rb.body) if inner == 22 and rb.body is not None else ([], b"")
    ver = _record_title_version(analysis, fr, rver, any(t == 2 for t, _ in msgs), any(t == 1 for t, _ in msgs))
    app = _app_protocol(analysis, fr)
    hrr = fr.packet in hrr_packets(analysis)

    if inner == 22:
        if msgs:
            what = handshake_title(msgs, hrr)
        else:
            what = "Handshake Protocol: Encrypted Handshake Message"
    elif inner == 23:
        what = f"Application Data Protocol: {app or 'Application Data'}"
    elif inner == 21:
        what = alert_text(fr)
    elif inner == 20:
        what = "Change Cipher Spec Protocol: Change Cipher Spec"
    else:
        what = f"{_CT_WORDS.get(inner, 'Unknown')} Protocol"
    node.label = f"{ver} Record Layer: {what}"
    node.children = []
    at = rb.at

    def hdr(text: str, start: int, size: int, abbrev: str, value) -> None:
        node.add(text, at + start if at >= 0 else -1, at + start + size if at >= 0 else -1, abbrev, str(value))

    opaque = outer == 23 and ver == "TLSv1.3"  # (TLS 1.3's outer type, whether or not the record could be read)
    hdr(f"{'Opaque Type' if opaque else 'Content Type'}: {_CT_WORDS.get(outer, 'Unknown')} ({outer})", 0, 1,
        "tls.record.opaque_type" if opaque else "tls.record.content_type", outer)
    hdr(f"Version: {_version_text(rver)}", 1, 2, "tls.record.version", f"0x{rver:04x}")
    hdr(f"Length: {rlen}", 3, 2, "tls.record.length", rlen)
    if rb.inner_type is not None:
        hdr(f"[Content Type: {_CT_WORDS.get(inner, 'Unknown')} ({inner})]", 0, 1, "tls.record.content_type", inner)
    src, base = rb.body_source, rb.body_at

    def add(parent, text: str, start: int, size: int, abbrev: str | None = None, value=None):
        n = Node(text, [], base + start if base >= 0 else -1, base + start + size if base >= 0 else -1, abbrev,
                 None if value is None else str(value), src if base >= 0 else 0)
        parent.children.append(n)
        return n

    if inner == 22:
        handshake_nodes(node, msgs, add, hrr, ver == "TLSv1.3")
    elif inner == 23:
        data = rb.cipher if rb.cipher is not None else (rb.body or b"")
        node.add(f"Encrypted Application Data: {_hex(data)}", at + 5 if at >= 0 else -1, at + 5 + len(data) if at >= 0 else -1,
                 "tls.app_data", data.hex())
        if app is not None:
            node.add(f"[Application Data Protocol: {app}]", abbrev="tls.app_data_proto", value=app)
    elif inner == 21 and rb.body is not None and len(rb.body) >= 2:
        a = add(node, "Alert Message", 0, 2)
        level, desc = rb.body[0], rb.body[1]
        from wirefall.dissectors.tls import ALERT_DESCRIPTIONS, ALERT_LEVELS

        add(a, f"Level: {ALERT_LEVELS.get(level, 'Unknown').capitalize()} ({level})", 0, 1, "tls.alert_message.level", level)
        add(a, f"Description: {_alert_words(ALERT_DESCRIPTIONS.get(desc, 'unknown'))} ({desc})", 1, 1, "tls.alert_message.desc", desc)
    elif inner == 20:
        add(node, "Change Cipher Spec Message", 0, len(rb.body or b"\x01"), "tls.change_cipher_spec", "")
    node.children.append(wirefall_node(fr))
    return node


def handshake_title(msgs: list, hrr: bool = False) -> str:
    """``Handshake Protocol: Client Hello`` (or ``Multiple Handshake Messages``): what a record,
    or a QUIC CRYPTO frame, carries."""
    from wirefall.dissectors.tls import HANDSHAKE_TYPES

    if len(msgs) != 1:
        return "Handshake Protocol: Multiple Handshake Messages"
    t = msgs[0][0]
    return "Handshake Protocol: " + ("Hello Retry Request" if t == 2 and hrr else _HS_WORDS.get(t, title(HANDSHAKE_TYPES.get(t, "Unknown"))))


def handshake_nodes(node, msgs: list, add, hrr: bool, tls13: bool) -> None:
    """Each handshake message of ``msgs`` ((type, body) from offset 0 of the bytes ``add``
    places) as Wireshark's ``Handshake Protocol: …`` node: type, length, a hello's fields and
    extensions, EncryptedExtensions' and a TLS 1.3 NewSessionTicket's extensions.  A TLS record's
    (``record_node``) and a QUIC CRYPTO frame's (``analyzer.protocols.quic``)."""
    p = 0
    for t, body in msgs:
        end = p + 4 + len(body)

        def inside(parent, text: str, start: int, size: int, *more, _end=end):
            # (a length a hostile message gives past its own end: the line's bytes cut to the message,
            # and a line that would begin after it placed at its end)
            start = min(start, _end)
            return add(parent, text, start, max(0, min(size, _end - start)), *more)

        name = handshake_title([(t, body)], hrr).split(": ", 1)[1]
        m = add(node, f"Handshake Protocol: {name}", p, 4 + len(body))
        add(m, f"Handshake Type: {_HS_WORDS.get(t, name)} ({t})", p, 1, "tls.handshake.type", t)
        add(m, f"Length: {len(body)}", p + 1, 3, "tls.handshake.length", len(body))
        if t in (1, 2):
            _hello_nodes(m, body, p + 4, t == 1, inside, hrr)
        elif t == 8:  # EncryptedExtensions
            _extensions(m, body, 0, p + 4, inside, 8)
        elif t == 4 and tls13 and len(body) >= 9:  # NewSessionTicket: lifetime, age add, nonce, ticket, extensions
            q = 9 + body[8]
            if q + 2 <= len(body):
                _extensions(m, body, q + 2 + int.from_bytes(body[q : q + 2], "big"), p + 4, inside, 4)
        p = end


def _hello_nodes(m, body: bytes, p: int, client: bool, add, hrr: bool = False) -> None:
    """A ClientHello's or ServerHello's fields up to its extensions' headers (tls.handshake.*)."""
    from wirefall.dissectors.tls import HRR_RANDOM, suite_name

    try:
        v = int.from_bytes(body[0:2], "big")
        add(m, f"Version: {_version_text(v)}", p, 2, "tls.handshake.version", f"0x{v:04x}")
        magic = " (HelloRetryRequest magic)" if not client and body[2:34] == HRR_RANDOM else ""
        add(m, f"Random: {body[2:34].hex()}{magic}", p + 2, 32, "tls.handshake.random", body[2:34].hex())
        q = 34
        sl = body[q]
        add(m, f"Session ID Length: {sl}", p + q, 1, "tls.handshake.session_id_length", sl)
        # a vector whose length runs past the message ends the hello's lines after that length,
        # as tshark's ssl_add_vector stops the hello there ("Malformed vector length")
        if q + 1 + sl > len(body):
            return
        if sl:
            add(m, f"Session ID: {body[q + 1 : q + 1 + sl].hex()}", p + q + 1, sl, "tls.handshake.session_id", body[q + 1 : q + 1 + sl].hex())
        q += 1 + sl
        if client:
            cl = int.from_bytes(body[q : q + 2], "big")
            add(m, f"Cipher Suites Length: {cl}", p + q, 2, "tls.handshake.cipher_suites_length", cl)
            if q + 2 + cl > len(body):
                return
            cs = add(m, f"Cipher Suites ({cl // 2} suite{'s' if cl // 2 != 1 else ''})", p + q + 2, cl)
            for i in range(q + 2, q + 2 + cl - 1, 2):
                c = int.from_bytes(body[i : i + 2], "big")
                add(cs, f"Cipher Suite: {_suite_text(c, suite_name)}", p + i, 2, "tls.handshake.ciphersuite", f"0x{c:04x}")
            q += 2 + cl
            ml = body[q]
            add(m, f"Compression Methods Length: {ml}", p + q, 1, "tls.handshake.comp_methods_length", ml)
            if q + 1 + ml > len(body):
                return
            cm = add(m, f"Compression Methods ({ml} method{'s' if ml != 1 else ''})", p + q + 1, ml)
            for i in range(q + 1, q + 1 + ml):
                add(cm, f"Compression Method: {'null' if body[i] == 0 else 'Unknown'} ({body[i]})", p + i, 1, "tls.handshake.comp_method", body[i])
            q += 1 + ml
        else:
            c = int.from_bytes(body[q : q + 2], "big")
            add(m, f"Cipher Suite: {_suite_text(c, suite_name)}", p + q, 2, "tls.handshake.ciphersuite", f"0x{c:04x}")
            add(m, f"Compression Method: {'null' if body[q + 2] == 0 else 'Unknown'} ({body[q + 2]})", p + q + 2, 1, "tls.handshake.comp_method", body[q + 2])
            q += 3
        _extensions(m, body, q, p, add, 1 if client else 6 if hrr else 2)
    except IndexError:  # (a hello cut short: what was read stands)
        return


def _extensions(m, body: bytes, q: int, p: int, add, msg: int = 0) -> None:
    """A message's extensions from offset ``q`` of its body: their length, then each one's
    header line, type and length, and the contents of those Wireshark users read most
    (``_extension_body``; ``msg``: the handshake message's type, 1 ClientHello, 2 ServerHello,
    6 HelloRetryRequest as the tree reads it)."""
    from wirefall.dissectors.tls import EXTENSION_NAMES

    if q + 2 > len(body):
        return
    el = int.from_bytes(body[q : q + 2], "big")
    add(m, f"Extensions Length: {el}", p + q, 2, "tls.handshake.extensions_length", el)
    q += 2
    end = min(q + el, len(body))
    while q + 4 <= end:
        t, ln = int.from_bytes(body[q : q + 2], "big"), int.from_bytes(body[q + 2 : q + 4], "big")
        name = "Reserved (GREASE)" if is_grease(t) else _EXT_WORDS.get(t) or EXTENSION_NAMES.get(t) if t not in _EXT_UNNAMED else None
        e = add(m, f"Extension: {name or f'Unknown type {t}'} (len={ln})", p + q, 4 + ln)
        add(e, f"Type: {name or 'Unknown'} ({t})", p + q, 2, "tls.handshake.extension.type", t)
        add(e, f"Length: {ln}", p + q + 2, 2, "tls.handshake.extension.len", ln)
        if q + 4 + ln <= end:
            try:
                _extension_body(e, t, body[q + 4 : q + 4 + ln], p + q + 4, msg, add, name is None or is_grease(t))
            except IndexError:  # (an extension cut short: what was read stands)
                pass
        q += 4 + ln


# extension types tshark 4.0 (Debian 12, the oracle) does not name: "Unknown type 65037" in its tree
_EXT_UNNAMED = frozenset({0xFE0D})
# and those it names in other words than dissectors.tls's
_EXT_WORDS = {0xFFA5: "quic_transport_parameters (drafts version)"}


def _names(field: str, fixes: dict[int, str] | None = None) -> dict[int, str]:
    """Value -> Wireshark's word, from the generated value strings (lower-cased there: ``fixes``
    puts back the case of the words that have capitals)."""
    from wirefall.analyzer.fields.valuestrings import UNQUOTED

    out = {v: k for k, v in UNQUOTED.get(field, {}).items()}
    out.update(fixes or {})
    return out


_GROUPS = _names("tls.handshake.extensions_supported_group",
                 {26: "brainpoolP256r1", 27: "brainpoolP384r1", 28: "brainpoolP512r1", 41: "curveSM2"})
_SIG_SCHEMES = _names("tls.handshake.sig_hash_alg")
_SIG_HASH = {0: "None", 1: "MD5", 2: "SHA1", 3: "SHA224", 4: "SHA256", 5: "SHA384", 6: "SHA512", 7: "SM3"}  # tls.handshake.sig_hash_hash
_SIG_SIG = {0: "Anonymous", 1: "RSA", 2: "DSA", 3: "ECDSA", 4: "SM2"}  # tls.handshake.sig_hash_sig
_POINT_FORMATS = {0: "uncompressed", 1: "ansiX962_compressed_prime", 2: "ansiX962_compressed_char2"}
_PSK_MODES = {0: "PSK-only key establishment (psk_ke)", 1: "PSK with (EC)DHE key establishment (psk_dhe_ke)"}
_CERT_COMPRESSION = {1: "zlib", 2: "brotli", 3: "zstd"}
_STATUS_TYPES = {1: "OCSP", 2: "OCSP Multi"}


def _group_text(g: int, entry: bool = False) -> str:
    """A group's word; in a key share entry's title an unknown one says its number (val_to_str's "Unknown (%d)")."""
    return "Reserved (GREASE)" if is_grease(g) else _GROUPS.get(g) or (f"Unknown ({g})" if entry else "Unknown")


def _u16(b: bytes, i: int) -> int:
    if i + 2 > len(b):
        raise IndexError(i)
    return int.from_bytes(b[i : i + 2], "big")


def _extension_body(e, t: int, d: bytes, at: int, msg: int, add, unknown: bool) -> None:
    """An extension's contents as Wireshark's tree shows them (``d`` at ``at`` of the record's
    body): server_name, supported_groups, ec_point_formats, signature_algorithms, ALPN,
    status_request, padding, compress_certificate, session_ticket, pre_shared_key (the
    client's identities and binders, the server's choice), supported_versions,
    psk_key_exchange_modes, key_share, renegotiation_info, NPN (the server's), QUIC transport
    parameters (``_quic_parameters``), and an unknown or GREASE extension's data.  Others keep
    their header lines."""
    n = len(d)

    def put(parent, text: str, start: int, size: int, *more):
        # (a length that overruns the extension: its line covers only the extension's bytes, as a malformed one)
        return add(parent, text, start, max(0, min(size, at + n - start)), *more)

    if unknown:  # (GREASE or a type tshark does not know: its bytes)
        put(e, f"Data: {_hex(d)}" if d else "Data: <MISSING>", at, n, "tls.handshake.extension.data", d.hex())
        return
    if t == 0 and n >= 2:  # server_name
        sni = put(e, "Server Name Indication extension", at, n)
        ll = _u16(d, 0)
        put(sni, f"Server Name list length: {ll}", at, 2, "tls.handshake.extensions_server_name_list_len", ll)
        i = 2
        while i + 3 <= min(n, 2 + ll):
            kind, sl = d[i], _u16(d, i + 1)
            put(sni, f"Server Name Type: {'host_name' if kind == 0 else 'Unknown'} ({kind})", at + i, 1,
                "tls.handshake.extensions_server_name_type", kind)
            put(sni, f"Server Name length: {sl}", at + i + 1, 2, "tls.handshake.extensions_server_name_len", sl)
            name = d[i + 3 : i + 3 + sl].decode("ascii", "replace")
            put(sni, f"Server Name: {name}", at + i + 3, sl, "tls.handshake.extensions_server_name", name)
            i += 3 + sl
    elif t == 10:  # supported_groups
        ll = _u16(d, 0)
        put(e, f"Supported Groups List Length: {ll}", at, 2, "tls.handshake.extensions_supported_groups_length", ll)
        g = put(e, f"Supported Groups ({ll // 2} group{'s' if ll // 2 != 1 else ''})", at + 2, ll)
        for i in range(2, min(n, 2 + ll) - 1, 2):
            v = _u16(d, i)
            put(g, f"Supported Group: {_group_text(v)} (0x{v:04x})", at + i, 2, "tls.handshake.extensions_supported_group", f"0x{v:04x}")
    elif t == 11:  # ec_point_formats
        ll = d[0]
        put(e, f"EC point formats Length: {ll}", at, 1, "tls.handshake.extensions_ec_point_formats_length", ll)
        f = put(e, f"Elliptic curves point formats ({ll})", at + 1, ll)
        for i in range(1, min(n, 1 + ll)):
            put(f, f"EC point format: {_POINT_FORMATS.get(d[i], 'Unknown')} ({d[i]})", at + i, 1,
                "tls.handshake.extensions_ec_point_format", d[i])
    elif t == 13:  # signature_algorithms
        ll = _u16(d, 0)
        put(e, f"Signature Hash Algorithms Length: {ll}", at, 2, "tls.handshake.sig_hash_alg_len", ll)
        a = put(e, f"Signature Hash Algorithms ({ll // 2} algorithm{'s' if ll // 2 != 1 else ''})", at + 2, ll)
        for i in range(2, min(n, 2 + ll) - 1, 2):
            v = _u16(d, i)
            hh, ss = v >> 8, v & 0xFF
            word = _SIG_SCHEMES.get(v) or f"{_SIG_HASH.get(hh, 'Unknown')} {_SIG_SIG.get(ss, 'Unknown')}"
            x = put(a, f"Signature Algorithm: {word} (0x{v:04x})", at + i, 2, "tls.handshake.sig_hash_alg", f"0x{v:04x}")
            put(x, f"Signature Hash Algorithm Hash: {_SIG_HASH.get(hh, 'Unknown')} ({hh})", at + i, 1, "tls.handshake.sig_hash_hash", hh)
            put(x, f"Signature Hash Algorithm Signature: {_SIG_SIG.get(ss, 'Unknown')} ({ss})", at + i + 1, 1,
                "tls.handshake.sig_hash_sig", ss)
    elif t == 16:  # application_layer_protocol_negotiation
        ll = _u16(d, 0)
        put(e, f"ALPN Extension Length: {ll}", at, 2, "tls.handshake.extensions_alpn_len", ll)
        a = put(e, "ALPN Protocol", at + 2, ll)
        i = 2
        while i < min(n, 2 + ll):
            sl = d[i]
            put(a, f"ALPN string length: {sl}", at + i, 1, "tls.handshake.extensions_alpn_str_len", sl)
            proto = d[i + 1 : i + 1 + sl].decode("ascii", "replace")
            put(a, f"ALPN Next Protocol: {proto}", at + i + 1, sl, "tls.handshake.extensions_alpn_str", proto)
            i += 1 + sl
    elif t == 13172 and msg == 2:  # next_protocol_negotiation, the server's list
        a = put(e, "Next Protocol Negotiation", at, n)
        i = 0
        while i < n:
            sl = d[i]
            put(a, f"Protocol string length: {sl}", at + i, 1, "tls.handshake.extensions_npn_str_len", sl)
            proto = d[i + 1 : i + 1 + sl].decode("ascii", "replace")
            put(a, f"Next Protocol: {proto}", at + i + 1, sl, "tls.handshake.extensions_npn", proto)
            i += 1 + sl
    elif t == 5 and msg == 1 and n >= 5 and d[0] == 1:  # status_request: OCSP
        put(e, f"Certificate Status Type: {_STATUS_TYPES[1]} (1)", at, 1, "tls.handshake.extensions_status_request_type", 1)
        r = _u16(d, 1)
        put(e, f"Responder ID list Length: {r}", at + 1, 2, "tls.handshake.extensions_status_request_responder_ids_len", r)
        x = _u16(d, 3 + r)
        put(e, f"Request Extensions Length: {x}", at + 3 + r, 2, "tls.handshake.extensions_status_request_exts_len", x)
    elif t == 21:  # padding
        put(e, f"Padding Data: {_hex(d)}", at, n, "tls.handshake.extensions_padding_data", d.hex())
    elif t == 27 and n >= 1:  # compress_certificate
        ll = d[0]
        put(e, f"Algorithms Length: {ll}", at, 1, "tls.handshake.compress_certificate.algorithms_length", ll)
        for i in range(1, min(n, 1 + ll) - 1, 2):
            v = _u16(d, i)
            put(e, f"Algorithm: {_CERT_COMPRESSION.get(v, 'Unknown')} ({v})", at + i, 2, "tls.handshake.compress_certificate.algorithm", v)
    elif t == 35 and not n:  # session_ticket, empty
        put(e, "Data (0 bytes)", at, 0)
    elif t == 41 and msg == 2 and n == 2:  # pre_shared_key, the server's choice
        k = put(e, "Pre-Shared Key extension", at, n)
        put(k, f"Selected Identity: {_u16(d, 0)}", at, 2, "tls.handshake.extensions.psk.identity.selected", _u16(d, 0))
    elif t == 41 and msg == 1:  # pre_shared_key, the client's identities and binders
        _psk_offer(e, d, at, put)
    elif t in (57, 0xFFA5):  # quic_transport_parameters (0xffa5: the drafts')
        _quic_parameters(e, d, at, msg, put)
    elif t == 43:  # supported_versions
        if msg == 1:
            ll = d[0]
            put(e, f"Supported Versions length: {ll}", at, 1, "tls.handshake.extensions.supported_versions_len", ll)
            for i in range(1, min(n, 1 + ll) - 1, 2):
                v = _u16(d, i)
                put(e, f"Supported Version: {_version_text(v)}", at + i, 2, "tls.handshake.extensions.supported_version", f"0x{v:04x}")
        elif n == 2:
            v = _u16(d, 0)
            put(e, f"Supported Version: {_version_text(v)}", at, 2, "tls.handshake.extensions.supported_version", f"0x{v:04x}")
    elif t == 45 and n >= 1:  # psk_key_exchange_modes
        ll = d[0]
        put(e, f"PSK Key Exchange Modes Length: {ll}", at, 1, "tls.extension.psk_ke_modes_length", ll)
        for i in range(1, min(n, 1 + ll)):
            put(e, f"PSK Key Exchange Mode: {_PSK_MODES.get(d[i], 'Unknown')} ({d[i]})", at + i, 1, "tls.extension.psk_ke_mode", d[i])
    elif t == 51:  # key_share
        k = put(e, "Key Share extension", at, n)
        if msg == 1:
            ll = _u16(d, 0)
            put(k, f"Client Key Share Length: {ll}", at, 2, "tls.handshake.extensions_key_share_client_length", ll)
            i = 2
            while i + 4 <= min(n, 2 + ll):
                g, kl = _u16(d, i), _u16(d, i + 2)
                x = put(k, f"Key Share Entry: Group: {_group_text(g, True)}, Key Exchange length: {kl}", at + i, 4 + kl)
                put(x, f"Group: {_group_text(g)} ({g})", at + i, 2, "tls.handshake.extensions_key_share_group", g)
                put(x, f"Key Exchange Length: {kl}", at + i + 2, 2, "tls.handshake.extensions_key_share_key_exchange_length", kl)
                kx = d[i + 4 : i + 4 + kl]
                put(x, f"Key Exchange: {_hex(kx)}", at + i + 4, kl, "tls.handshake.extensions_key_share_key_exchange", kx.hex())
                i += 4 + kl
        elif n == 2:  # a HelloRetryRequest's: the group the server asks for
            g = _u16(d, 0)
            put(k, f"Selected Group: {_group_text(g)} ({g})", at, 2, "tls.handshake.extensions_key_share_selected_group", g)
        elif n >= 4:
            g, kl = _u16(d, 0), _u16(d, 2)
            x = put(k, f"Key Share Entry: Group: {_group_text(g, True)}, Key Exchange length: {kl}", at, 4 + kl)
            put(x, f"Group: {_group_text(g)} ({g})", at, 2, "tls.handshake.extensions_key_share_group", g)
            put(x, f"Key Exchange Length: {kl}", at + 2, 2, "tls.handshake.extensions_key_share_key_exchange_length", kl)
            kx = d[4 : 4 + kl]
            put(x, f"Key Exchange: {_hex(kx)}", at + 4, kl, "tls.handshake.extensions_key_share_key_exchange", kx.hex())
    elif t == 65281 and n >= 1:  # renegotiation_info
        r = put(e, "Renegotiation Info extension", at, n)
        put(r, f"Renegotiation info extension length: {d[0]}", at, 1, "tls.handshake.extensions_reneg_info_len", d[0])
        if d[0]:
            ri = d[1 : 1 + d[0]]
            put(r, f"Renegotiation info: {_hex(ri)}", at + 1, d[0], "tls.handshake.extensions_reneg_info", ri.hex())


def _bytes_text(b: bytes) -> str:
    """A bytes field's words: its hex (cut as tshark's tree cuts it), ``<MISSING>`` when empty."""
    return _hex(b) if b else "<MISSING>"


def _psk_offer(e, d: bytes, at: int, put) -> None:
    """A ClientHello's pre_shared_key (RFC 8446 4.2.11) as tshark 4.0 writes it: the identities'
    length, each identity (its length, bytes and obfuscated ticket age), the binders' length and
    the binders (one line: 4.0 does not list them).  A length that overruns its list is cut to
    it (ssl_add_vector's "truncating"); a field the extension's bytes do not hold ends it."""
    n = len(d)
    k = put(e, "Pre-Shared Key extension", at, n)
    if n < 2:
        return
    il = _u16(d, 0)
    put(k, f"Identities Length: {il}", at, 2, "tls.handshake.extensions.psk.identities.length", il)
    end = 2 + min(il, n - 2)
    i = 2
    while i < end:
        x = put(k, "PSK Identity (", at + i, 4)
        if end - i < 2:
            return  # (no room for the identity's length: tshark ends the extension there)
        sl = _u16(d, i)
        put(x, f"Identity Length: {sl}", at + i, 2, "tls.handshake.extensions.psk.identity.identity_length", sl)
        sl = min(sl, end - i - 2)
        x.label = f"PSK Identity (length: {sl})"
        ident = d[i + 2 : i + 2 + sl]
        put(x, f"Identity: {_bytes_text(ident)}", at + i + 2, sl, "tls.handshake.extensions.psk.identity.identity", ident.hex())
        if i + 2 + sl + 4 > n:
            return
        age = int.from_bytes(d[i + 2 + sl : i + 6 + sl], "big")
        put(x, f"Obfuscated Ticket Age: {age}", at + i + 2 + sl, 4, "tls.handshake.extensions.psk.identity.obfuscated_ticket_age", age)
        if x.start >= 0:
            x.end = x.start + 2 + sl + 4  # (the identity's node: its length, bytes and age)
        i += 2 + sl + 4
    i = end  # (a list that does not end where its length says: tshark goes on from that end)
    if n - i < 2:
        return
    bl = _u16(d, i)
    put(k, f"PSK Binders length: {bl}", at + i, 2, "tls.handshake.extensions.psk.binders_len", bl)
    put(k, "PSK Binders", at + i + 2, bl, "tls.handshake.extensions.psk.binders", "")


def _varint_at(d: bytes, i: int) -> tuple[int, int] | None:
    """The QUIC variable-length integer at ``d[i]`` and its size; None where ``d`` cuts it
    (``quic_varint``'s IndexError)."""
    try:
        v, end = quic_varint(d, i)
    except IndexError:
        return None
    return v, end - i


# packet-tls-utils.c's quic_transport_parameter_id, as tshark 4.0 has it (0x11 version_information; 0xff73db unnamed)
_QUIC_TP_NAMES = {
    0x00: "original_destination_connection_id", 0x01: "max_idle_timeout", 0x02: "stateless_reset_token",
    0x03: "max_udp_payload_size", 0x04: "initial_max_data", 0x05: "initial_max_stream_data_bidi_local",
    0x06: "initial_max_stream_data_bidi_remote", 0x07: "initial_max_stream_data_uni", 0x08: "initial_max_streams_bidi",
    0x09: "initial_max_streams_uni", 0x0A: "ack_delay_exponent", 0x0B: "max_ack_delay", 0x0C: "disable_active_migration",
    0x0D: "preferred_address", 0x0E: "active_connection_id_limit", 0x0F: "initial_source_connection_id",
    0x10: "retry_source_connection_id", 0x11: "version_information", 0x20: "max_datagram_frame_size",
    0x1000: "cibir_encoding", 0x1057: "loss_bits", 0x2AB2: "grease_quic_bit", 0x7157: "enable_time_stamp",
    0x7158: "enable_time_stamp_v2", 0xDE1A: "min_ack_delay", 0xFF03DE1A: "min_ack_delay",
    0x3127: "google_initial_rtt", 0x3128: "google_connection_options", 0x3129: "google_user_agent",
    0x312A: "google_support_handshake_done", 0x312B: "google_key_update_not_yet_supported",
    0x4751: "google_quic_params", 0x4752: "google_quic_version", 0xFF00: "facebook_partial_reliability",
}
# parameters whose value is one variable-length integer: (field, its words, the parameter line's
# suffix: None nothing, else the value and this unit)
_QUIC_TP_VARINTS: dict[int, tuple[str, str, str | None]] = {
    0x01: ("max_idle_timeout", "max_idle_timeout", " ms"),
    0x03: ("max_udp_payload_size", "max_udp_payload_size", ""),
    0x04: ("initial_max_data", "initial_max_data", ""),
    0x05: ("initial_max_stream_data_bidi_local", "initial_max_stream_data_bidi_local", ""),
    0x06: ("initial_max_stream_data_bidi_remote", "initial_max_stream_data_bidi_remote", ""),
    0x07: ("initial_max_stream_data_uni", "initial_max_stream_data_uni", ""),
    0x08: ("initial_max_streams_bidi", "initial_max_streams_bidi", ""),
    0x09: ("initial_max_streams_uni", "initial_max_streams_uni", ""),
    0x0A: ("ack_delay_exponent", "ack_delay_exponent", None),
    0x0B: ("max_ack_delay", "max_ack_delay", ""),
    0x0E: ("active_connection_id_limit", "Active Connection ID Limit", ""),
    0x20: ("max_datagram_frame_size", "max_datagram_frame_size", ""),
    0x1057: ("loss_bits", "loss_bits", None),
    0x7158: ("enable_time_stamp_v2", "Enable TimestampV2", None),
    0xDE1A: ("min_ack_delay", "min_ack_delay", ""),
    0xFF03DE1A: ("min_ack_delay", "min_ack_delay", ""),
    0x3127: ("google.initial_rtt", "Google Initial RTT", " us"),
    0xFF00: ("facebook.partial_reliability", "Facebook Partial Reliability", None),
}
# parameters whose value is its bytes: (field, its words, written as text)
_QUIC_TP_BYTES: dict[int, tuple[str, str, bool]] = {
    0x00: ("original_destination_connection_id", "original_destination_connection_id", False),
    0x0F: ("initial_source_connection_id", "Initial Source Connection ID", False),
    0x10: ("retry_source_connection_id", "Retry Source Connection ID", False),
    0x3128: ("google.connection_options", "Google Connection options", False),
    0x3129: ("google.user_agent", "Google UserAgent", True),
}
# parameters tshark writes as a line of no value over the parameter's bytes
_QUIC_TP_FLAGS = {0x312A: ("google.support_handshake_done", "Google Support Handshake Done"),
                  0x312B: ("google.key_update_not_yet_supported", "Google Key Update not yet supported")}
_TIME_STAMP_V2 = {1: "I would like to receive TIME_STAMP frames", 2: "I am able to generate TIME_STAMP frames",
                  3: "I am able to generate TIME_STAMP frames and I would like to receive them"}
def _quic_version_text(v: int, grease: bool = False) -> str:
    """A QUIC version field's words: ``1 (0x00000001)``, ``Unknown (0x1a2a3a4a) (GREASE)``
    (``grease``: quic_proto_tree_add_version's word for a reserved version, 0x?a?a?a?a)."""
    from .quic import version_words

    name = version_words(v)
    return f"{name} (0x{v:08x})" + (" (GREASE)" if grease and v & 0x0F0F0F0F == 0x0A0A0A0A else "")


def _quic_tp_name(t: int) -> tuple[str, str]:
    """(the parameter line's words, the Type line's) for parameter id ``t``, as tshark 4.0 writes
    them: an id 27 + 31 N (N >= 1) is GREASE, one it does not know "Unknown 0x0012"."""
    if t % 31 == 27 and t != 27:
        return "GREASE", "GREASE"
    name = _QUIC_TP_NAMES.get(t)
    return name or f"Unknown 0x{t:04x}", name or "Unknown"


def _quic_parameters(e, d: bytes, at: int, msg: int, put) -> None:
    """quic_transport_parameters (RFC 9000 18.2; type 0x39, and 0xffa5 of the drafts) as tshark
    4.0 writes them: per parameter ``Parameter: max_idle_timeout (len=4) 60000 ms`` with its type,
    length and value bytes, and what the value says (an integer, a connection ID, a token, the
    preferred address, versions, Google's and Facebook's).  A list of draft 26 or older (a 16-bit
    length first, 16-bit ids and lengths) is read as such where tshark takes it for one.
    Hostile bytes: a length that overruns the extension gives lines cut to it; a value read at a
    fixed size or as an integer that the extension's bytes do not hold is left out (tshark reads
    on past the extension there, or stops); an id or length that cannot be read ends the list."""
    n = len(d)
    old = n >= 6 and 2 + _u16(d, 0) == n and 6 + _u16(d, 4) <= n
    i = 0
    if old:
        put(e, f"Parameters Length: {_u16(d, 0)}", at, 2, "tls.quic.len", _u16(d, 0))
        i = 2
    while i < n:
        if old:
            if i + 4 > n:
                return
            t, tsize, ln64, lsize = _u16(d, i), 2, _u16(d, i + 2), 2
            ln = min(ln64, n - i - 4)  # (ssl_add_vector's truncation)
        else:
            tv = _varint_at(d, i)
            lv = _varint_at(d, i + tv[1]) if tv is not None else None
            if tv is None or lv is None:
                return
            (t, tsize), (ln64, lsize) = tv, lv
            ln = ln64 & 0xFFFFFFFF  # (tshark keeps 32 bits of it)
        words, type_words = _quic_tp_name(t)
        v = i + tsize + lsize  # (the value's offset)
        p = put(e, f"Parameter: {words} (len={ln})", at + i, tsize + lsize + ln)
        put(p, f"Type: {type_words} (0x{t:02x})", at + i, tsize, "tls.quic.parameter.type", t)
        put(p, f"Length: {ln64}", at + i + tsize, lsize, "tls.quic.parameter.lengt.old" if old else "tls.quic.parameter.length", ln64)
        value = d[v : v + ln]
        put(p, f"Value: {_bytes_text(value)}", at + v, ln, "tls.quic.parameter.value", value.hex())
        _quic_parameter_value(p, t, d, v, ln, at, msg, put)
        i = v + ln


def _quic_parameter_value(p, t: int, d: bytes, v: int, ln: int, at: int, msg: int, put) -> None:
    """The lines a transport parameter's value (``d[v : v + ln]``, at ``at + v``) gives under its node ``p``."""
    f = "tls.quic.parameter."
    if t in _QUIC_TP_VARINTS:
        field, words, suffix = _QUIC_TP_VARINTS[t]
        r = _varint_at(d, v)
        if r is None:
            return
        x, size = r
        shown = f"{_TIME_STAMP_V2.get(x, 'Unknown')} ({x})" if t == 0x7158 else str(x)
        put(p, f"{words}: {shown}", at + v, size, f + field, x)
        if suffix is not None:
            p.label += f" {x}{suffix}"
    elif t in _QUIC_TP_BYTES:
        field, words, text = _QUIC_TP_BYTES[t]
        b = d[v : v + ln]
        shown = b.decode("ascii", "replace") if text else _bytes_text(b)
        put(p, f"{words}: {shown}", at + v, ln, f + field, shown if text else b.hex())
    elif t in _QUIC_TP_FLAGS:
        field, words = _QUIC_TP_FLAGS[t]
        put(p, words, at + v, ln, f + field, "")
    elif t == 0x02 and v + 16 <= len(d):  # stateless_reset_token: 16 bytes, whatever the length says
        put(p, f"stateless_reset_token: {d[v : v + 16].hex()}", at + v, 16, f + "stateless_reset_token", d[v : v + 16].hex())
    elif t == 0x0D:  # preferred_address
        _preferred_address(p, d, v, at, put)
    elif t == 0x1000:  # cibir_encoding: two integers
        r = _varint_at(d, v)
        if r is None:
            return
        put(p, f"length: {r[0]}", at + v, r[1], f + "cibir_encoding.length", r[0])
        p.label += f" Length: {r[0]}"
        r2 = _varint_at(d, v + r[1])
        if r2 is None:
            return
        put(p, f"offset: {r2[0]}", at + v + r[1], r2[1], f + "cibir_encoding.offset", r2[0])
        p.label += f", Offset: {r2[0]}"
    elif t == 0x11:  # version_information: the chosen version, then the others, 4 bytes each
        for k in range(0, max(ln, 4), 4):
            if v + k + 4 > len(d):
                return
            ver = int.from_bytes(d[v + k : v + k + 4], "big")
            put(p, f"{'Other' if k else 'Chosen'} Version: {_quic_version_text(ver, True)}", at + v + k, 4,
                f + ("vi.other_version" if k else "vi.chosen_version"), f"0x{ver:08x}")
    elif t == 0x4752 and v + 4 <= len(d):  # google_quic_version (and the server's list, in EncryptedExtensions)
        ver = int.from_bytes(d[v : v + 4], "big")
        put(p, f"Google QUIC version: {_quic_version_text(ver)}", at + v, 4, f + "google.quic_version", f"0x{ver:08x}")
        if msg == 8 and v + 5 <= len(d):
            vl = d[v + 4]
            put(p, f"Google Supported Versions Length: {vl}", at + v + 4, 1, f + "google.supported_versions_length", vl)
            for k in range(v + 5, v + 5 + vl // 4 * 4, 4):
                if k + 4 > len(d):
                    return
                ver = int.from_bytes(d[k : k + 4], "big")
                put(p, f"Google Supported Version: {_quic_version_text(ver, True)}", at + k, 4,
                    f + "google.supported_version", f"0x{ver:08x}")
    elif t == 0x4751:  # google_quic_params: its bytes and their first 4 (gQUIC's tags after those are not written)
        b = d[v : v + ln]
        put(p, f"Google QUIC parameters: {_bytes_text(b)}", at + v, ln, f + "google.quic_params", b.hex())
        if v + 4 <= len(d):
            put(p, f"Google Unknown Field: {d[v : v + 4].hex()}", at + v, 4, f + "google.quic_params_unknown_field", d[v : v + 4].hex())


def _preferred_address(p, d: bytes, v: int, at: int, put) -> None:
    """preferred_address: IPv4 address and port, IPv6 address and port, a connection ID (its
    length read against the extension's end, as tshark reads it) and a stateless reset token."""
    import socket

    f = "tls.quic.parameter.preferred_address."
    n = len(d)
    if v + 24 > n:
        return
    ip4, ip6 = socket.inet_ntop(socket.AF_INET, d[v : v + 4]), socket.inet_ntop(socket.AF_INET6, d[v + 6 : v + 22])
    put(p, f"ipv4Address: {ip4}", at + v, 4, f + "ipv4address", ip4)
    put(p, f"ipv4Port: {_u16(d, v + 4)}", at + v + 4, 2, f + "ipv4port", _u16(d, v + 4))
    put(p, f"ipv6Address: {ip6}", at + v + 6, 16, f + "ipv6address", ip6)
    put(p, f"ipv6Port: {_u16(d, v + 22)}", at + v + 22, 2, f + "ipv6port", _u16(d, v + 22))
    q = v + 24
    if q >= n:
        return  # (no room for the connection ID's length)
    cl = d[q]
    put(p, f"Length: {cl}", at + q, 1, f + "connectionid.length", cl)
    cl = min(cl, n - q - 1)
    cid = d[q + 1 : q + 1 + cl]
    put(p, f"connectionId: {_bytes_text(cid)}", at + q + 1, cl, f + "connectionid", cid.hex())
    q += 1 + cl
    if q + 16 <= n:
        put(p, f"statelessResetToken: {d[q : q + 16].hex()}", at + q, 16, f + "statelessresettoken", d[q : q + 16].hex())


def _suite_text(c: int, suite_name) -> str:
    if is_grease(c):
        return f"Reserved (GREASE) (0x{c:04x})"
    name = suite_name(c)
    return f"{name if name and not name.startswith('0x') else 'Unknown'} (0x{c:04x})"


def frame_node(node, fr: Frame):
    """A TLS record or handshake message whose bytes the tree does not read again (one
    carried in QUIC CRYPTO frames; a record whose segments the capture lacks): Wireshark's
    lines that its frame gives, without bytes."""
    from wirefall.dissectors.tls import HANDSHAKE_TYPES

    f = fr.fields or {}
    codes = {v: k for k, v in HANDSHAKE_TYPES.items()}
    ct = ContentType.__members__.get(fr.type)
    ctype = int(ct) if ct is not None else None
    if "quic_epoch" not in f and ctype is not None:
        node.add(f"Content Type: {_CT_WORDS[ctype]} ({ctype})", abbrev="tls.record.content_type", value=str(ctype))
        node.add(f"Length: {fr.length}", abbrev="tls.record.length", value=str(fr.length))
    for m in f.get("messages") or ():
        key = str(m).upper() if "_" in str(m) else _CAMEL.sub("_", str(m)).upper()
        t = codes.get(key)
        name = _HS_WORDS.get(t, title(m)) if t is not None else title(m)
        h = node.add(f"Handshake Protocol: {name}")
        if t is not None:
            h.add(f"Handshake Type: {name} ({t})", abbrev="tls.handshake.type", value=str(t))
    if fr.error:
        node.add(f"[Error: {fr.error}]")
    from wirefall.analyzer.detail import wirefall_node

    node.children.append(wirefall_node(fr))
    return node
