"""Hostile and damaged capture files and key logs (issue 18, round 2: findings 1, 6, 7, 10).

Inputs come from ``scripts/hostile/capture_inputs.py``; every one holds the real HTTP/1
exchange of ``sample_captures/http/http1-nginx.pcap`` (or the TLS sample's), and every run is
the CLI in a subprocess under an address-space cap (``RLIMIT_AS``), a file-size cap where
disk is the point (``RLIMIT_FSIZE``, which temporary files obey too) and a timeout.  Outside
truth: the compression tools' own output (``gzip -dc`` & co. write what they could decompress
before the damage), the same capture uncompressed or undamaged, and tshark.
"""
from __future__ import annotations

import json
import os
import re
import resource
import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from scripts.hostile import capture_inputs as ci  # noqa: E402
from tests.conftest import need_tool  # noqa: E402

MEMORY = 1536 << 20  # address space of each CLI run
TOOL = {"gzip": "gzip", "xz": "xz", "bzip2": "bzip2", "zstd": "zstd"}


def cli(*args, fsize: int | None = None, env: dict | None = None, timeout: int = 60) -> subprocess.CompletedProcess:
    def limits():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    e = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    e.pop("SSLKEYLOGFILE", None)
    return subprocess.run([sys.executable, "-m", "wirefall", *map(str, args)], capture_output=True, text=True, env=e,
                          cwd=ROOT, timeout=timeout, preexec_fn=limits)


def ok(r: subprocess.CompletedProcess, codes=(0,)) -> subprocess.CompletedProcess:
    assert r.returncode in codes, f"exit {r.returncode}: {r.stderr[-2000:]}"
    assert "Traceback" not in r.stderr
    return r


def warnings(r: subprocess.CompletedProcess) -> list[str]:
    return [line for line in r.stderr.splitlines() if line.startswith("wirefall: warning:")]


def complete_packets(data: bytes) -> int:
    """Complete records in the pcap bytes ``data`` (a prefix of a little-endian pcap)."""
    p, n = 24, 0
    while p + 16 <= len(data):
        caplen = struct.unpack_from("<I", data, p + 8)[0]
        if p + 16 + caplen > len(data):
            break
        p += 16 + caplen
        n += 1
    return n


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("hostile-capture")
    ci.padded(d)
    return d


@pytest.fixture(scope="module")
def plain(inputs):
    """packets and requests of the undamaged, uncompressed capture."""
    p = inputs / "padded.pcap"
    return (json.loads(ok(cli("packets", p, "--json")).stdout), json.loads(ok(cli("requests", p, "--json")).stdout))


def _same_requests(got: list[dict], want: list[dict]) -> None:
    assert len(want) == 13
    key = lambda e: (e["url"], e["status"], round(e["request_start"], 6), round(e["response_end"], 6), e["response_body_bytes"])  # noqa: E731
    assert [key(e) for e in got] == [key(e) for e in want]


# ------------------------------------------------------------------ finding 1: cut-short and damaged compressed captures

@pytest.mark.parametrize("fmt", ci.FORMATS)
@pytest.mark.parametrize("how", ["cut", "damaged"])
def test_broken_compressed_capture_keeps_every_packet_before_the_damage(inputs, plain, fmt, how, tmp_path):
    tool = need_tool(TOOL[fmt])
    path = (ci.cut if how == "cut" else ci.damaged)(tmp_path, fmt)
    orig = (tmp_path / "padded.pcap").read_bytes()
    # outside truth: what the format's own tool decompresses; the bytes that agree with the
    # original before the damage hold these complete packets
    told = subprocess.run([tool, "-dc"], input=path.read_bytes(), capture_output=True, timeout=60).stdout
    same = next((i for i, (a, b) in enumerate(zip(told, orig)) if a != b), min(len(told), len(orig)))
    before = complete_packets(orig[:same])
    assert before > 74  # the normal exchange, and filler after it, come before the damage

    r = ok(cli("packets", path, "--json"))
    packets = json.loads(r.stdout)
    want_packets, want_requests = plain
    assert len(packets) >= before
    assert packets[:before] == want_packets[:before]
    ws = warnings(r)
    assert len(ws) <= 2 and ws, ws
    if how == "cut":  # one warning, where the stream broke and where the capture ends
        assert len(ws) == 1
        assert re.search(rf"cut short: it ends \(compressed byte {path.stat().st_size}\) inside the {fmt} (stream|frame)", ws[0])
        assert f"{len(packets)} complete packets read" in ws[0]
    elif len(packets) < len(want_packets):  # reading stopped: at the damage, or at the garbage it made
        assert any(re.search(rf"{fmt} stream is damaged in compressed bytes \d+-\d+", w) or "stopped reading" in w for w in ws), ws
    _same_requests(json.loads(ok(cli("requests", path, "--json")).stdout), want_requests)


@pytest.mark.parametrize("fmt", ci.FORMATS)
def test_compressed_capture_reads_as_the_plain_one(inputs, plain, fmt, tmp_path):
    r = ok(cli("packets", ci.compressed(tmp_path, fmt), "--json"))
    assert json.loads(r.stdout) == plain[0]
    assert not warnings(r)


