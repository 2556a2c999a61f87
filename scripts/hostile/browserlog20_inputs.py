"""Browser logs of many requests laid over (or opened without) a capture, for
tests/test_browserlog_scale20.py: the shapes that made the overlay quadratic.

* ``pipelined(out, n)``: one HTTP/1.1 connection with ``n`` pipelined ``GET /pK`` and a HAR
  of the same ``n`` URLs (in reverse order, all started at one moment), no ``connection``,
  no ``serverIPAddress`` (as Firefox and Playwright write it): every entry may be any
  exchange of the capture, told apart by URL alone (``matching.apply``).
* ``own_connections(out, n)``: a capture of two connections to one server (``GET /c0`` on the
  first, ``GET /c1`` on the second) and a HAR of ``n`` entries, each its own ``connection``
  id, that server's address, ``connect: -1`` (no handshake in the log): entries 0 and 1 were
  sent while the wire's connection 0 and 1 were open, the others long after the capture
  (``matching.match_connections``; ``wirefall summary`` of the HAR alone: ``build.to_analysis``).

Each returns the paths it wrote and the truth: which HAR entry (its index, the id the
overlay records) is which wire exchange (by its path), and which ones no exchange is.

    .venv/bin/python scripts/hostile/browserlog20_inputs.py OUTDIR [N ...]
"""
from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from redteam18b_inputs import T0, conversation, pcap, write  # noqa: E402

HOST = "scale20.example"
SERVER = b"\x0a\x14\x00\x02"  # 10.20.0.2
SERVER_IP = "10.20.0.2"


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _entry(url: str, started: float, **more: object) -> dict:
    return {"startedDateTime": _iso(started), "time": 3,
            "request": {"method": "GET", "url": url, "httpVersion": "HTTP/1.1", "headers": []},
            "response": {"status": 200, "httpVersion": "HTTP/1.1", "headers": []},
            "timings": {"send": 1, "wait": 1, "receive": 1}, **more}


def _har(entries: list[dict]) -> bytes:
    return json.dumps({"log": {"version": "1.2", "creator": {"name": "browserlog20_inputs", "version": "1"},
                               "entries": entries}}).encode()


def pipelined(out: str | Path, n: int) -> tuple[Path, Path, dict[str, str]]:
    """(capture, HAR, truth: HAR entry id -> the path of its wire exchange)."""
    req = b"".join(f"GET /p{i} HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode() for i in range(n))
    resp = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" * n
    packets, _ = conversation([(req, resp)], sip=SERVER)
    cap = write(Path(out) / f"pipelined_{n}.pcap", pcap(packets))
    entries = [_entry(f"http://{HOST}/p{n - 1 - i}", T0 + 0.001) for i in range(n)]
    har = write(Path(out) / f"pipelined_{n}.har", _har(entries))
    return cap, har, {str(i): f"/p{n - 1 - i}" for i in range(n)}


def own_connections(out: str | Path, n: int) -> tuple[Path, Path, dict[str, str | None]]:
    """(capture, HAR, truth: HAR entry id -> the path of its wire exchange, None: not in the capture)."""
    packets: list[tuple[float, bytes]] = []
    t = T0
    sent: list[float] = []
    for k in range(2):
        req = f"GET /c{k} HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode()
        p, t = conversation([(req, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")], cport=42000 + k, sip=SERVER, t=t)
        packets += p
        sent.append(p[3][0])  # the request's segment (after the three-way handshake)
        t += 0.010
    cap = write(Path(out) / "own_connections.pcap", pcap(packets))
    entries = []
    truth: dict[str, str | None] = {}
    for i in range(n):
        if i < 2:
            started, url = sent[i], f"http://{HOST}/c{i}"
            truth[str(i)] = f"/c{i}"
        else:  # an hour after the capture: no connection of it was open then
            started, url = T0 + 3600 + i * 0.001, f"http://{HOST}/x{i}"
            truth[str(i)] = None
        e = _entry(url, started, serverIPAddress=SERVER_IP, connection=str(i))
        e["timings"] = {"blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": 1, "receive": 1}
        entries.append(e)
    har = write(Path(out) / f"own_connections_{n}.har", _har(entries))
    return cap, har, truth


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    for n in (int(a) for a in argv[1:] or ["1000", "2000"]):
        for f in (pipelined, own_connections):
            cap, har, _ = f(out, n)
            print(cap, har)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
