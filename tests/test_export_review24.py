"""The data exports against the commands they restate (review 24, a consumer of the exports):
``export -o X.json``'s ``stats`` is ``stats --json``'s — its TCP retransmissions and TCP
analysis included, which it lacked — and those are tshark's."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT, SAMPLES, run_tool

LOSSY = SAMPLES / "lossy"


def _wf(*args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "wirefall", *args], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-800:]
    return r.stdout


@pytest.mark.parametrize("name", ["page-h2", "page-h1"])
def test_the_model_exports_stats_are_stats_json_and_tsharks_retransmissions(tmp_path, name):
    cap, keys = LOSSY / f"{name}.pcapng", LOSSY / f"{name}.keys"
    out = tmp_path / "model.json"
    _wf("export", str(cap), "--keylog", str(keys), "-o", str(out))
    model = json.loads(out.read_text())["stats"]
    st = json.loads(_wf("stats", str(cap), "--keylog", str(keys), "--json"))
    assert model == st
    # tshark's own tcp.analysis.retransmission packets, per direction (the client: the SYN's sender)
    syn = run_tool("tshark", "-r", str(cap), "-Y", "tcp.flags.syn == 1 && tcp.flags.ack == 0", "-T", "fields", "-e", "ip.src").split()
    rows = run_tool("tshark", "-r", str(cap), "-Y", "tcp.analysis.retransmission", "-T", "fields", "-e", "ip.src").split()
    want = [sum(1 for a in rows if a in syn), sum(1 for a in rows if a not in syn)]
    assert model["capture"]["tcp_retransmissions"] == want and sum(want) > 0
    assert model["tcp_analysis"]["capture"]["tcp.analysis.retransmission"] == sum(want)


def test_qlog_common_fields_say_only_what_the_capture_shows(amazon):
    """amazon's qlog (review 24): every trace declared ``["QUIC", "HTTP3"]`` and an ODCID of ""
    — connection 16, Chrome's keep-alive joined mid-way, carries no HTTP/3 and shows no Initial.
    Now HTTP3 only on connections where tshark decodes HTTP/3, and the ODCID the first client
    Initial's DCID as tshark reads it, absent where there is none."""
    cap, keys = amazon / "amazon1.cap", amazon / "amazon1.key_log.txt"
    out = amazon / "x.qlog"
    _wf("export", str(cap), "--keylog", str(keys), "-o", str(out))
    traces = json.loads(out.read_text())["traces"]
    h3_ports = set(run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y", "http3", "-T", "fields",
                            "-e", "udp.srcport", "-e", "udp.dstport").split())
    init: dict[str, str] = {}
    for ln in run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y", "quic.long.packet_type == 0 && udp.dstport == 443",
                       "-T", "fields", "-e", "udp.srcport", "-e", "quic.dcid").splitlines():
        port, _, dcid = ln.partition("\t")
        init.setdefault(port, dcid.split(",")[0].replace(":", ""))
    assert len(traces) >= 2
    for t in traces:
        port = t["title"].split(" → ")[0].rsplit(":", 1)[1]
        cf = t["common_fields"]
        assert ("HTTP3" in cf["protocol_type"]) == (port in h3_ports), t["title"]
        assert cf.get("ODCID") == init.get(port), t["title"]
    assert any("ODCID" not in t["common_fields"] and t["common_fields"]["protocol_type"] == ["QUIC"] for t in traces)
