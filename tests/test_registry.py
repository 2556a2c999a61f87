"""The protocol registry (dissectors/registry.py): one descriptor per protocol, read by the
waterfall, the detail tree and the tshark oracle.

Truth: the RFC / draft frame-type tables (RFC 9113 §6, RFC 9114 §7.2 and §11.2.1, RFC 9218
§7.2, RFC 9000 §19 / §12.4 Table 3, the SPDY/3 draft in ../shared/specs), tshark's own value
strings and field list (``tshark -G values`` / ``-G fields``), and the pipeline's frames on
the sample captures."""
from __future__ import annotations

import collections
import dataclasses
import os
import random
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from wirefall.analyzer import waterfall
from wirefall.analyzer.model import PROTO_NAMES
from wirefall.analyzer.sessions import KINDS, looks_like_h2_frames
from wirefall.dissectors import dns, http2, http3, quic, registry, spdy, tls
from wirefall.dissectors.registry import REGISTRY, descriptor, frame_kind

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wf_fixture import make_analysis  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_captures"
SHARED = ROOT.parent / "shared"
SPDY_DRAFT = SHARED / "specs" / "draft-mbelshe-httpbis-spdy-00.txt"

# -- the specifications' tables, transcribed ------------------------------------------------
RFC9113_FRAME_TYPES = {  # RFC 9113 §6 / §11.2 (+ RFC 7838 ALTSVC, RFC 8336 ORIGIN, RFC 9218 PRIORITY_UPDATE)
    "DATA": 0x00, "HEADERS": 0x01, "PRIORITY": 0x02, "RST_STREAM": 0x03, "SETTINGS": 0x04, "PUSH_PROMISE": 0x05,
    "PING": 0x06, "GOAWAY": 0x07, "WINDOW_UPDATE": 0x08, "CONTINUATION": 0x09, "ALTSVC": 0x0A, "ORIGIN": 0x0C,
    "PRIORITY_UPDATE": 0x10,
}
RFC9113_FLAGS = {  # RFC 9113 §6.1-§6.10
    "DATA": {"END_STREAM": 0x01, "PADDED": 0x08},
    "HEADERS": {"END_STREAM": 0x01, "END_HEADERS": 0x04, "PADDED": 0x08, "PRIORITY": 0x20},
    "SETTINGS": {"ACK": 0x01}, "PING": {"ACK": 0x01},
    "PUSH_PROMISE": {"END_HEADERS": 0x04, "PADDED": 0x08}, "CONTINUATION": {"END_HEADERS": 0x04},
}
RFC9114_FRAME_TYPES = {  # RFC 9114 §7.2 / §11.2.1 (reserved HTTP/2 types: §7.2.8), RFC 9218 §7.2
    "DATA": 0x00, "HEADERS": 0x01, "CANCEL_PUSH": 0x03, "SETTINGS": 0x04, "PUSH_PROMISE": 0x05, "GOAWAY": 0x07,
    "MAX_PUSH_ID": 0x0D, "PRIORITY_UPDATE": 0xF0700, "PRIORITY_UPDATE_PUSH": 0xF0701,
    "H2_PRIORITY": 0x02, "H2_PING": 0x06, "H2_WINDOW_UPDATE": 0x08, "H2_CONTINUATION": 0x09,
}
RFC9114_STREAM_TYPES = {"CONTROL": 0x00, "PUSH": 0x01, "QPACK_ENCODER": 0x02, "QPACK_DECODER": 0x03}  # §6.2, RFC 9204 §4.2
RFC9000_FRAME_TYPES = {  # RFC 9000 §19 (Table 3, §12.4); RFC 9221 DATAGRAM; draft-ietf-quic-ack-frequency-07+
    "PADDING": 0x00, "PING": 0x01, "ACK": 0x02, "ACK_ECN": 0x03, "RESET_STREAM": 0x04, "STOP_SENDING": 0x05,
    "CRYPTO": 0x06, "NEW_TOKEN": 0x07, "STREAM": 0x08, "MAX_DATA": 0x10, "MAX_STREAM_DATA": 0x11,
    "MAX_STREAMS_BIDI": 0x12, "MAX_STREAMS_UNI": 0x13, "DATA_BLOCKED": 0x14, "STREAM_DATA_BLOCKED": 0x15,
    "STREAMS_BLOCKED_BIDI": 0x16, "STREAMS_BLOCKED_UNI": 0x17, "NEW_CONNECTION_ID": 0x18,
    "RETIRE_CONNECTION_ID": 0x19, "PATH_CHALLENGE": 0x1A, "PATH_RESPONSE": 0x1B, "CONNECTION_CLOSE": 0x1C,
    "CONNECTION_CLOSE_APP": 0x1D, "HANDSHAKE_DONE": 0x1E, "IMMEDIATE_ACK": 0x1F, "DATAGRAM": 0x30,
    "DATAGRAM_LEN": 0x31, "ACK_FREQUENCY": 0xAF,
}
RFC8446_CONTENT_TYPES = {"CHANGE_CIPHER_SPEC": 20, "ALERT": 21, "HANDSHAKE": 22, "APPLICATION_DATA": 23, "HEARTBEAT": 24}
RFC1035_RCODES = {"NOERROR": 0, "FORMERR": 1, "SERVFAIL": 2, "NXDOMAIN": 3, "NOTIMP": 4, "REFUSED": 5}


