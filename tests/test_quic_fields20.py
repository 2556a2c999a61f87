"""QUIC / HTTP/3 / gQUIC protocol fields against tshark 4.0, on captures of real
implementations: the uncommon frames' Info words (``RS(4)``, ``SS(4)``, ``MSD(4)``, ``RC``,
``Version Negotiation, DCID=…, SCID=…``), the QUIC packet header in the detail tree (tshark's
field names, values, positions and sizes, from ``tshark -T pdml``), the error-code and
NEW_CONNECTION_ID fields, the HTTP/3 SETTINGS in wire order (GREASE identifiers too), and the
filter fields ``quic.nci.*``, ``quic.token_length``, ``quic.supported_version``,
``http3.settings.*``, ``gquic.cid`` (packet sets equal to tshark's ``-Y``).

The v1, v2 and Version Negotiation captures are made by scripts/quic/proto_frames.py (aioquic
client and server in memory, key log) into a temporary folder; the others are sample and
third-party captures (skipped when absent)."""
from __future__ import annotations

import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path

import pytest
import tshark_tap

from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.detail import decrypted_quic, frames_on_packet, packet_detail
from wirefall.analyzer.fields import quic as quic_fields
from wirefall.analyzer.fields.packet import PacketContext, PacketView
from wirefall.analyzer.filter import filter_packets
from wirefall.analyzer.packet_record import packet_record
from wirefall.analyzer.pipeline import analyze
from wirefall.analyzer.protocols import quic as quic_hooks
from wirefall.dissectors.http3 import Http3Dissector, settings_items

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "captures"
TSHARK = shutil.which("tshark")

pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")

# tshark's QUIC header fields (packet bytes): the fields of the one header parser
# (analyzer/protocols/quic.py: parse_headers); and the frame fields wirefall names (decrypted bytes)
HEADER_FIELDS = quic_hooks.HEADER_FIELDS
FRAME_FIELDS = {
    "quic.rsts.stream_id", "quic.rsts.application_error_code", "quic.rsts.final_size", "quic.ss.stream_id",
    "quic.ss.application_error_code", "quic.cc.error_code", "quic.cc.error_code.app", "quic.cc.frame_type",
    "quic.cc.reason_phrase.length", "quic.cc.reason_phrase", "quic.nci.sequence", "quic.nci.retire_prior_to",
    "quic.nci.connection_id.length", "quic.nci.connection_id", "quic.nci.stateless_reset_token",
    "http3.settings.id", "http3.settings.value", "http3.settings.qpack.max_table_capacity",
    "http3.settings.max_field_section_size", "http3.settings.qpack.blocked_streams", "http3.settings.extended_connect",
}


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("proto_frames")
    subprocess.run([sys.executable, str(ROOT / "scripts" / "quic" / "proto_frames.py"), str(out)], check=True,
                   capture_output=True, timeout=300)
    return out


def _spec(made: Path, spec: str) -> tuple[Path, Path | None]:
    if spec.startswith("made:"):
        return made / f"quic-{spec[5:]}.pcap", made / f"quic-{spec[5:]}.keys"
    if spec.startswith("shared:"):
        if not SHARED.is_dir():
            pytest.skip("third-party captures folder absent")
        path = SHARED / spec[7:]
    else:
        path = ROOT / spec
    if not path.exists():
        pytest.skip(f"{spec} absent")
    keys = path.with_suffix(".keys")
    return path, keys if keys.exists() else None


@cache
def _analysis(path: Path, keys: Path | None):
    return analyze(str(path), [str(keys)] if keys else [])


def _topts(keys: Path | None) -> list[str]:
    return ["-o", f"tls.keylog_file:{keys}"] if keys else []


# ---------------------------------------------------------------- Info


