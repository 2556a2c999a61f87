"""Review 29: display-filter fields tshark 4.0 has that wirefall refused, each compared with tshark
value for value and packet for packet on real captures:

- ``tls.quic.parameter.*``: the QUIC transport parameters of a ClientHello (its Initial packets)
  and of a decrypted EncryptedExtensions (its Handshake packets): every parameter's type, length
  (``.lengt.old`` and ``tls.quic.len`` in the drafts before 27) and value bytes, and the decoded
  value of each parameter RFC 9000 defines (initial_max_data …, the connection IDs, the stateless
  reset token), of max_datagram_frame_size, of Version Information (chosen and other versions)
  and of Chromium's Google parameters (initial RTT, connection options, QUIC version);
- ``quic.padding_length``: each run of PADDING bytes;
- ``http3.push_id``: where a push stream opens (after its Stream Type 1);
- ``tcp.options.sack.dsack_le`` / ``dsack_re``: the D-SACK block, where tshark marks one.

Values: ``tshark -T fields -E occurrence=a -e frame.number -e F…`` (with ``-o tls.keylog_file:``
and ``tcp.reassemble_out_of_order:TRUE``, as the other oracles) on every packet against the
field's values on each packet (``Field.get``: every occurrence, in order); packet sets: ``-Y``
through tests/tshark_filters.lua (tshark_tap).  Captures: every QUIC capture in sample_captures/
and ../shared (aioquic, Chromium, ngtcp2 draft 29, the draft-22 pcap2qlog captures, retina's
Chrome captures, quic-illustrated, the Amazon load), every capture where tshark finds a D-SACK
(12, all real: Linux and Chromium TCP stacks), and, for push streams — which none of the real
captures has (Chromium does not use HTTP/3 server push) — a run of aioquic's own H3 server
push (scripts/quic/proto_frames.py's client and server, in memory)."""
from __future__ import annotations

import atexit
import shutil
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

import pytest
import tshark_tap
from field_oracle import capture_file, tshark_values, wirefall_values

from wirefall.analyzer.fields import lookup
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parents[1]
S = ROOT / "sample_captures"
SHARED = ROOT.parent / "shared" / "captures"
OOO = ("-o", "tcp.reassemble_out_of_order:TRUE")

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

_TMP = Path(tempfile.mkdtemp(prefix="wirefall-fields29-"))
atexit.register(lambda: shutil.rmtree(_TMP, ignore_errors=True))

TP_FIELDS = (
    "tls.quic.len", "tls.quic.parameter.type", "tls.quic.parameter.length", "tls.quic.parameter.lengt.old",
    "tls.quic.parameter.value", "tls.quic.parameter.original_destination_connection_id", "tls.quic.parameter.max_idle_timeout",
    "tls.quic.parameter.stateless_reset_token", "tls.quic.parameter.max_udp_payload_size", "tls.quic.parameter.initial_max_data",
    "tls.quic.parameter.initial_max_stream_data_bidi_local", "tls.quic.parameter.initial_max_stream_data_bidi_remote",
    "tls.quic.parameter.initial_max_stream_data_uni", "tls.quic.parameter.initial_max_streams_bidi",
    "tls.quic.parameter.initial_max_streams_uni", "tls.quic.parameter.ack_delay_exponent", "tls.quic.parameter.max_ack_delay",
    "tls.quic.parameter.active_connection_id_limit", "tls.quic.parameter.initial_source_connection_id",
    "tls.quic.parameter.retry_source_connection_id", "tls.quic.parameter.max_datagram_frame_size",
    "tls.quic.parameter.vi.chosen_version", "tls.quic.parameter.vi.other_version", "tls.quic.parameter.google.initial_rtt",
    "tls.quic.parameter.google.connection_options", "tls.quic.parameter.google.quic_version",
)
QUIC_FIELDS = (*TP_FIELDS, "quic.padding_length", "http3.push_id")
TCP_FIELDS = ("tcp.options.sack.dsack_le", "tcp.options.sack.dsack_re", "tcp.options.sack.dsack")
NEW_FIELDS = (*QUIC_FIELDS, *TCP_FIELDS[:2])
BYTES_FIELDS = {"tls.quic.parameter.value", "tls.quic.parameter.original_destination_connection_id",
                "tls.quic.parameter.stateless_reset_token", "tls.quic.parameter.initial_source_connection_id",
                "tls.quic.parameter.retry_source_connection_id", "tls.quic.parameter.google.connection_options"}
