"""SPDY control frames too short to hold their stream id: each is kept as a frame with its
error and noted once, and none makes an exchange (a truncated SYN_STREAM used to make one with
stream id None, and a short HEADERS a note about "stream None").  Input built by
``scripts/hostile/spdy_short_frames.py`` after the packets of sample spdy3-plain.pcap, whose
exchanges (outside truth: the sample read alone) must come out the same."""
from __future__ import annotations

import importlib.util
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("spdy_short_frames", ROOT / "scripts" / "hostile" / "spdy_short_frames.py")
short = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(short)


def _cli(cmd: str, path: Path):
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    p = subprocess.run([sys.executable, "-m", "wirefall", cmd, str(path), "--json"], capture_output=True, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), preexec_fn=cap, timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout)


def test_short_control_frames(tmp_path):
    pcap = tmp_path / "short.pcap"
    pcap.write_bytes(short.spdy_short_frames())
    got = _cli("requests", pcap)
    alone = _cli("requests", short.H.SPDY_SAMPLE)
    assert [r for r in got if r["connection"] == 0] == alone
    crafted = [r for r in got if r["connection"] == 1]
    assert [(r["stream_id"], r["url"], r["status"], r["error"]) for r in crafted] == [
        (1, short.URLS[0], 200, None), (3, short.URLS[1], 200, None)]
    summary = _cli("summary", pcap)
    notes = summary["connections"][1]["notes"]
    for _, _, _, error in short.SHORT:
        assert sum(error in n for n in notes) == sum(e == error for _, _, _, e in short.SHORT), (error, notes)
    assert not any("stream None" in n for n in notes), notes
    frames = [f for f in _cli("frames", pcap) if f["connection"] == 1 and f.get("error")]
    assert sorted(f["error"] for f in frames) == sorted(e for _, _, _, e in short.SHORT)