def _members(enum) -> dict[str, int]:
    return {m.name: int(m) for m in enum}


# -- every protocol has a descriptor --------------------------------------------------------
def test_every_decoded_protocol_has_a_descriptor():
    assert sorted(REGISTRY) == ["dns", "gquic", "http1", "http2", "http3", "quic", "spdy", "tls"]
    for name, d in REGISTRY.items():
        assert d.name == name and d.display and d.protocols
        for p in d.protocols:
            assert descriptor(p) is d
        assert d.fields_module is None or (ROOT / "analyzer" / "fields" / f"{d.fields_module}.py").is_file()
    # every session kind the pipeline hands a stream to, and every application protocol of
    # the packet list, is a registered protocol
    session_kind = {"h2": "http2", "http1": "http1", "tls": "tls", "spdy": "spdy", "quic": "quic", "dns": "dns"}
    assert set(KINDS) == set(session_kind)
    assert {descriptor(session_kind[k]).name for k in KINDS} == set(session_kind.values())
    app = {n.upper() for n in PROTO_NAMES[PROTO_NAMES.index("TLS"):PROTO_NAMES.index("DNS") + 1]}
    assert app == {d.display for d in REGISTRY.values()}


def test_one_answer_to_is_this_quic():
    """Which protocols QUIC carries is the registry's answer (the statistics, the completeness
    reasons, the qlog export and the browser logs each kept a list of their own, and HTTP/3's
    later drafts were missing from some); an HTTP/3 draft's ALPN resolves to HTTP/3."""
    from wirefall.dissectors.registry import over_quic

    quic = {p for p in ("h3", "h3-29", "h3-32", "quic", "gquic", "h2", "h2c", "http/1.1", "spdy/3.1", "tls", "dns") if over_quic(p)}
    assert quic == {"h3", "h3-29", "h3-32", "quic", "gquic"}
    assert descriptor("h3-32") is REGISTRY["http3"] and not over_quic(None) and not over_quic("")
    with pytest.raises(KeyError):
        descriptor("h2-32")  # (a prefix claims drafts of its own protocol only)


CAPTURES = [
    ("page/page-h3.pcapng", "page/page-h3.keys"),
    ("spdy/spdy2-plain.pcap", None),
    ("spdy/spdy3.1-plain.pcap", None),
    ("http/h2c-curl.pcap", None),
    ("tls/curl_http11.pcap", "tls/curl_http11.keys"),
    ("http/http1-node.pcap", None),
]


def test_pipeline_frames_on_samples_resolve_to_descriptors():
    from wirefall.analyzer.pipeline import analyze

    seen: set[str] = set()
    for cap, keys in CAPTURES:
        an = analyze(str(SAMPLES / cap), keylogs=[str(SAMPLES / keys)] if keys else None)
        for f in an.frames:
            d = descriptor(f.protocol)
            seen.add(d.name)
            if d.type_names and not (d.name == "spdy" and f.type == "DATA"):  # (SPDY DATA frames have no type)
                assert f.type in d.type_names.values() or f.type.startswith(("UNKNOWN", "GREASE")), (cap, f.protocol, f.type)
    assert seen == {"quic", "http3", "tls", "spdy", "http2", "http1"}
    gq = SHARED / "captures" / "gquic" / "dragon3.pcap"
    if gq.exists():
        assert "gquic" in {descriptor(f.protocol).name for f in analyze(str(gq)).frames}