@pytest.mark.parametrize("spec,words", [
    ("made:v1", ["RS(8)", "SS(8)", "MSD(4)", "MD", "RC", "NCI", "PC", "PR", "DG", "CC", "DONE"]),
    ("made:v2", ["RS(8)", "SS(8)", "MSD(4)", "RC", "PC", "PR"]),
    ("made:vn", ["Version Negotiation, DCID="]),
    ("shared:pcap2qlog/ngtcp2-29-dsb.pcapng", ["NT", "MD"]),
])
def test_info_equals_tshark_packet_by_packet(made, spec, words):
    path, keys = _spec(made, spec)
    an = _analysis(path, keys)
    want = subprocess.run([TSHARK, "-r", str(path), *_topts(keys), "-T", "fields", "-e", "_ws.col.Info"],
                          capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(want) == an.packets
    src = PacketSource(str(path))
    got = [packet_record(an, src, n).info for n in range(1, an.packets + 1)]
    assert [(n, g, w) for n, (g, w) in enumerate(zip(got, want, strict=True), 1) if g != w] == []
    text = "\n".join(got)
    for w in words:
        assert w in text, w


# ---------------------------------------------------------------- detail tree vs PDML


@cache
def _pdml_text(path: Path, keys: Path | None) -> str:
    return subprocess.run([TSHARK, "-r", str(path), *_topts(keys), "-T", "pdml"], capture_output=True, text=True, check=True).stdout


def _pdml(path: Path, keys: Path | None) -> list[list[tuple[str, str, int, int]]]:
    """Per packet: (field, show, pos, size) of tshark's QUIC header and named frame fields."""
    pkts = []
    for pk in ET.fromstring(_pdml_text(path, keys)).iter("packet"):
        rows = []
        for k, proto in enumerate(q for q in pk.iter("proto") if q.get("name") == "quic"):
            fixed = next((f.get("show") for f in proto.iter("field") if f.get("name") == "quic.fixed_bit"), "1")
            if k and fixed == "0":
                continue  # padding after coalesced packets (fixed bit clear): tshark 4.0 calls it a short header, 4.2 padding
            rows += _fields(proto)
        for proto in pk.iter("proto"):
            if proto.get("name") == "http3":
                rows += _fields(proto)
        pkts.append(rows)
    return pkts


def _fields(proto) -> list[tuple[str, str, int, int]]:
    rows = []
    if True:
        for f in proto.iter("field"):
            name = f.get("name")
            if name in HEADER_FIELDS or name in FRAME_FIELDS:
                rows.append((name, f.get("show"), int(f.get("pos")), int(f.get("size"))))
    return rows


def _tree(an, src, n: int) -> list[tuple[str, str, int, int]]:
    rows = []
    for root in packet_detail(an, src, n):
        for x in root.walk():
            if x.abbrev in HEADER_FIELDS or x.abbrev in FRAME_FIELDS:
                rows.append((x.abbrev, str(x.value), x.start, x.end - x.start))
    return rows


@pytest.mark.parametrize("spec", [
    "made:v1", "made:v2", "made:vn",
    "sample_captures/page/page-h3.pcapng",  # Chromium: coalesced packets, GREASE settings
    "sample_captures/quic/aioquic-h3.pcap",  # datagram padding after the packet
    "shared:retina/quic_retry.pcapng",  # Retry (token, integrity tag), Initial tokens, no key log
    "shared:pcap2qlog/ngtcp2-29-dsb.pcapng",  # draft-29, keys in the pcapng
])
def test_detail_header_and_frame_fields_equal_pdml(made, spec):
    """Every QUIC packet's header fields (tshark's names, values as PDML shows them, positions
    and sizes) and the error-code / NEW_CONNECTION_ID / SETTINGS fields, packet by packet:
    the same list, in the same order."""
    path, keys = _spec(made, spec)
    an = _analysis(path, keys)
    want = _pdml(path, keys)
    assert len(want) == an.packets
    src = PacketSource(str(path))
    headers = frames = 0
    for n in range(1, an.packets + 1):
        got = _tree(an, src, n)
        # (HTTP/3 fields: tshark where the frame begins, wirefall where it ends: compared where both are)
        w = want[n - 1]
        if not any(r[0].startswith("http3.") for r in got):
            w = [r for r in w if not r[0].startswith("http3.")]
        assert got == w, f"{spec} packet {n}"
        headers += sum(r[0] == "quic.header_form" for r in got)
        frames += sum(r[0] in FRAME_FIELDS for r in got)
    assert headers >= an.packets
    if spec in ("made:v1", "made:v2"):
        assert frames >= 50


# ---------------------------------------------------------------- the header parser vs PDML


def _pdml_headers(path: Path, keys: Path | None) -> list[list[tuple[str, str, int, int]]]:
    """Per packet: (field, show, pos, size) of every QUIC header field tshark shows, in every
    QUIC layer of the datagram (padding after the packets read as a short header too: tshark
    4.0 does that where its fixed bit is clear and it begins with the first packet's DCID)."""
    return [[(f.get("name"), f.get("show"), int(f.get("pos")), int(f.get("size")))
             for proto in pk.iter("proto") if proto.get("name") == "quic"
             for f in proto.iter("field") if f.get("name") in HEADER_FIELDS]
            for pk in ET.fromstring(_pdml_text(path, keys)).iter("packet")]


def _rows(fields, base: int) -> list[tuple[str, str, int, int]]:
    return [(f.name, quic_hooks.field_show(f), base + f.offset, f.length) for f in fields]


@pytest.mark.parametrize("spec,keys,kinds", [
    ("made:v1", None, {"Initial", "Handshake", "1-RTT", "coalesced", "padding"}),
    ("made:v2", None, {"Initial", "Handshake", "1-RTT", "coalesced", "padding"}),  # (v2's packet type bits)
    ("made:vn", None, {"Initial", "Version Negotiation", "padding"}),
    ("sample_captures/page/page-h3.pcapng", None, {"Initial", "Handshake", "1-RTT", "coalesced", "padding as a short header"}),
    ("sample_captures/quic/aioquic-h3.pcap", None, {"Initial", "Handshake", "1-RTT", "coalesced", "padding"}),
    ("shared:retina/quic_retry.pcapng", None, {"Initial", "Retry", "Handshake", "1-RTT", "coalesced", "padding"}),
    ("shared:pcap2qlog/ngtcp2-29-dsb.pcapng", None, {"Initial", "Retry", "Handshake", "1-RTT", "coalesced"}),  # draft-29
    ("shared:quic-illustrated/capture.pcap", "shared:quic-illustrated/keylog.txt", {"Initial", "Handshake", "1-RTT", "coalesced"}),
])
def test_header_parse_equals_pdml_field_by_field(made, spec, keys, kinds):
    """The one QUIC header parser (protocols.quic.parse_headers), on every datagram of real
    captures: each header field tshark shows — name, value as PDML shows it, position and size
    in the frame — the same list in the same order, every QUIC packet of the datagram in turn.
    Twice: as the detail tree parses (with what decrypting told: reserved bits, key phase, packet
    number, a short header's DCID length), and as the display filter does (``fields.quic``:
    the fields header protection hides are the frames' there).  ``kinds``: what the capture
    must show, so that each case is met (v1, v2, Version Negotiation, Retry, coalesced packets,
    short headers, padding)."""
    path, k = _spec(made, spec)
    if keys is not None:
        k = _spec(made, keys)[0]
    an = _analysis(path, k)
    want = _pdml_headers(path, k)
    assert len(want) == an.packets
    src = PacketSource(str(path))
    ctx = PacketContext(an, src)
    seen: set[str] = set()
    for n in range(1, an.packets + 1):
        pv = PacketView(ctx, n)
        heads = quic_fields.headers(pv)
        if not heads:
            assert want[n - 1] == [], f"{spec} packet {n}: tshark reads QUIC headers, wirefall none"
            continue
        base = pv.layers.udp_off + 8
        # the filter's parse: the wire's fields, padding read as tshark 4.0 reads it
        wire = [r for r in want[n - 1] if r[0] not in quic_hooks.PROTECTED_FIELDS]
        assert [r for h in heads for r in _rows(h.fields, base)] == wire, f"{spec} packet {n} (filter)"
        # the tree's parse: with the decrypted packets' header facts
        rows = {r.offset: quic_hooks.Decrypted(r.hdr_len, r.pn_len, r.pn, r.first_byte) for r in decrypted_quic(an, src, n)}
        short = quic_hooks.short_dcid_len(an, [fr for fr in frames_on_packet(an, n) if fr.protocol == "quic"])
        parsed = quic_hooks.parse_headers(pv.data[base : pv.layers.l4_end], short, rows)
        assert [r for h in parsed for r in _rows(h.fields, base)] == want[n - 1], f"{spec} packet {n}"
        seen |= {h.kind for h in parsed}
        seen |= {"coalesced"} if sum(h.kind != quic_hooks.PADDING for h in parsed) > 1 else set()
        seen |= {"padding" if not h.fields else "padding as a short header" for h in parsed if h.kind == quic_hooks.PADDING}
    assert kinds <= seen, kinds - seen


@pytest.mark.parametrize("payload,short_cid,kinds,names", [
    # an Initial (DCID 0102) and zero padding: its would-be DCID (short_cid bytes) is not 0102
    ("c0 00000001 02 0102 00 00 02 0001" + "00" * 20, 2, ["Initial", "Padding"], []),
    # an Initial with an empty DCID and zero padding: tshark 4.0 reads a short header (fixed bit 0)
    ("c0 00000001 00 00 00 02 0001" + "00" * 20, 0, ["Initial", "Padding"],
     ["quic.packet_length", "quic.short", "quic.header_form", "quic.fixed_bit", "quic.spin_bit"]),
    # a Handshake, then a short header with the same DCID: coalesced
    ("e0 00000001 02 0102 00 02 0001" + "41 0102" + "00" * 20, 2, ["Handshake", "1-RTT"], []),
    # a Handshake, then a short header with another DCID: padding (RFC 9000 §12.2; tshark: coalesced padding data)
    ("e0 00000001 02 0102 00 02 0001" + "41 0304" + "00" * 20, 2, ["Handshake", "Padding"], []),
    # an Initial the capture cut before its Length: no header (tshark shows none either)
    ("c0 00000001 02 0102 00 00", 2, [], []),
    # a Version Negotiation listing two versions
    ("80 00000000 02 0102 01 03 6b3343cf 00000001", 2, ["Version Negotiation"], []),
], ids=["padding-not-the-dcid", "padding-fixed-bit-clear", "coalesced-short", "short-not-the-dcid", "cut-initial", "vn"])
def test_header_parse_ends(payload, short_cid, kinds, names):
    """Where the QUIC packets of a datagram end (coalesced packets, padding, a cut capture)."""
    heads = quic_hooks.parse_headers(bytes.fromhex(payload), short_cid)
    assert [h.kind for h in heads] == kinds
    if kinds and kinds[-1] == quic_hooks.PADDING:
        assert [f.name for f in heads[-1].fields] == names
    if kinds == ["Version Negotiation"]:
        assert [f.value for f in heads[0].fields if f.name == "quic.supported_version"] == [0x6B3343CF, 1]


def test_vn_and_v2_headers_are_in_the_tree(made):
    path, keys = _spec(made, "made:vn")
    an = _analysis(path, keys)
    rows = _tree(an, PacketSource(str(path)), 2)
    assert ("quic.version", "0x00000000", 43, 4) in rows
    assert [r[1] for r in rows if r[0] == "quic.supported_version"] == ["0x6b3343cf"]
    path, keys = _spec(made, "made:v2")
    an = _analysis(path, keys)
    rows = _tree(an, PacketSource(str(path)), 1)
    assert ("quic.version", "0x6b3343cf", 43, 4) in rows and any(r[0] == "quic.long.packet_type_v2" for r in rows)


def test_error_codes_are_named(made):
    path, keys = _spec(made, "made:v1")
    an = _analysis(path, keys)
    src = PacketSource(str(path))
    labels = [x.label for n in range(1, an.packets + 1) for root in packet_detail(an, src, n) for x in root.walk()]
    assert "Error code: PROTOCOL_VIOLATION (10)" in labels
    assert "Application Error code: H3_REQUEST_CANCELLED (268)" in labels  # (RESET_STREAM / STOP_SENDING of an HTTP/3 stream)
    path, keys = _spec(made, "sample_captures/page/page-h3.pcapng")
    an = _analysis(path, keys)
    src = PacketSource(str(path))
    n = next(fr.packet for fr in an.frames if fr.type == "CONNECTION_CLOSE")
    assert "Error code: NO_ERROR (0)" in [x.label for root in packet_detail(an, src, n) for x in root.walk()]


# ---------------------------------------------------------------- HTTP/3 SETTINGS


@pytest.mark.parametrize("spec", ["made:v1", "sample_captures/page/page-h3.pcapng", "sample_captures/quic/aioquic-h3.pcap"])
def test_settings_in_wire_order_as_tshark(made, spec):
    """Every setting, GREASE ones included (page-h3 #5 0x21, #6 0x1c750aa2ae), in wire order."""
    path, keys = _spec(made, spec)
    an = _analysis(path, keys)
    out = subprocess.run([TSHARK, "-r", str(path), *_topts(keys), "-Y", "http3.settings", "-T", "fields", "-e", "frame.number",
                          "-e", "http3.settings.id", "-e", "http3.settings.value", "-E", "occurrence=a"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    want = {int(a): list(zip(map(int, b.split(",")), map(int, c.split(",")), strict=True)) for a, b, c in (ln.split("\t") for ln in out)}
    got = {fr.packet: [(i, v) for i, _k, v in settings_items(fr.fields)] for fr in an.frames if fr.protocol == "h3" and fr.type == "SETTINGS"}
    assert got == want and len(want) == 2
    if "page-h3" in spec:
        assert (0x21, 1) in got[5] and (0x1C750AA2AE, 1309959044) == got[6][-1]


def _h3_varint(v: int) -> bytes:
    return bytes([v]) if v < 0x40 else (0x4000 | v).to_bytes(2, "big") if v < 0x4000 else (0x80000000 | v).to_bytes(4, "big")


def test_repeated_setting_is_kept_in_order_and_flagged():
    h = Http3Dissector()
    body = b"".join(_h3_varint(x) for x in (0x01, 100, 0x21 + 0x1F, 7, 0x01, 200, 0x4D44, 3))
    frames = list(h.stream_data(1, 3, _h3_varint(0) + _h3_varint(4) + _h3_varint(len(body)) + body, 1) or []) + list(h.out)
    st = next(f for f in frames if f.type == "SETTINGS")
    assert [(i, v) for i, _k, v in settings_items(st.fields)] == [(0x01, 100), (0x40, 7), (0x01, 200), (0x4D44, 3)]
    assert st.fields["QPACK_MAX_TABLE_CAPACITY"] == 100 and st.fields["QPACK_MAX_TABLE_CAPACITY#2"] == 200
    assert st.fields["GREASE_0x40"] == 7 and "H3_SETTINGS_ERROR" in (st.error or "")


# ---------------------------------------------------------------- filters vs tshark -Y

FILTERS = [
    "quic.nci.sequence", "quic.nci.sequence==3", "quic.nci.retire_prior_to", "quic.nci.retire_prior_to==1",
    "quic.nci.connection_id.length==8", "quic.nci.connection_id", "quic.nci.stateless_reset_token",
    "quic.token_length", "quic.token_length==0", "quic.token_length>0", "quic.token", "quic.length", "quic.length>100",
    "quic.dcil==8", "quic.scil==8", "quic.supported_version", "quic.supported_version==0x6b3343cf", "quic.retry_token",
    "http3.settings", "http3.settings.id==0x21", "http3.settings.id==8", "http3.settings.id==0x33", "http3.settings.value==1",
    "http3.settings.id==0x1c750aa2ae", "http3.settings.value==1309959044", "http3.settings.qpack.max_table_capacity",
    "http3.settings.qpack.max_table_capacity==4096", "http3.settings.max_field_section_size",
    "http3.settings.max_field_section_size==262144", "http3.settings.qpack.blocked_streams==16", "http3.settings.extended_connect",
    "count(http3.settings)==4", "count(http3.settings)==5",
    "gquic.cid", "gquic.cid==9165023304822038039", "gquic.version", 'gquic.version=="Q043"',
]


def _tshark_y(path: Path, keys: Path | None, exprs: list[str]) -> dict[str, list[int]]:
    res = tshark_tap.tap(path, exprs, keys)
    rejected = {e: v for e, v in res.items() if isinstance(v, str)}
    assert not rejected, rejected
    return res  # type: ignore[return-value]


@pytest.mark.parametrize("spec", ["made:v1", "made:v2", "made:vn", "sample_captures/page/page-h3.pcapng",
                                  "shared:retina/quic_retry.pcapng", "shared:pcap2qlog/ngtcp2-29-dsb.pcapng", "shared:gquic/dragon3.pcap"])
def test_filter_packet_sets_equal_tshark(made, spec):
    path, keys = _spec(made, spec)
    an = _analysis(path, keys)
    want = _tshark_y(path, keys, FILTERS)
    src = PacketSource(str(path))
    diff = {e: (want[e], list(filter_packets(an, src, e))) for e in FILTERS}
    assert {e: d for e, d in diff.items() if d[0] != d[1]} == {}
    assert sum(bool(w) for w, _ in diff.values()) >= 3  # (each capture exercises several of them)


def test_every_new_filter_field_selects_something(made, tmp_path):
    """Across the captures above, each new field matches some packet in tshark and wirefall alike."""
    hit: set[str] = set()
    for spec in ["made:v1", "made:vn", "sample_captures/page/page-h3.pcapng", "shared:retina/quic_retry.pcapng", "shared:gquic/dragon3.pcap"]:
        path, keys = _spec(made, spec)
        an = _analysis(path, keys)
        src = PacketSource(str(path))
        hit |= {e.split("==")[0].split(">")[0].removeprefix("count(").rstrip(")") for e in FILTERS if list(filter_packets(an, src, e))}
    assert {e.split("==")[0].split(">")[0].removeprefix("count(").rstrip(")") for e in FILTERS} <= hit
