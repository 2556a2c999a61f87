"""The capture's connections, counted as tshark counts them, in every status line (session 31's
web review: with the amazon NetLog laid over, the web's status line said 43 connections where the
capture has 42 and `summary` says 42 — the NetLog's requests that never reached the network sit on a
connection of their own, which is no connection of the capture)."""
from __future__ import annotations

import shutil
import subprocess

import pytest
from conftest import SHARED

from wirefall.analyzer.model import connections_text

A = SHARED / "pageload-amazon"
CAP, KEYS, NETLOG = A / "amazon1.cap.gz", A / "amazon1.key_log.txt.gz", A / "amazon1_netlog.json.gz"


def _tshark_conversations() -> int:
    n = 0
    for proto in ("tcp", "udp"):
        out = subprocess.run(["tshark", "-n", "-r", str(CAP), "-q", "-z", f"conv,{proto}"], capture_output=True, text=True,
                             check=True, timeout=300).stdout
        n += sum(1 for ln in out.splitlines() if "<->" in ln)
    return n


@pytest.mark.skipif(shutil.which("tshark") is None or not NETLOG.exists(), reason="tshark or the amazon load not here")
def test_the_web_status_line_counts_the_captures_connections():
    from wirefall.analyzer.browserlog import overlay
    from wirefall.analyzer.pipeline import analyze
    from wirefall.ui.web.state import Entry

    an = analyze(str(CAP), keylogs=[str(KEYS)])
    overlay(an, str(NETLOG), kind="netlog")
    n = _tshark_conversations()
    assert n == 42
    text = connections_text(an)
    assert text.startswith(f"{n} connections, ") and "(2 never reached the network)" in text, text
    e = Entry("1", "amazon1.cap.gz", str(CAP), [str(KEYS)], "file", status="done")
    e.analysis, e.seconds = an, 1.0
    assert f", {n} connections, " in e.status_text(), e.status_text()