# -- wire constants equal the specifications ------------------------------------------------
def test_http2_frame_types_and_flags_are_rfc_9113():
    d = descriptor("http2")
    got = _members(d.frame_types)
    assert {k: v for k, v in got.items() if k != "BLOCKED"} == RFC9113_FRAME_TYPES
    assert got["BLOCKED"] == 0x0B  # draft-ietf-httpbis-http2-16 §6.11 (gone from the RFC; Wireshark decodes it)
    # the dissector's own numbers and tables are the same ones
    assert http2.FRAME_NAMES == d.type_names
    for name, code in got.items():
        assert getattr(http2, name, code) == code
    for t, flags in RFC9113_FLAGS.items():
        assert dict((n, b) for b, n in d.flags[t]) == flags
        assert http2.VALID_FLAGS[RFC9113_FRAME_TYPES[t]] == sum(flags.values())
    assert {n for n, c in got.items() if http2.VALID_FLAGS.get(c) == 0} >= {"PRIORITY", "RST_STREAM", "GOAWAY", "WINDOW_UPDATE"}


def test_http3_frame_and_stream_types_are_rfc_9114():
    assert _members(http3.H3FrameType) == RFC9114_FRAME_TYPES
    assert _members(http3.H3StreamType) == RFC9114_STREAM_TYPES
    assert http3.H2_RESERVED == {2, 6, 8, 9}
    assert http3.FRAME_TYPES[0xF0701] == "PRIORITY_UPDATE" and http3.FRAME_TYPES[0x08] == "WINDOW_UPDATE"
    assert http3.STREAM_TYPES == {0: "control", 1: "push", 2: "qpack_encoder", 3: "qpack_decoder"}


def test_quic_frame_types_are_rfc_9000():
    assert _members(quic.QuicFrameType) == RFC9000_FRAME_TYPES
    names = descriptor("quic").type_names
    assert {names[c] for c in range(0x08, 0x10)} == {"STREAM"}
    assert names[0x03] == "ACK" and names[0x13] == "MAX_STREAMS" and names[0x1D] == "CONNECTION_CLOSE"
    # §12.4 Table 3: the frames an Initial / Handshake packet may carry
    Q = quic.QuicFrameType
    assert quic.ALLOWED_IN_HANDSHAKE == {Q.PADDING, Q.PING, Q.ACK, Q.ACK_ECN, Q.CRYPTO, Q.CONNECTION_CLOSE}


def test_tls_and_dns_numbers():
    assert _members(tls.ContentType) == RFC8446_CONTENT_TYPES
    assert (tls.CCS, tls.HANDSHAKE, tls.APPLICATION_DATA) == (20, 22, 23)
    assert tls.HANDSHAKE_TYPES[1] == "CLIENT_HELLO" and tls.HANDSHAKE_TYPES[254] == "MESSAGE_HASH"  # RFC 8446 §4
    assert _members(dns.Rcode) == RFC1035_RCODES
    assert (dns.RRType.A, dns.RRType.AAAA, dns.RRType.HTTPS) == (1, 28, 65)  # RFC 1035, 3596, 9460


def _spdy_draft_types() -> dict[str, int]:
    """Control frame types from the SPDY/3 draft: "The message type for a X message is N",
    else the type field of the frame diagram under the section's heading."""
    text = SPDY_DRAFT.read_text()
    out = {m.group(1): int(m.group(2)) for m in re.finditer(r"message type for a (\w+) message is (\d+)", text)}
    for m in re.finditer(r"^2\.6\.\d+\.\s+(\w+)\s*$", text, re.M):
        name = m.group(1)
        if name in out:
            continue
        row = re.search(r"\|1\|\s*(?:version|[01]+)\s*\|\s*([01]+|\d+)\s*\|", text[m.end():m.end() + 2500])
        if row:
            v = row.group(1)
            out[name] = int(v, 2) if set(v) <= {"0", "1"} and len(v) > 2 else int(v)
    return out


def test_spdy_control_types_are_the_spdy3_draft():
    if not SPDY_DRAFT.exists():
        pytest.skip("../shared/specs not present")
    draft = _spdy_draft_types()
    got = _members(spdy.SpdyControlType)
    # The draft's CREDENTIAL diagram reads 0b1011 = 11 (and version 1): an erratum; every
    # implementation (Chromium, Wireshark's spdy.type "10 CREDENTIAL", node-spdy) uses 10.
    assert draft.pop("CREDENTIAL") == 11 and got["CREDENTIAL"] == 10
    assert draft == {k: v for k, v in got.items() if k not in ("NOOP", "CREDENTIAL")}
    assert len(draft) == 8
    assert got["NOOP"] == 5  # SPDY/2 only (draft-mbelshe-spdy-00 §2.7.5); SPDY/3 removed it
    assert spdy.CONTROL_NAMES == descriptor("spdy").type_names and spdy.SYN_REPLY == 2


