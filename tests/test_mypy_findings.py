"""Bugs that the type check (mypy, issue 19) found, each against outside truth.

- A UDP datagram on the addresses and ports of a TCP connection met the TcpFlow in the
  pipeline's flow table and stopped the pass (``AttributeError: 'TcpFlow' object has no
  attribute 'lazy'``): wirefall exited 1 and every connection was lost.  Now the datagrams
  are a UDP connection of their own and the TCP exchange is decoded; packet counts per
  transport and direction are tshark's.

Inputs are built by ``scripts/hostile/flow_key_inputs.py``.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "hostile"))

import flow_key_inputs as H  # noqa: E402

AS_LIMIT = 1536 << 20


def _cap():
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def cli(cmd: str, path) -> object:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "wirefall", cmd, str(path), "--json"], cwd=ROOT, env=env,
                       capture_output=True, timeout=60, preexec_fn=_cap)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    return json.loads(p.stdout)


def tshark_count(path, display_filter: str) -> int:
    p = subprocess.run(["tshark", "-n", "-r", str(path), "-Y", display_filter, "-T", "fields", "-e", "frame.number"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return len(p.stdout.split())


def test_udp_datagrams_on_a_tcp_connections_ports_are_their_own_flow(tmp_path):
    path = H.udp_on_tcp_ports(tmp_path / "same-ports.pcap")
    normal = cli("requests", H.C.NORMAL)
    out = cli("requests", path)
    assert out[: len(normal)] == normal  # the real exchange, field by field
    (ex,) = out[len(normal):]
    assert (ex["method"], ex["url"], ex["status"]) == ("GET", "http://hostile.test/same-ports", 200)
    assert ex["response_body_bytes"] == len(H.BODY)

    conns = cli("summary", path)["connections"]
    tcp = [c for c in conns if c["client"] == "10.0.0.3:40000" and c["transport"] == "tcp"]
    udp = [c for c in conns if {c["client"], c["server"]} == {"10.0.0.3:40000", "10.0.0.4:443"} and c["transport"] == "udp"]
    assert len(tcp) == 1 and len(udp) == 1, conns
    c2s = "ip.src == 10.0.0.3 && ip.dst == 10.0.0.4 && {0}.srcport == 40000 && {0}.dstport == 443"
    s2c = "ip.src == 10.0.0.4 && ip.dst == 10.0.0.3 && {0}.srcport == 443 && {0}.dstport == 40000"
    assert tcp[0]["packets"] == [tshark_count(path, c2s.format("tcp")), tshark_count(path, s2c.format("tcp"))]
    assert sorted(udp[0]["packets"]) == sorted([tshark_count(path, c2s.format("udp")), tshark_count(path, s2c.format("udp"))])
    assert sum(udp[0]["packets"]) == len(H.DATAGRAMS)
