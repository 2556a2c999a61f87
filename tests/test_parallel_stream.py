"""The parallel path's streamed mode (analyzer/parallel.py): the parent reads and demultiplexes
the capture once and hands each worker only its connections' packets (read by the worker
from the file by offset).  Its result is the serial one; pcapng secrets blocks reach the
workers; a compressed capture takes the mode where every worker reads the file; a packet a
worker cannot decode alone (an IPv4 fragment of a TCP segment) sends the capture to the
serial pass."""
from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wirefall.analyzer.jsonout import dumps, exchange_dict, frame_dict, summary_dict
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "sample_captures" / "page"
sys.path.insert(0, str(ROOT / "scripts" / "hostile"))
from parallel_inputs import fragmented_tcp_pcap  # noqa: E402


def _out(an) -> tuple:
    s = summary_dict(an)
    s["file"] = None
    return (dumps(s), dumps([exchange_dict(e) for e in an.exchanges]), dumps([frame_dict(f) for f in an.frames]),
            bytes(an.index.conn), bytes(an.index.proto), bytes(an.index.ts), bytes(an.index.offset))


@pytest.fixture(params=["streamed", "scanned"])
def mode(request, monkeypatch):
    """The older streamed mode (forced by WF_PARALLEL_MODE) and the scanned one that an
    uncompressed capture takes by default (analyzer/demux.py)."""
    if request.param == "streamed":
        monkeypatch.setenv("WF_PARALLEL_MODE", "streamed")
    else:
        monkeypatch.delenv("WF_PARALLEL_MODE", raising=False)
    return request.param


def test_streamed_mode_gives_the_serial_result_and_uses_both_workers(mode):
    path, keys = str(PAGE / "page-h1.pcapng"), [str(PAGE / "page-h1.keys")]
    serial = analyze(path, keylogs=keys)
    for n in (2, 3):
        par = analyze(path, keylogs=keys, workers=n)
        assert par.__dict__["_wf_parallel"] == f"parallel: {n} workers"
        assert par.__dict__["_wf_parallel_mode"] == mode
        assert _out(par) == _out(serial)
    # Chromium's 6 TLS connections, all decrypted (the 13 requests tshark shows; test_parallel checks the count)
    assert sum(1 for c in serial.connections if c.tls is not None and c.tls.decrypted) >= 6


def test_pcapng_secrets_blocks_reach_the_workers(tmp_path, mode):
    """editcap --inject-secrets puts the key log in the file: the workers' connections decrypt
    only if the parent hands them the Decryption Secrets Block before their packets."""
    if not shutil.which("editcap"):
        pytest.skip("editcap missing")
    dsb = tmp_path / "page-h1-dsb.pcapng"
    subprocess.run(["editcap", "--inject-secrets", f"tls,{PAGE / 'page-h1.keys'}", str(PAGE / "page-h1.pcapng"), str(dsb)],
                   check=True, capture_output=True)
    serial = analyze(str(dsb))
    assert sum(1 for c in serial.connections if c.tls is not None and c.tls.decrypted) >= 6
    par = analyze(str(dsb), workers=2)
    assert par.__dict__["_wf_parallel_mode"] == mode
    assert _out(par) == _out(serial)


def test_compressed_capture_every_worker_reads(tmp_path):
    gz = tmp_path / "page-h1.pcapng.gz"
    gz.write_bytes(gzip.compress((PAGE / "page-h1.pcapng").read_bytes()))
    keys = [str(PAGE / "page-h1.keys")]
    serial = analyze(str(gz), keylogs=keys)
    par = analyze(str(gz), keylogs=keys, workers=2)
    assert par.__dict__["_wf_parallel_mode"] == "every worker reads"
    assert _out(par) == _out(serial)


def test_fragmented_tcp_goes_serial_and_loses_nothing(tmp_path):
    cap = tmp_path / "frag.pcap"
    fragmented_tcp_pcap(cap)
    serial = analyze(str(cap))
    par = analyze(str(cap), workers=2)
    assert par.__dict__["_wf_parallel"].startswith("serial: a packet handed to worker ") and "did not decode" in par.__dict__["_wf_parallel"], par.__dict__["_wf_parallel"]
    assert _out(par) == _out(serial)
    # tshark -Y http shows the same two exchanges: GET /c40001 → 200, GET /c40002 → 200 (reassembled)
    assert [(e.url, e.status) for e in serial.exchanges] == [("http://example.test/c40001", 200), ("http://example.test/c40002", 200)]
    if shutil.which("tshark"):
        out = subprocess.run(["tshark", "-r", str(cap), "-Y", "http.response", "-T", "fields", "-e", "http.response.code"],
                             capture_output=True, text=True).stdout.split()
        assert out == ["200", "200"]