# -- against tshark's value strings ---------------------------------------------------------
_VALUE_FIELDS = {"http2.type", "spdy.type", "quic.frame_type", "http3.frame_type", "http3.stream_type",
                 "tls.record.content_type", "dns.qry.type"}


@cache
def _tshark_values() -> dict[str, dict[int, str]]:
    out = subprocess.run(["tshark", "-G", "values"], capture_output=True, text=True, timeout=300,
                         env={"LC_ALL": "C", "PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")})
    vals: dict[str, dict[int, str]] = collections.defaultdict(dict)
    for line in out.stdout.splitlines():
        p = line.split("\t")
        if len(p) < 4 or p[1] not in _VALUE_FIELDS:
            continue
        if p[0] in ("V", "V64"):
            vals[p[1]][int(p[2], 0)] = p[3]
        elif p[0] == "R" and len(p) >= 5:
            for v in range(int(p[2], 0), int(p[3], 0) + 1):
                vals[p[1]][v] = p[4]
    return vals


def test_frame_names_agree_with_tshark():
    v = _tshark_values()
    assert v["http2.type"] == descriptor("http2").type_names
    # tshark 4.0 names SPDY's 0 (DATA, no control type) and 11 (INVALID) but not SPDY/2's NOOP
    assert {c: n for c, n in v["spdy.type"].items() if c not in (0, 11)} == {c: n for c, n in spdy.CONTROL_NAMES.items() if c != 5}
    # QUIC: tshark's words ("MAX_STREAMS (BIDI)") to the frame name; tshark 4.0 knows IMMEDIATE_ACK
    # at 0xac (ack-frequency draft -01) where draft -07 and later put it at 0x1f
    tq = {c: n.split(" (")[0] for c, n in v["quic.frame_type"].items() if c < 0x40 or c == 0xAF}
    ours = dict(descriptor("quic").type_names)
    assert ours.pop(0x1F) == "IMMEDIATE_ACK" and v["quic.frame_type"][0xAC] == "IMMEDIATE_ACK"
    assert tq == ours
    th3 = v["http3.frame_type"]
    h3 = descriptor("http3").type_names
    assert {c: n for c, n in th3.items() if n != "Reserved"} == {c: n for c, n in h3.items() if c not in http3.H2_RESERVED}
    assert {c for c, n in th3.items() if n == "Reserved"} >= set(http3.H2_RESERVED)
    assert {c: n.split(" ")[0].upper().replace(" ", "") for c, n in v["http3.stream_type"].items()} == {
        int(t): t.name.split("_")[0] if t.name.startswith("QPACK") else t.name for t in http3.H3StreamType}
    from wirefall.analyzer.detail import _CTYPE_NAMES

    assert {c: n for c, n in v["tls.record.content_type"].items() if c in tls.CONTENT_TYPES} == _CTYPE_NAMES
    assert {c: v["dns.qry.type"][c].split(" ")[0] for c in dns.TYPE_NAMES} == dns.TYPE_NAMES


def test_oracle_field_names_are_tsharks():
    out = subprocess.run(["tshark", "-G", "fields"], capture_output=True, text=True, timeout=300,
                         env={"LC_ALL": "C", "PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")})
    known = {p[2] for p in (line.split("\t") for line in out.stdout.splitlines()) if p[0] == "F" and len(p) > 2}
    protos = {p[2] for p in (line.split("\t") for line in out.stdout.splitlines()) if p[0] == "P" and len(p) > 2}
    assert len(known) > 100000
    checked = 0
    for d in REGISTRY.values():
        assert d.oracle is not None, d.name
        assert d.oracle.layer in protos, d.name
        for tf in [d.oracle.type_field, *d.oracle.fields.values()]:
            if tf:
                assert tf in known, (d.name, tf)
                checked += 1
    assert checked >= 12
    # the oracle's specs are the registry's
    from wirefall.oracle import crosscheck

    specs = crosscheck.PROTOCOLS
    assert specs["http2"].fields == dict(descriptor("http2").oracle.fields)
    for name in ("http2", "spdy", "quic", "http3", "tls"):
        o = descriptor(name).oracle
        assert (specs[name].layer, specs[name].type_field) == (o.layer, o.type_field)
        assert specs[name].protocols == descriptor(name).protocols


# -- consumers read the registry --------------------------------------------------------------
def test_frame_kind_lookup():
    assert frame_kind("h2c", "RST_STREAM") == {"reset"}
    assert frame_kind("h3-29", "PUSH_PROMISE") == {"push", "headers"}
    assert frame_kind("quic", "STOP_SENDING") == {"reset"}
    assert frame_kind("spdy/3.1", "SYN_STREAM") == {"headers"}
    assert frame_kind("spdy/3", "PUSH_PROMISE") == set()  # (no such SPDY frame)
    assert frame_kind("nonesuch", "RST_STREAM") == set()
    with pytest.raises(KeyError):
        descriptor("nonesuch")


