"""The TCP analysis's Info prefix is on every packet tshark puts it on, lossy captures included,
whatever the Info after it (test_info.py allows lossy captures' Info to differ after the prefix:
tshark reassembles around a loss differently).  Review 24: lossy/page-h1 packet 360, a fast
retransmission of a TLS record's part, read "[TLS segment of a reassembled PDU]" without
"[TCP Fast Retransmission]"."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import ROOT, SAMPLES, run_tool

_PREFIX = re.compile(r"^((?:\[TCP [^\]]+\] )+)")


@pytest.mark.parametrize("name", ["page-h1", "page-h2"])  # (page-h3 is QUIC: no TCP analysis)
def test_the_tcp_analysis_prefix_is_tsharks_on_lossy_captures(name):
    cap, keys = SAMPLES / "lossy" / f"{name}.pcapng", SAMPLES / "lossy" / f"{name}.keys"
    out = run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-T", "fields", "-e", "frame.number", "-e", "_ws.col.Info")
    theirs = {}
    for ln in out.splitlines():
        n, _, info = ln.partition("\t")
        m = _PREFIX.match(info)
        theirs[int(n)] = m.group(1) if m else ""
    r = subprocess.run([sys.executable, "-m", "wirefall", "packets", str(cap), "--keylog", str(keys), "--json"], capture_output=True,
                       text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-500:]
    ours = {p["packet"]: (_PREFIX.match(p["info"]).group(1) if _PREFIX.match(p["info"]) else "") for p in json.loads(r.stdout)}
    assert set(ours) == set(theirs)
    diff = {n: (ours[n], theirs[n]) for n in ours if ours[n] != theirs[n]}
    assert not diff, diff
    assert any(theirs.values())  # (the capture has some: lost segments, retransmissions, dup ACKs)