NONE_FIELDS = {"tcp.options.sack.dsack"}

# name -> (capture, key log or None); "made:push" is aioquic's H3 server push (_made_push)
CAPTURES = {
    "aioquic-h3": ("sample:quic/aioquic-h3.pcap", "sample:quic/aioquic-h3.keys"),
    "aioquic-h3-cut": ("sample:quic/aioquic-h3-cut.pcap", "sample:quic/aioquic-h3-cut.keys"),
    "aioquic-qlog": ("sample:quic/aioquic-qlog.pcap", "sample:quic/aioquic-qlog.keys"),
    "quic-page-h3": ("sample:quic/page-h3.pcapng", "sample:quic/page-h3.keys"),
    "page-h3": ("sample:page/page-h3.pcapng", "sample:page/page-h3.keys"),
    "lossy-h3": ("sample:lossy/page-h3.pcapng", "sample:lossy/page-h3.keys"),
    "page-multi-late": ("sample:quic/page-multi-late.pcapng", "sample:quic/page-multi-late.keys"),
    "quic-illustrated": ("shared:quic-illustrated/capture.pcap", "shared:quic-illustrated/keylog.txt"),
    "ngtcp2-29": ("shared:pcap2qlog/ngtcp2-29-dsb.pcapng", None),
    "ack-range-22": ("shared:pcap2qlog/ack_range.pcapng", None),
    "multi-stream-22": ("shared:pcap2qlog/multi_stream.pcap", None),
    "retina-quic": ("shared:retina/quic.pcap", None),
    "retina-kyber": ("shared:retina/quic_kyber.pcapng", None),
    "retina-retry": ("shared:retina/quic_retry.pcapng", None),
    "dragon3": ("shared:gquic/dragon3.pcap", None),
    "amazon": ("shared-gz:pageload-amazon/amazon1.cap.gz", "shared-gz:pageload-amazon/amazon1.key_log.txt.gz"),
    "made-push": ("made:push", None),
}
# every capture where tshark 4.0 marks a D-SACK, and a lossy one where it marks none
DSACK = {
    "h2-tls": ("sample:http/h2-tls.pcap", "sample:http/h2-tls.keys"),
    "lossy-h1": ("sample:lossy/page-h1.pcapng", "sample:lossy/page-h1.keys"),
    "lossy-h2": ("sample:lossy/page-h2.pcapng", "sample:lossy/page-h2.keys"),
    "bg-mixed": ("sample:page/bg-mixed.pcapng", "sample:page/bg-mixed.keys"),
    "page-h1": ("sample:page/page-h1.pcapng", "sample:page/page-h1.keys"),
    "page-h2": ("sample:page/page-h2.pcapng", "sample:page/page-h2.keys"),
    "pw-h1": ("sample:page/pw-h1.pcapng", "sample:page/pw-h1.keys"),
    "pw-h2": ("sample:page/pw-h2.pcapng", "sample:page/pw-h2.keys"),
    "page-multi-late-tcp": CAPTURES["page-multi-late"],
    "curl-http11": ("sample:tls/curl_http11.pcap", "sample:tls/curl_http11.keys"),
    "tls12-aes256gcm": ("sample:tls/tls12_aes256gcm.pcap", "sample:tls/tls12_aes256gcm.keys"),
    "tls13-resumed": ("sample:tls/tls13_resumed.pcap", "sample:tls/tls13_resumed.keys"),
    "lossy-spdy": ("sample:lossy/page-spdy.pcapng", "sample:lossy/page-spdy.keys"),
}
CAPTURES.update(DSACK)


# ------------------------------------------------------------------ captures