def _swap(monkeypatch, name: str, **kinds) -> None:
    d = descriptor(name)
    monkeypatch.setitem(registry._DESCRIPTORS, name, dataclasses.replace(d, kinds=dataclasses.replace(d.kinds, **kinds)))


def test_waterfall_markers_follow_the_registry(monkeypatch):
    def markers():
        wf = waterfall.build(make_analysis())
        return {r.url.rsplit("/", 1)[-1]: sorted((m.kind, m.label, m.packet) for m in r.markers) for r in wf.rows}

    before = markers()
    assert ("reset", "RST_STREAM CANCEL", 141) in before["cancelled"]  # drawn from the RST_STREAM frame
    assert any(k == "push" for k, _, _ in before["pushed.js"]) and any(k == "priority" for k, _, _ in before["app.js"])
    _swap(monkeypatch, "http2", reset=frozenset())
    assert markers() == before  # (SPDY's descriptor still names RST_STREAM a reset: markers use the union)
    _swap(monkeypatch, "spdy", reset=frozenset())
    after = markers()
    # RST_STREAM is no longer a reset kind: the frame's marker ("RST_STREAM CANCEL") is gone,
    # only the exchange's own reset state is drawn ("reset CANCEL", at the exchange's end)
    assert [m[:2] for m in after["cancelled"] if m[0] == "reset"] == [("reset", "reset CANCEL")]
    assert {k: c for k, c in after.items() if k != "cancelled"} == {k: c for k, c in before.items() if k != "cancelled"}
    _swap(monkeypatch, "http2", reset=frozenset({"RST_STREAM"}), push=frozenset())
    _swap(monkeypatch, "http3", push=frozenset())
    now = markers()
    assert ("reset", "RST_STREAM CANCEL", 141) in now["cancelled"]
    assert [m for m in now["pushed.js"] if m[0] == "push"] != [m for m in before["pushed.js"] if m[0] == "push"]  # no PUSH_PROMISE time
    monkeypatch.undo()
    assert markers() == before


# -- one rule for a plausible HTTP/2 frame header ---------------------------------------------
def _frame(t: int, flags: int, sid: int, payload: bytes) -> bytes:
    return len(payload).to_bytes(3, "big") + bytes([t, flags]) + sid.to_bytes(4, "big") + payload


def test_one_plausible_h2_frame_rule():
    settings = _frame(4, 0, 0, bytes(6))
    headers = _frame(1, 0x05, 1, b"\x82")
    assert looks_like_h2_frames(settings + headers)
    assert looks_like_h2_frames(_frame(9, 0x04, 1, b"\x84") + headers)  # a mid-stream capture starting in a header block
    # what the old sniffer rule let through and the dissector's rule refuses
    assert not looks_like_h2_frames(_frame(0x0D, 0, 1, b"") + headers)  # unknown type
    assert not looks_like_h2_frames(_frame(0, 0x40, 1, b"x") + headers)  # a flag DATA does not define
    assert not looks_like_h2_frames(_frame(2, 0, 1, bytes(4)) + headers)  # PRIORITY is 5 bytes
    assert not looks_like_h2_frames(_frame(7, 0, 0, bytes(4)) + headers)  # GOAWAY is at least 8
    assert not looks_like_h2_frames(_frame(4, 1, 0, bytes(6)) + headers)  # a SETTINGS ACK is empty
    # the sniffer and the dissector's resynchronisation apply the same rule (only CONTINUATION,
    # a header block's middle, differs: named by block_middle)
    conn = http2.H2Connection()
    d = conn.dirs[0]
    rng = random.Random(19)
    samples = [settings, headers, _frame(9, 4, 3, b""), _frame(8, 0, 0, bytes(4)), _frame(6, 1, 0, bytes(8))]
    for _ in range(20000):
        b = bytearray(rng.choice(samples) + bytes(8))
        for _ in range(rng.randrange(3)):
            b[rng.randrange(9)] = rng.randrange(256)
        want = conn._plausible(d, bytes(b), 0)
        assert http2.plausible_frame_end(bytes(b), 0, d.max_frame) == want
        if b[3] != http2.CONTINUATION:
            assert http2.plausible_frame_end(bytes(b), 0, d.max_frame, block_middle=True) == want
