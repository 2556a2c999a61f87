"""Review 28: display-filter fields tshark 4.0 has that wirefall refused, each compared with tshark
value for value and packet for packet on real captures:

- the QUIC ACK frame's ranges and ECN counts (``quic.ack.first_ack_range``, ``.gap``,
  ``.ack_range``, ``.ect0_count``, ``.ect1_count``, ``.ecn_ce_count``), the flow-control frames
  (``quic.md.maximum_data``, ``quic.msd.*``, ``quic.ms.max_streams``, ``quic.sb.stream_data_limit``,
  ``quic.sdb.stream_id``, ``quic.sib.stream_limit``), NEW_TOKEN (``quic.nt.*``), PATH_CHALLENGE /
  PATH_RESPONSE data, DATAGRAM length and a CONNECTION_CLOSE's TLS alert;
- ``http3.stream_type``: once per unidirectional stream opening (a STREAM frame at offset 0);
- ``tcp.options.sack_le`` / ``sack_re`` / ``sack.count`` (every SACK block, relative, D-SACK too)
  on the lossy TCP samples, and ``http2.request.full_uri`` (requests and PUSH_PROMISEs) on the
  HTTP/2 samples and the Amazon load.

Values: ``tshark -T fields -E occurrence=a -e frame.number -e F…`` on every packet against the
field's values on each packet (``Field.get``: every occurrence, in order); packet sets: ``-Y``
through tests/tshark_filters.lua (tshark_tap), as tests/test_filter_review27.py.  Captures: the
HTTP/3 samples (aioquic, Chromium), ../shared's quic-illustrated, pageload-amazon and
pcap2qlog's ngtcp2 draft-29 capture (keys in the file), scripts/quic/proto_frames.py's aioquic
run (MAX_STREAM_DATA, PATH_CHALLENGE …), and that run again with frames aioquic never sends
written by its own packet builder: the server's ACKs as ACK_ECN, the client's DATA_BLOCKED and
STREAM_DATA_BLOCKED, a close with CRYPTO_ERROR 0x178 (no_application_protocol)."""
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

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

_TMP = Path(tempfile.mkdtemp(prefix="wirefall-fields28-"))
atexit.register(lambda: shutil.rmtree(_TMP, ignore_errors=True))

NEW_FIELDS = (
    "quic.ack.first_ack_range", "quic.ack.gap", "quic.ack.ack_range", "quic.ack.ect0_count", "quic.ack.ect1_count",
    "quic.ack.ecn_ce_count", "quic.nt.length", "quic.nt.token", "quic.md.maximum_data", "quic.msd.stream_id",
    "quic.msd.maximum_stream_data", "quic.ms.max_streams", "quic.sb.stream_data_limit", "quic.sdb.stream_id",
    "quic.sib.stream_limit", "quic.path_challenge.data", "quic.path_response.data", "quic.dg.length",
    "quic.cc.error_code.tls_alert", "http3.stream_type",
)
TCP_FIELDS = ("tcp.options.sack_le", "tcp.options.sack_re", "tcp.options.sack.count")
BYTES_FIELDS = {"quic.nt.token", "quic.path_challenge.data", "quic.path_response.data"}

# name -> (capture, key log or None); "made:" captures come from scripts/quic/proto_frames.py
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
    "amazon": ("shared-gz:pageload-amazon/amazon1.cap.gz", "shared-gz:pageload-amazon/amazon1.key_log.txt.gz"),
    "made-v1": ("made:v1", None),
    "made-v2": ("made:v2", None),
    "made-extra": ("made:extra", None),
    "lossy-h1": ("sample:lossy/page-h1.pcapng", "sample:lossy/page-h1.keys"),
    "lossy-h2": ("sample:lossy/page-h2.pcapng", "sample:lossy/page-h2.keys"),
    "lossy-spdy": ("sample:lossy/page-spdy.pcapng", "sample:lossy/page-spdy.keys"),
}


# ------------------------------------------------------------------ captures