def _made_push(out: Path) -> None:
    """aioquic's client and server (scripts/quic/proto_frames.py's Run, its packets written as
    pcap with the client's key log): a GET answered with three server pushes (push IDs 0, 1, 2,
    each stream's type, push ID and frames in one STREAM frame), then, after the client's
    MAX_PUSH_ID 100, a push with a two-byte push ID (70), and a push stream whose type byte goes
    alone in its first STREAM frame (its push ID, 71, in the next: tshark shows none)."""
    sys.path.insert(0, str(ROOT / "scripts" / "quic"))
    import proto_frames
    from aioquic.buffer import encode_uint_var
    from aioquic.h3.connection import FrameType, H3Connection, encode_frame

    req = [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"localhost")]

    class PushRun(proto_frames.Run):
        def go(self) -> None:
            self.client.connect(proto_frames.SERVER, now=self.now)
            self.pump()
            assert self.server is not None
            hc, hs = self.hc, self.hs = H3Connection(self.client), H3Connection(self.server)
            self.pump()
            sid = self.client.get_next_available_stream_id()
            hc.send_headers(sid, [*req, (b":path", b"/")], end_stream=True)
            self.pump()
            for i, path in enumerate((b"/a.css", b"/b.js", b"/c.png")):
                ps = hs.send_push_promise(sid, [*req, (b":path", path)])
                hs.send_headers(ps, [(b":status", b"200")])
                hs.send_data(ps, b"pushed" * (i + 1), end_stream=True)
                self.pump()
            self.client.send_stream_data(hc._local_control_stream_id, encode_frame(FrameType.MAX_PUSH_ID, encode_uint_var(100)))
            self.pump()
            hc._max_push_id = 100  # (what the client just announced)
            hs._next_push_id = 70
            ps = hs.send_push_promise(sid, [*req, (b":path", b"/d")])
            hs.send_headers(ps, [(b":status", b"204")], end_stream=True)
            self.pump()
            raw = self.server.get_next_available_stream_id(is_unidirectional=True)
            self.server.send_stream_data(raw, b"\x01")
            self.pump()
            self.server.send_stream_data(raw, encode_uint_var(71))
            self.pump()
            hs.send_headers(sid, [(b":status", b"200")])
            hs.send_data(sid, b"hello", end_stream=True)
            self.pump()
            self.client.close(error_code=0, reason_phrase="bye")
            self.pump()

    r = PushRun(out, "v1", proto_frames._cert(out))
    r.go()
    r.write()


@cache
def _made_dir(kind: str) -> Path:
    out = _TMP / kind
    out.mkdir()
    _made_push(out)
    return out


def _file(spec: str) -> Path:
    return capture_file(spec, _TMP)


def _paths(name: str) -> tuple[Path, Path | None]:
    cap, keys = CAPTURES[name]
    if cap.startswith("made:"):
        d = _made_dir(cap[5:])
        return d / "quic-v1.pcap", d / "quic-v1.keys"
    return _file(cap), _file(keys) if keys else None


@cache
def _analysis(name: str):
    cap, keys = _paths(name)
    return analyze(str(cap), keylogs=[str(keys)] if keys else [])


@cache
def _trial_packets(name: str) -> frozenset[int]:
    """Packets of QUIC connections the capture joined mid-way: tshark 4.0 decrypts none of them
    (wirefall finds their keys by trial), so only wirefall has frame fields (PADDING) there."""
    from wirefall.oracle.specs.quic import _quic_trial_conns

    an = _analysis(name)
    trial = _quic_trial_conns(an)
    return frozenset(i + 1 for i, c in enumerate(an.index.conn) if c in trial)


# ------------------------------------------------------------------ values, packet by packet

SLOW = {"amazon", "made-push"}  # (the Amazon load's analysis; an aioquic run)


def _params(names) -> list:
    return [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in names]


def _theirs(name: str, names: tuple[str, ...]) -> dict[int, dict[str, list]]:
    cap, keys = _paths(name)
    return tshark_values(cap, keys, names, BYTES_FIELDS, NONE_FIELDS, ooo=True)


def _mine(name: str, names: tuple[str, ...]) -> dict[int, dict[str, list]]:
    cap, _ = _paths(name)
    return wirefall_values(_analysis(name), cap, names, BYTES_FIELDS)


def _compare(name: str, names: tuple[str, ...], must: set[str]) -> dict[int, dict[str, list]]:
    theirs = _theirs(name, names)
    mine = _mine(name, names)
    trial = _trial_packets(name) if any(f.startswith("quic.") for f in names) else frozenset()
    shown = {f for v in theirs.values() for f in v}
    assert must <= shown, f"{name}: tshark shows none of {sorted(must - shown)}"
    wrong = [(n, theirs.get(n), mine.get(n)) for n in sorted((set(theirs) | set(mine)) - trial) if theirs.get(n) != mine.get(n)]
    assert not wrong, f"{name}: (packet, tshark's values, wirefall's) differ on {len(wrong)} packets: {wrong[:6]}"
    return theirs


