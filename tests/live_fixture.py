"""Real servers in a network namespace for the live-capture tests (tests/test_live.py makes the
namespace: its ``netns`` fixture): nginx (HTTP/1.1 and HTTP/2 over TLS) and aioquic's HTTP/3
server (scripts/lab/h3_server.py), their site, certificate and key logs, and the client commands
(curl with SSLKEYLOGFILE, headless Chromium over HTTP/3)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from test_live import H3_SERVER, _load_sac

TLS_PORT, QUIC_PORT = 18443, 18444


@dataclass
class Servers:
    ns: list[str]  # ["ip", "netns", "exec", NAME]: a command's prefix to run inside the namespace
    work: Path
    spki: str
    keys: Path  # the clients' SSLKEYLOGFILE
    server_keys: Path  # the HTTP/3 server's key log (Chromium writes none without a flag)
    sac: object
    env: dict = field(default_factory=dict)

    @property
    def bpf(self) -> str:
        return f"port {TLS_PORT} or port {QUIC_PORT}"

    def curl(self, version: str, path: str) -> list[str]:
        return ["curl", "-sk", f"--{version}", "-o", "/dev/null", f"https://127.0.0.1:{TLS_PORT}{path}"]

    def chromium(self, path: str = "/") -> list[str]:
        profile = tempfile.mkdtemp(prefix="chromium-", dir=self.work)
        origin = f"127.0.0.1:{QUIC_PORT}"
        return ["chromium", *self.sac.CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--enable-quic",  # type: ignore[attr-defined]
                f"--origin-to-force-quic-on={origin}", f"--ignore-certificate-errors-spki-list={self.spki}",
                "--dump-dom", f"https://{origin}{path}"]

    def run(self, cmd: list[str], timeout: float = 90) -> float:
        """Run a client inside the namespace; the monotonic time it ended."""
        r = subprocess.run(self.ns + cmd, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
        done = time.monotonic()
        assert r.returncode == 0, f"{cmd[0]} failed ({r.returncode}): {r.stderr[-500:]!r}"
        return done


@contextmanager
def servers(netns: str, work: Path, files: dict[str, str]):
    """nginx (h2 and HTTP/1.1 over TLS on TLS_PORT) and the HTTP/3 server (QUIC_PORT) serving
    ``files`` (name -> text) inside ``netns``; stopped on exit."""
    sac = _load_sac()
    ns = ["ip", "netns", "exec", netns]
    site = work / "site"
    site.mkdir()
    for name, text in files.items():
        (site / name).write_text(text)
    cert, key, spki = sac.make_cert(work)
    procs = sac.Procs()
    s = Servers(ns=ns, work=work, spki=spki, keys=work / "client.keys", server_keys=work / "h3-server.keys", sac=sac)
    s.env = dict(os.environ, SSLKEYLOGFILE=str(s.keys))
    try:
        conf = sac.nginx_conf(work, site, TLS_PORT, "h2", cert, key, "127.0.0.1")
        procs.start("nginx", ns + ["nginx", "-c", str(conf), "-e", str(work / "nginx.stderr")], stop_sig=signal.SIGQUIT,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.start("h3", ns + [sys.executable, str(H3_SERVER), "--root", str(site), "--cert", str(cert), "--key", str(key),
                                "--port", str(QUIC_PORT), "--host", "127.0.0.1", "--secrets-log", str(s.server_keys),
                                "--request-log", str(work / "h3.log")],
                    stdout=open(work / "h3.out", "w"), stderr=subprocess.STDOUT)
        for port, udp in ((TLS_PORT, False), (QUIC_PORT, True)):
            t0 = time.time()
            while not subprocess.run(ns + ["ss", "-Hlun" if udp else "-Hltn", f"sport = :{port}"], capture_output=True,
                                     text=True).stdout.strip():
                assert time.time() - t0 < 15, f"server on {port} did not start"
                time.sleep(0.1)
        yield s
    finally:
        procs.stop_all()