def _made_extra(out: Path) -> None:
    """proto_frames.py's v1 run with aioquic's packet builder writing frames aioquic never sends:
    every ACK of the server as ACK_ECN (counts growing per ACK), DATA_BLOCKED and
    STREAM_DATA_BLOCKED beside the client's PING, and its close as CRYPTO_ERROR 0x178."""
    sys.path.insert(0, str(ROOT / "scripts" / "quic"))
    import proto_frames
    from aioquic.quic import connection as qc
    from aioquic.quic.packet import QuicFrameType, push_ack_frame

    sent = {"acks": 0}

    def ack(self, builder, space, now):
        if self._is_client:
            return orig_ack(self, builder, space, now)
        delay = int((now - space.largest_received_time) * 1000000) >> self._local_ack_delay_exponent
        buf = builder.start_frame(QuicFrameType.ACK_ECN, capacity=qc.ACK_FRAME_CAPACITY + 24, handler=self._on_ack_delivery,
                                  handler_args=(space, space.largest_received_packet))
        push_ack_frame(buf, space.ack_queue, delay, builder.remaining_buffer_space - 24)
        sent["acks"] += 1
        a = sent["acks"]
        for v in (3 * a, a, a // 2):  # ECT(0), ECT(1), ECN-CE
            buf.push_uint_var(v)
        space.ack_at = None

    def ping(self, builder, uids=[], comment=""):  # noqa: B006 (aioquic's signature)
        orig_ping(self, builder, uids, comment)
        if self._is_client and uids:  # (the PING the run asks for: send_ping(7))
            builder.start_frame(QuicFrameType.DATA_BLOCKED, capacity=9).push_uint_var(12000)
            b = builder.start_frame(QuicFrameType.STREAM_DATA_BLOCKED, capacity=17)
            b.push_uint_var(4)
            b.push_uint_var(6000)

    def close(self, error_code=0, frame_type=None, reason_phrase=""):
        return orig_close(self, 0x178, frame_type, reason_phrase)

    orig_ack, orig_ping, orig_close = qc.QuicConnection._write_ack_frame, qc.QuicConnection._write_ping_frame, qc.QuicConnection.close
    qc.QuicConnection._write_ack_frame, qc.QuicConnection._write_ping_frame, qc.QuicConnection.close = ack, ping, close  # type: ignore[method-assign]
    try:
        r = proto_frames.Run(out, "v1", proto_frames._cert(out))
        r.go()
        r.write()
    finally:
        qc.QuicConnection._write_ack_frame, qc.QuicConnection._write_ping_frame, qc.QuicConnection.close = (  # type: ignore[method-assign]
            orig_ack, orig_ping, orig_close)
    (out / "quic-v1.pcap").rename(out / "quic-extra.pcap")
    (out / "quic-v1.keys").rename(out / "quic-extra.keys")


@cache
def _made_dir(kind: str) -> Path:
    out = _TMP / kind
    out.mkdir()
    if kind == "extra":
        _made_extra(out)
    else:
        subprocess.run([sys.executable, str(ROOT / "scripts" / "quic" / "proto_frames.py"), str(out), kind], check=True,
                       capture_output=True, timeout=300)
    return out


def _file(spec: str) -> Path:
    return capture_file(spec, _TMP)


def _paths(name: str) -> tuple[Path, Path | None]:
    cap, keys = CAPTURES[name]
    if cap.startswith("made:"):
        d = _made_dir(cap[5:])
        return d / f"quic-{cap[5:]}.pcap", d / f"quic-{cap[5:]}.keys"
    return _file(cap), _file(keys) if keys else None


@cache
def _analysis(name: str):
    cap, keys = _paths(name)
    return analyze(str(cap), keylogs=[str(keys)] if keys else [])


@cache
def _trial_packets(name: str) -> frozenset[int]:
    """Packets of QUIC connections the capture joined mid-way: tshark 4.0 decrypts none of them
    (wirefall finds their keys by trial), so only wirefall has frame fields there."""
    from wirefall.oracle.specs.quic import _quic_trial_conns

    an = _analysis(name)
    trial = _quic_trial_conns(an)
    return frozenset(i + 1 for i, c in enumerate(an.index.conn) if c in trial)


# ------------------------------------------------------------------ values, packet by packet

def _theirs(name: str, names: tuple[str, ...] = NEW_FIELDS) -> dict[int, dict[str, list]]:
    cap, keys = _paths(name)
    return tshark_values(cap, keys, names, BYTES_FIELDS)


def _mine(name: str, names: tuple[str, ...] = NEW_FIELDS) -> dict[int, dict[str, list]]:
    cap, _ = _paths(name)
    return wirefall_values(_analysis(name), cap, names, BYTES_FIELDS)


# the fields each capture must show in tshark (a comparison that matches nothing proves little)
MUST = {
    "aioquic-h3": {"quic.ack.gap", "quic.ack.ack_range", "quic.ack.first_ack_range", "http3.stream_type"},
    "aioquic-h3-cut": {"quic.ms.max_streams", "quic.sib.stream_limit", "http3.stream_type"},
    "aioquic-qlog": {"quic.ack.gap", "http3.stream_type"},
    "quic-page-h3": {"quic.md.maximum_data", "http3.stream_type"},
    "page-h3": {"http3.stream_type"},
    "lossy-h3": {"quic.ack.gap", "quic.ack.ack_range", "quic.md.maximum_data"},
    "page-multi-late": {"quic.ack.gap", "http3.stream_type"},
    "quic-illustrated": {"quic.ack.first_ack_range"},
    "ngtcp2-29": {"quic.nt.length", "quic.nt.token", "quic.ms.max_streams", "quic.md.maximum_data", "http3.stream_type"},
    "ack-range-22": {"quic.ack.first_ack_range"},
    "amazon": {"quic.ack.gap", "http3.stream_type"},
    "made-v1": {"quic.msd.stream_id", "quic.msd.maximum_stream_data", "quic.path_challenge.data", "quic.path_response.data",
                "quic.dg.length", "http3.stream_type"},
    "made-v2": {"quic.msd.stream_id", "quic.path_challenge.data", "quic.dg.length"},
    "made-extra": {"quic.ack.ect0_count", "quic.ack.ect1_count", "quic.ack.ecn_ce_count", "quic.sb.stream_data_limit",
                   "quic.sdb.stream_id", "quic.cc.error_code.tls_alert"},
}


@pytest.mark.parametrize("name", list(MUST))
def test_values_are_tsharks_packet_by_packet(name):
    theirs = _theirs(name)
    mine = _mine(name)
    trial = _trial_packets(name)
    shown = {f for v in theirs.values() for f in v}
    assert MUST[name] <= shown, f"{name}: tshark shows none of {sorted(MUST[name] - shown)}"
    wrong = [(n, theirs.get(n), mine.get(n)) for n in sorted((set(theirs) | set(mine)) - trial) if theirs.get(n) != mine.get(n)]
    assert not wrong, f"{name}: (packet, tshark's values, wirefall's) differ on {len(wrong)} packets: {wrong[:6]}"
    if trial:  # (a connection joined mid-way: wirefall decrypts it, tshark 4.0 does not)
        assert any(n in trial for n in mine)


# ------------------------------------------------------------------ filters, packet sets

FILTERS: dict[str, list[tuple[str, bool]]] = {
    "aioquic-h3": [
        ("quic.ack.gap", True), ("quic.ack.gap > 0", True), ("quic.ack.ack_range > 0", True), ("count(quic.ack.gap) > 1", True),
        ("quic.ack.first_ack_range > 5", True), ("quic.ack.first_ack_range == 0 && quic.ack.ack_range_count == 0", True),
        ("http3.stream_type == 0", True), ("http3.stream_type == 2", True), ('http3.stream_type == "QPACK Decoder Stream"', True),
        ("http3.stream_type == \"Control Stream\"", True), ("http3.stream_type == 1", False), ("count(http3.stream_type) == 3", True),
        ("quic.ack.ect0_count", False),
    ],
    "made-v1": [
        ("quic.msd.stream_id == 4", True), ("quic.msd.maximum_stream_data > 5000", True), ("quic.md.maximum_data == 12000", True),
        ("quic.path_challenge.data", True), ("quic.path_challenge.data == quic.path_response.data", False),
        ("quic.path_response.data[0:2] == 25:12", False), ("quic.dg.length == 17", True), ("quic.dg.length < 17", False),
        ("http3.stream_type in {0, 2, 3}", True), ("quic.cc.error_code.tls_alert", False),
    ],
    "made-extra": [
        ("quic.ack.ect0_count > 10", True), ("quic.ack.ect1_count == 1", True), ("quic.ack.ecn_ce_count == 0", True),
        ("quic.ack.ecn_ce_count > quic.ack.ect1_count", False), ("quic.ack.ect0_count == 3 * quic.ack.ect1_count", True),
        ("quic.sb.stream_data_limit == 12000", True), ("quic.sb.stream_data_limit == 6000", True),
        ("quic.sdb.stream_id == 4", True), ("count(quic.sb.stream_data_limit) == 2", True),
        ("quic.cc.error_code.tls_alert == 120", True), ('quic.cc.error_code.tls_alert == "No application Protocol"', True),
        ("quic.cc.error_code == 0x178", True),
    ],
    "ngtcp2-29": [
        ("quic.nt.length == 41", True), ("quic.nt.token[0:2] == 36:ee", True), ("quic.ms.max_streams", True),
        ("count(http3.stream_type) == 3", True), ("http3.stream_type == 3", True),
    ],
    "h2-tls": [('http2.request.full_uri contains "/push"', True), ('http2.request.full_uri == "https://127.0.0.1:18087/pushed.css"', True),
               ('http2.request.full_uri matches "^https://[^/]*:18088/"', True), ("count(http2.request.full_uri) > 5", True),
               ('http2.request.full_uri && http2.type == 5', True), ('http2.request.full_uri contains "http://"', False)],
    "aioquic-h3-cut": [("quic.sib.stream_limit > 100", True), ("quic.sib.stream_limit == 128", True), ("quic.ms.max_streams > 128", True)],
}


@pytest.mark.parametrize("name", list(FILTERS))
def test_filters_select_tsharks_packets(name):
    cap, keys = _paths(name)
    theirs = tshark_tap.tap(cap, [e for e, _ in FILTERS[name]], keys)
    tshark_tap.assert_same_packets(name, FILTERS[name], theirs, lambda e: tshark_tap.wirefall_packets(_analysis(name), cap, e))


def test_types_and_sizes_are_tsharks():
    """Each new field's type and integer size are those ``tshark -G fields`` declares."""
    from wirefall.analyzer.fields.types import BYTES, UINT

    decl = {}
    out = subprocess.run(["tshark", "-G", "fields"], capture_output=True, text=True, timeout=120).stdout
    for line in out.splitlines():
        c = line.split("\t")
        if c[0] == "F" and c[2] in NEW_FIELDS:
            decl[c[2]] = c[3]
    sizes = {"FT_UINT8": 1, "FT_UINT64": 8}
    for f in NEW_FIELDS:
        fld = lookup(f)
        assert fld is not None and not fld.unsupported
        assert fld.type == (BYTES if decl[f] == "FT_BYTES" else UINT), f
        if fld.type == UINT:
            assert fld.size == sizes[decl[f]], f


# ------------------------------------------------------------------ TCP SACK blocks

@pytest.mark.parametrize("name", ["lossy-h1", "lossy-h2", "lossy-spdy"])
def test_sack_blocks_are_tsharks_packet_by_packet(name):
    """Every SACK block's edges (relative to the peer's base sequence number, D-SACK blocks too)
    and each SACK option's block count, as tshark gives them, on the captures with loss."""
    theirs = _theirs(name, TCP_FIELDS)
    mine = _mine(name, TCP_FIELDS)
    assert len(theirs) > 20
    wrong = [(n, theirs.get(n), mine.get(n)) for n in sorted(set(theirs) | set(mine)) if theirs.get(n) != mine.get(n)]
    assert not wrong, f"{name}: (packet, tshark's values, wirefall's) differ on {len(wrong)} packets: {wrong[:6]}"


def test_sack_filters_select_tsharks_packets():
    name = "lossy-h1"
    cases = [("tcp.options.sack_le", True), ("tcp.options.sack.count == 1", True), ("tcp.options.sack.count > 1", False),
             ("tcp.options.sack_le < tcp.ack", True), ("tcp.options.sack_re - tcp.options.sack_le > 10000", True),
             ("tcp.options.sack_le == 41326", True), ("tcp.options.sack_re > 4294967295", False)]
    cap, keys = _paths(name)
    theirs = tshark_tap.tap(cap, [e for e, _ in cases], keys)
    tshark_tap.assert_same_packets(name, cases, theirs, lambda e: tshark_tap.wirefall_packets(_analysis(name), cap, e))


# ------------------------------------------------------------------ HTTP/2 full request URI

H2 = {
    "h2-tls": ("sample:http/h2-tls.pcap", "sample:http/h2-tls.keys"),
    "page-h2": ("sample:page/page-h2.pcapng", "sample:page/page-h2.keys"),
    "h2c-nghttp": ("sample:http/h2c-nghttp.pcap", None),
    "h2c-upgrade": ("sample:http/h2c-upgrade.pcap", None),
    "bg-mixed": ("sample:page/bg-mixed.pcapng", "sample:page/bg-mixed.keys"),
    "amazon-h2": CAPTURES["amazon"],
}
CAPTURES.update(H2)


@pytest.mark.parametrize("name", list(H2))
def test_http2_full_uri_is_tsharks_packet_by_packet(name):
    """``http2.request.full_uri`` on every header block with an :authority (requests and the
    requests PUSH_PROMISE promises), in order, as tshark builds it (its decode-as for h2c)."""
    cap, keys = _paths(name)
    cmd = ["tshark", "-n", "-r", str(cap), *tshark_tap.decode_args(_analysis(name)), "-T", "fields", "-E", "occurrence=a",
           "-E", "aggregator=\x01", "-e", "frame.number", "-e", "http2.request.full_uri"]
    if keys:
        cmd += ["-o", f"tls.keylog_file:{keys}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    theirs = {int(n): v.split("\x01") for n, _, v in (ln.partition("\t") for ln in r.stdout.splitlines()) if v}
    mine = _mine(name, ("http2.request.full_uri",))
    mine_v = {n: v["http2.request.full_uri"] for n, v in mine.items()}
    assert len(theirs) >= 3
    wrong = [(n, theirs.get(n), mine_v.get(n)) for n in sorted(set(theirs) | set(mine_v)) if theirs.get(n) != mine_v.get(n)]
    assert not wrong, f"{name}: (packet, tshark's, wirefall's) differ on {len(wrong)} packets: {wrong[:6]}"