_RFC = {"tls.quic.parameter.type", "tls.quic.parameter.length", "tls.quic.parameter.value", "tls.quic.parameter.initial_max_data",
        "tls.quic.parameter.initial_max_stream_data_bidi_local", "tls.quic.parameter.initial_max_streams_bidi",
        "tls.quic.parameter.initial_source_connection_id", "quic.padding_length"}
_EE = {"tls.quic.parameter.original_destination_connection_id", "tls.quic.parameter.initial_source_connection_id"}
_DRAFT = {"tls.quic.len", "tls.quic.parameter.type", "tls.quic.parameter.lengt.old", "tls.quic.parameter.value",
          "tls.quic.parameter.initial_max_data", "quic.padding_length"}
# the fields each capture must show in tshark (a comparison that matches nothing proves little)
MUST = {
    "aioquic-h3": _RFC | _EE | {"tls.quic.parameter.stateless_reset_token", "tls.quic.parameter.max_idle_timeout",
                                "tls.quic.parameter.active_connection_id_limit"},
    "aioquic-h3-cut": _RFC | _EE,
    "aioquic-qlog": _RFC | _EE,
    "quic-page-h3": _RFC | _EE | {"tls.quic.parameter.max_datagram_frame_size", "tls.quic.parameter.max_udp_payload_size",
                                  "tls.quic.parameter.vi.chosen_version", "tls.quic.parameter.vi.other_version",
                                  "tls.quic.parameter.google.connection_options"},
    "page-h3": _RFC | _EE,
    "lossy-h3": _RFC | _EE,
    "page-multi-late": _RFC | _EE,
    "quic-illustrated": (_RFC - {"quic.padding_length"}) | _EE | {"tls.quic.parameter.ack_delay_exponent",
                                                                  "tls.quic.parameter.max_ack_delay"},
    "ngtcp2-29": _RFC | _EE | {"tls.quic.parameter.initial_max_stream_data_uni", "tls.quic.parameter.initial_max_streams_uni",
                               "tls.quic.parameter.retry_source_connection_id"},
    "ack-range-22": _DRAFT | {"tls.quic.parameter.max_idle_timeout"},
    "multi-stream-22": _DRAFT,
    "retina-quic": _RFC | {"tls.quic.parameter.google.quic_version", "tls.quic.parameter.google.initial_rtt"},
    "retina-kyber": _RFC,
    "retina-retry": {"tls.quic.parameter.type", "tls.quic.parameter.ack_delay_exponent", "tls.quic.parameter.initial_source_connection_id"},
    "dragon3": _RFC,
    "amazon": _RFC | _EE | {"tls.quic.parameter.vi.chosen_version", "tls.quic.parameter.vi.other_version"},
    "made-push": _RFC | _EE | {"http3.push_id", "tls.quic.parameter.max_datagram_frame_size"},
}


@pytest.mark.parametrize("name", _params(MUST))
def test_quic_values_are_tsharks_packet_by_packet(name):
    _compare(name, QUIC_FIELDS, MUST[name])


@pytest.mark.slow
def test_push_ids_are_tsharks_where_streams_open():
    """The push streams of aioquic's run: IDs 0, 1, 2 and 70 where each stream opens, none where a
    stream's type byte came alone (its push ID in the next STREAM frame)."""
    theirs = _compare("made-push", ("http3.push_id", "http3.stream_type"), {"http3.push_id"})
    ids = [v for x in theirs.values() for v in x.get("http3.push_id", ())]
    assert ids == [0, 1, 2, 70]
    assert sum(x.get("http3.stream_type", []).count(1) for x in theirs.values()) == 5


@pytest.mark.parametrize("name", list(DSACK))
def test_dsack_edges_are_tsharks_packet_by_packet(name):
    """The D-SACK block's edges (relative) where tshark marks one, and the D-SACK expert item
    (``tcp.options.sack.dsack``) on the same packets; none on the lossy SPDY load's 59 SACKs."""
    theirs = _compare(name, TCP_FIELDS, set() if name == "lossy-spdy" else set(TCP_FIELDS))
    if name == "lossy-spdy":
        assert not theirs and _theirs(name, ("tcp.options.sack_le",))