def test_concatenated_gzip_members_and_trailing_bytes(inputs, plain, tmp_path):
    import gzip

    orig = (inputs / "padded.pcap").read_bytes()
    p = tmp_path / "two-members.pcap.gz"
    # members split mid-record; the first ends inside an input step (unused_data and unconsumed_tail both hold the rest)
    p.write_bytes(gzip.compress(orig[:700001]) + gzip.compress(b"") + gzip.compress(orig[700001:]) + b"\0" * 8 + b"not gzip")
    r = ok(cli("packets", p, "--json"))
    assert json.loads(r.stdout) == plain[0]
    assert warnings(r) == [f"wirefall: warning: {p}: 8 bytes after the end of the gzip stream (compressed byte "
                           f"{p.stat().st_size - 8}) are not gzip data; ignored"]


def test_compressed_stream_broken_before_the_capture_header_is_exit_2(tmp_path):
    p = tmp_path / "head.pcap.xz"
    p.write_bytes(ci.compress((ci.ROOT / "sample_captures/http/http1-nginx.pcap").read_bytes(), "xz")[:20])
    r = ok(cli("summary", p), codes=(2,))
    assert "cut short" in r.stderr and "before the capture's first 4 bytes" in r.stderr


# ------------------------------------------------------------------ finding 10: temporary disk for random access

def test_bz2_bomb_packets_writes_no_more_than_the_analysis_read(tmp_path):
    """13 KB of bzip2 over 2 GiB of zeros after a record header the reader stops at: the packet
    list decompresses to temporary disk only what the pass read (was: all 2 GiB)."""
    path = ci.bz2_bomb(tmp_path)
    assert path.stat().st_size < 32 << 10
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    r = ok(cli("packets", path, "--json", fsize=8 << 20, env={"TMPDIR": str(tmp)}, timeout=60))
    want = json.loads(ok(cli("packets", ci.NORMAL, "--json")).stdout)
    assert json.loads(r.stdout) == want
    assert warnings(r) == [f"wirefall: warning: {path}: packet 75 at file offset 16391: implausible captured length "
                           f"{0xFFFFFF00}; stopped reading"]
    assert not list(tmp.iterdir())  # the spool is unlinked as soon as it is made


def test_spool_budget_over_is_a_clear_error(inputs, tmp_path):
    path = ci.compressed(tmp_path, "gzip")
    r = ok(cli("packets", path, env={"WIREFALL_SPOOL_LIMIT": "256K"}), codes=(2,))
    assert re.search(r"packet bytes up to decompressed offset \d+ would take more than the 262144 bytes of temporary "
                     r"disk .*raise WIREFALL_SPOOL_LIMIT", r.stderr)
    # within the budget the same file lists every packet
    want = ok(cli("packets", inputs / "padded.pcap")).stdout
    assert ok(cli("packets", path, env={"WIREFALL_SPOOL_LIMIT": "2M"})).stdout == want


def test_packet_source_spools_lazily(inputs, tmp_path):
    from wirefall.analyzer.capture import PacketSource, SpoolLimitError

    path = ci.compressed(tmp_path, "zstd")
    orig = (inputs / "padded.pcap").read_bytes()
    src = PacketSource(str(path), spool_limit=1 << 20)
    try:
        assert src.read(100, 50) == orig[100:150]
        assert src.spooled == 1 << 20  # one step, not the whole 1.6 MB
        assert src.read(900_000, 1000) == orig[900_000:901_000]
        with pytest.raises(SpoolLimitError):
            src.read(1_500_000, 100)
        assert src.read(0, 24) == orig[:24]  # what is spooled stays readable
    finally:
        src.close()


# ------------------------------------------------------------------ finding 6: key logs

def _tls_requests(keylog) -> list[dict]:
    return json.loads(ok(cli("requests", ci.TLS_CAPTURE, "--json", "--keylog", keylog)).stdout)


def test_gzip_key_log_bomb_is_read_within_its_byte_budget(tmp_path):
    bomb = ci.keylog_gzip_bomb(tmp_path)  # 2 MB inflating to 2 GiB
    want = _tls_requests(ci.TLS_KEYS)
    assert want and all(e["status"] for e in want)
    r = ok(cli("requests", ci.TLS_CAPTURE, "--json", "--keylog", bomb, timeout=60))
    assert json.loads(r.stdout) == want  # the key log's real lines come first and are used
    assert warnings(r) == [f"wirefall: warning: {bomb}: key log budget keylog_bytes (67108864 bytes for all key logs "
                           f"together) ran out: the rest, from line 6, was not read (raise it with --limit keylog_bytes=N)"]


