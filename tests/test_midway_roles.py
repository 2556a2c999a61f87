"""A TCP connection the capture joined mid-way (no SYN) between two ports that do not tell
client from server (a lab server on a random high port) has its ends guessed from the first
packet; the completeness reason says so, since the guess can be wrong: page-h2 cut after its
handshake begins with a server packet, and tshark's SYN in the whole capture names the real
client.  With a server's port (443, 80, < 1024) the ports decide and nothing is said."""
from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT, SAMPLES, need_tool, run_tool

from wirefall.analyzer.flows import client_by_ports


def test_guessed_ends_are_said(tmp_path):
    need_tool("editcap")
    cap = SAMPLES / "page" / "page-h2.pcapng"
    late = tmp_path / "late.pcapng"
    run_tool("editcap", "-r", str(cap), str(late), "33-200")
    syn = run_tool("tshark", "-r", str(cap), "-Y", "tcp.flags.syn == 1 && tcp.flags.ack == 0", "-T", "fields",
                   "-e", "tcp.srcport", "-e", "tcp.dstport").split("\n")[0].split("\t")
    real_client, real_server = int(syn[0]), int(syn[1])
    first = run_tool("tshark", "-r", str(late), "-c", "1", "-T", "fields", "-e", "tcp.srcport").strip()
    assert int(first) == real_server  # the cut begins with the server's data: a first-sender guess is wrong here
    assert client_by_ports(real_client, real_server) is None  # (both ports ephemeral)
    out = subprocess.run([sys.executable, "-m", "wirefall", "summary", str(late), "--json"], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    s = json.loads(out.stdout)
    reasons = json.dumps(s["completeness"])
    assert "which end is the client was guessed from the first packet" in reasons


def test_a_servers_port_decides():
    assert client_by_ports(51000, 443) is True and client_by_ports(443, 51000) is False
    assert client_by_ports(51000, 80) is True and client_by_ports(40000, 8443) is True
    assert client_by_ports(50000, 60000) is None and client_by_ports(80, 443) is None