# ------------------------------------------------------------------ filters, packet sets

FILTERS: dict[str, list[tuple[str, bool]]] = {
    "amazon": [
        ("tls.quic.parameter.initial_max_data > 1000", True), ("tls.quic.parameter.initial_max_data > 100000000", False),
        ("tls.quic.parameter.type == 17", True), ("count(tls.quic.parameter.original_destination_connection_id) == 1", True),
        ("tls.quic.parameter.initial_max_streams_bidi >= 100", True), ("quic.padding_length", True),
        ("quic.padding_length > 1000", True), ("quic.padding_length < 10", True), ("tls.quic.parameter.length == 0", True),
        ("tls.quic.parameter.max_idle_timeout == 30000", True), ("http3.push_id", False),
        ("tls.quic.parameter.vi.chosen_version == 1", True), ("tls.quic.parameter.vi.other_version == 0x6b3343cf", False),
    ],
    "quic-illustrated": [
        ("tls.quic.parameter.initial_max_data > 1000", True), ("tls.quic.parameter.initial_max_data == 5242880", True),
        ('tls.quic.parameter.initial_source_connection_id == "s_cid"', True), ("tls.quic.parameter.value[0] == 0x80", True),
        ("tls.quic.parameter.original_destination_connection_id == 00:01:02:03:04:05:06:07", True),
        ("count(tls.quic.parameter.type) == 12", True), ("quic.padding_length", False),
    ],
    "ack-range-22": [
        ("tls.quic.len == 56", True), ("tls.quic.parameter.lengt.old == 2", True), ("tls.quic.parameter.length", False),
        ("tls.quic.parameter.initial_max_data > 1000", True),
    ],
    "dragon3": [
        ("count(tls.quic.parameter.value) == 12", True), ("tls.quic.parameter.type == 12587", True),
        ("tls.quic.parameter.initial_source_connection_id", True), ("len(tls.quic.parameter.initial_source_connection_id) == 0", True),
    ],
    "made-push": [
        ("http3.push_id", True), ("http3.push_id == 70", True), ("http3.push_id > 2", True), ("count(http3.push_id) > 1", False),
        ("http3.stream_type == 1 && !http3.push_id", True), ("tls.quic.parameter.max_datagram_frame_size == 65536", True),
    ],
    "lossy-h2": [
        ("tcp.options.sack.dsack_le", True), ("tcp.options.sack.dsack_le == 3547", True),
        ("tcp.options.sack.dsack_re - tcp.options.sack.dsack_le == 36", True), ("tcp.options.sack.dsack_re > tcp.ack", True),
        ("tcp.options.sack.dsack_le && !tcp.options.sack.dsack", False),
    ],
    "h2-tls": [("tcp.options.sack.dsack_re <= tcp.ack", True), ("tcp.options.sack.dsack_le == tcp.options.sack_le", True)],
}


@pytest.mark.parametrize("name", _params(FILTERS))
def test_filters_select_tsharks_packets(name):
    cap, keys = _paths(name)
    theirs = tshark_tap.tap(cap, [e for e, _ in FILTERS[name]], keys, OOO)
    trial = _trial_packets(name)
    tshark_tap.assert_same_packets(name, FILTERS[name], theirs,
                                   lambda e: [n for n in tshark_tap.wirefall_packets(_analysis(name), cap, e) if n not in trial])


def test_types_and_sizes_are_tsharks():
    """Each new field's type and integer size are those ``tshark -G fields`` declares."""
    from wirefall.analyzer.fields.types import BYTES, UINT

    decl = {}
    out = subprocess.run(["tshark", "-G", "fields"], capture_output=True, text=True, timeout=120).stdout
    for line in out.splitlines():
        c = line.split("\t")
        if c[0] == "F" and c[2] in NEW_FIELDS:
            decl[c[2]] = c[3]
    assert set(decl) == set(NEW_FIELDS)
    sizes = {"FT_UINT16": 2, "FT_UINT32": 4, "FT_UINT64": 8}
    for f in NEW_FIELDS:
        fld = lookup(f)
        assert fld is not None and not fld.unsupported, f
        assert fld.type == (BYTES if decl[f] == "FT_BYTES" else UINT), f
        if fld.type == UINT:
            assert fld.size == sizes[decl[f]], f