def test_junk_key_log_gives_one_counted_warning(tmp_path):
    junk = ci.keylog_junk(tmp_path)  # the real lines, then 40 MB of "x" lines
    keylines = len(ci.TLS_KEYS.read_bytes().splitlines())
    r = ok(cli("requests", ci.TLS_CAPTURE, "--json", "--keylog", junk, timeout=60))
    assert json.loads(r.stdout) == _tls_requests(ci.TLS_KEYS)
    assert warnings(r) == [
        f"wirefall: warning: {junk}: {1_000_000 - keylines} lines not understood, the first at line {keylines + 1} "
        f"({1_000_000 - keylines} malformed: not LABEL CLIENT_RANDOM SECRET); skipped",
        f"wirefall: warning: {junk}: key log budget keylog_lines (1000000 lines for all key logs together) ran out: "
        f"the rest, from line 1000001, was not read (raise it with --limit keylog_lines=N)",
    ]


def test_key_log_budgets_are_configurable_and_bound_memory(tmp_path):
    """analyze(limits=...) sets them; an upload's text (the web app's add_text) is bounded too."""
    import tracemalloc

    from wirefall.analyzer.keylog import KeyLog
    from wirefall.analyzer.pipeline import analyze

    assert len(analyze(str(ci.TLS_CAPTURE), keylogs=[str(ci.TLS_KEYS)]).exchanges) == 1
    an = analyze(str(ci.TLS_CAPTURE), keylogs=[str(ci.TLS_KEYS)], limits={"keylog_lines": 2})
    assert any("keylog_lines (2 lines" in w for w in an.warnings)
    assert not an.exchanges  # 2 of the 5 secrets: no traffic secret, the request stays encrypted
    text = "x\n" * (8 << 20)  # 16 MiB: the web app's key-log upload limit
    tracemalloc.start()
    kl = KeyLog()
    assert kl.add_text(text, "upload") == 0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 8 << 20, peak  # was: one warning string per line (~1 GB)
    assert len(kl.warnings) == 2 and sum(map(len, kl.warnings)) < 1000


# ------------------------------------------------------------------ finding 7: odd but valid pcapng

def test_more_than_65535_interfaces(tmp_path):
    path = ci.many_interfaces(tmp_path)
    r = ok(cli("requests", path, "--json"))
    _same_requests(json.loads(r.stdout), json.loads(ok(cli("requests", ci.NORMAL, "--json")).stdout))
    assert not warnings(r)
    need_tool("tshark")
    ids = subprocess.run(["tshark", "-r", str(path), "-T", "fields", "-e", "frame.interface_id"],
                         capture_output=True, text=True, timeout=60).stdout.split()
    from wirefall.analyzer.pipeline import analyze

    assert list(analyze(str(path)).index.interface) == [int(i) for i in ids] == [69999] * 74


def test_out_of_range_timestamps_are_clamped_and_har_is_written(tmp_path):
    path = ci.odd_timestamps(tmp_path)
    out = tmp_path / "odd.har"
    r = ok(cli("export", path, "-o", out))
    ws = warnings(r)
    # tshark shows these times as they are (10^15 s; -4.6 10^18 s): 74 packets on each interface
    assert ws == [
        "wirefall: warning: interface 1: 74 packet timestamps (the first: packet 75) are outside the years 1-9999 "
        "(if_tsresol 1 s, if_tsoffset 0 s); clamped to the nearest representable time",
        f"wirefall: warning: interface 2: 74 packet timestamps (the first: packet 149) are outside the years 1-9999 "
        f"(if_tsresol 1e-06 s, if_tsoffset {-(1 << 62)} s); clamped to the nearest representable time",
    ]
    har = json.loads(out.read_text())["log"]["entries"]
    normal_out = tmp_path / "normal.har"
    ok(cli("export", ci.NORMAL, "-o", normal_out))
    want = [(e["request"]["url"], e["startedDateTime"]) for e in json.loads(normal_out.read_text())["log"]["entries"]]
    assert [(e["request"]["url"], e["startedDateTime"]) for e in har if e["serverIPAddress"] == "127.0.0.1"] == want
    odd = sorted(e["startedDateTime"] for e in har if e["serverIPAddress"] != "127.0.0.1")
    assert odd == ["0001-01-02T00:00:00.000000Z"] * 13 + ["9999-12-30T23:59:59.000000Z"] * 13
    ok(cli("requests", path, "--json"))


# ------------------------------------------------------------------ pcapng blocks shorter than their fixed fields

def test_pcapng_blocks_shorter_than_their_fields_are_skipped_and_said(tmp_path):
    """A 12-byte EPB/IDB/ISB made ``struct.error`` escape ("error: unpack_from requires…")
    and lost the capture; each is skipped by its length with a warning (three listed, then
    one line for the rest), every packet of the exchange is read."""
    bad = ci.short_blocks(tmp_path)
    want = json.loads(ok(cli("requests", ci.NORMAL, "--json")).stdout)
    r = ok(cli("requests", bad, "--json"))
    _same_requests(json.loads(r.stdout), want)
    w = warnings(r)
    assert [re.search(r"block of type (0x\w+)", x).group(1) for x in w[:3]] == ["0x6", "0x1", "0x5"]
    assert all("shorter than its fixed fields" in x and "skipped" in x for x in w[:3])
    assert "more pcapng blocks shorter" in w[3] and len(w) == 4
    n = len(json.loads(ok(cli("packets", ci.NORMAL, "--json")).stdout))
    assert len(json.loads(ok(cli("packets", bad, "--json")).stdout)) == n
