#!/usr/bin/env python3
"""wirefall vs tshark vs pyshark on the same captures, side by side in one run.

    .venv/bin/python benchmarks/bench.py            # make the corpus if missing, run, print the table
    .venv/bin/python benchmarks/bench.py --big      # also a >= 1 M-packet capture (made on demand, ~1 GB)
    .venv/bin/python benchmarks/bench.py --json out.json

Corpus (made by real tools on loopback, in benchmarks/corpus/, not committed):
  h2-small  h2load → nghttpd over TLS, many small requests (SSLKEYLOGFILE from h2load)
  h2-large  h2load → nghttpd over TLS, 1 MiB bodies (WINDOW_UPDATE-heavy)
  plus the real page load ../shared/captures/pageload-amazon and the sample page captures.
Measured per tool: wall time, CPU time (user+sys of the child), peak RSS (the child's
ru_maxrss), packets/s and MB/s, and the ratios tshark/wirefall and pyshark/wirefall.
pyshark is measured on its first N packets (default 3000) and extrapolated — it reads a
few thousand packets per second, so a full run on the large captures would take hours.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("WF_BENCH_CORPUS") or ROOT / "benchmarks" / "corpus")  # or --corpus
SHARED = Path(os.environ.get("WF_BENCH_SHARED") or ROOT.parent / "shared" / "captures")  # or --shared
PY = sys.executable
sys.path.insert(0, str(ROOT))


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def run_measured(cmd: list[str], stdout=subprocess.DEVNULL, env=None) -> dict:
    t = time.monotonic()
    p = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {p.returncode}: {err[-400:]}")
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024.0}


def _tree_pss_kb(root: int) -> int:
    """The summed PSS (kB, /proc/PID/smaps_rollup) of ``root`` and its descendants: a page two
    processes share (copy-on-write after a fork) counted once between them, not once each as a
    sum of RSS would."""
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat", "rb") as f:
                    s = f.read()
                kids.setdefault(int(s[s.rindex(b")") + 2:].split()[1]), []).append(int(d))
            except (OSError, ValueError, IndexError):
                continue
    total, todo = 0, [root]
    while todo:
        p = todo.pop()
        todo += kids.get(p, [])
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            continue
    return total


def peak_tree_pss(cmd: list[str], env=None, every: float = 0.02) -> float:
    """A separate, untimed run of ``cmd`` (sampling costs CPU): the peak, over samples every
    ``every`` s, of its process tree's summed PSS, in MB — the memory a command with worker
    processes really holds (``--pss``; ru_maxrss is the largest single process)."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    peak = 0
    while p.poll() is None:
        peak = max(peak, _tree_pss_kb(p.pid))
        time.sleep(every)
    return peak / 1024.0


def run_pair(cmd: list[str], env=None) -> dict:
    """Two copies of ``cmd`` started at once: the wall time until both have ended (the host's
    ceiling for two processes: a job split perfectly in two would take about this long)."""
    t = time.monotonic()
    ps = [subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env) for _ in range(2)]
    cpu = 0.0
    for p in ps:
        _, status, ru = os.wait4(p.pid, 0)
        cpu += ru.ru_utime + ru.ru_stime
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{cmd[0]} failed in a pair run")
    return {"wall": time.monotonic() - t, "cpu": cpu, "rss_mb": 0.0}


def make_cert(d: Path) -> tuple[Path, Path]:
    key, crt = d / "key.pem", d / "cert.pem"
    if not crt.exists():
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(crt),
                        "-days", "2", "-subj", "/CN=localhost"], check=True, capture_output=True)
    return key, crt


def _stop(p: subprocess.Popen, sig=signal.SIGTERM) -> None:
    if p.poll() is None:
        p.send_signal(sig)
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class Net:
    """Where a corpus capture is made: loopback (tcpdump sees GSO-coalesced ~8 KB segments)
    or two network namespaces joined by a veth pair with MTU 1500 and GSO/TSO/GRO off
    (lab.net.LabNet), so packet counts are those of a real network."""

    RATE_MBIT = 400  # tbf on the veth ends: tcpdump on a busy 2-core host keeps up (no kernel drops)

    def __init__(self, mtu: bool):
        self.mtu = mtu
        self.lab = None
        self.dumps: list[tuple[subprocess.Popen, Path]] = []

    def __enter__(self):
        if self.mtu:
            from wirefall.lab.net import LabNet

            if not shutil.which("ethtool"):
                sys.exit("bench: ethtool is missing (Debian: ethtool)")
            self.lab = LabNet(None, tag=f"b{os.getpid()}")
            # a plain veth pair (the lab's rate limit is now its userspace relay, which would
            # be the bottleneck here), rate-limited by a tbf on each end so tcpdump keeps up
            self.lab.up(0, 0, None, 0, tempfile.gettempdir())
            for ns, dev in ((self.lab.client_ns, self.lab.client_if), (self.lab.server_ns, self.lab.server_if)):
                subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate",
                                f"{self.RATE_MBIT}mbit", "burst", "256kb", "latency", "50ms"], check=True, capture_output=True)
        return self

    def __exit__(self, *exc):
        if self.lab is not None:
            self.lab.down()
        for p, cap in self.dumps:  # a capture with kernel drops would measure a broken stream
            err = p.stderr.read().decode(errors="replace") if p.stderr else ""
            for line in err.splitlines():
                if "dropped by kernel" in line and not line.startswith("0 "):
                    cap.unlink(missing_ok=True)
                    raise RuntimeError(f"tcpdump dropped packets making {cap.name} ({line.strip()}); run again on a quieter host")

    @property
    def server_host(self) -> str:
        return self.lab.server_host if self.lab else "127.0.0.1"

    def client(self, cmd: list[str]) -> list[str]:
        return self.lab.client_cmd(cmd) if self.lab else cmd

    def server(self, cmd: list[str]) -> list[str]:
        return self.lab.server_cmd(cmd) if self.lab else cmd

    def tcpdump(self, cap: Path, filt: str) -> subprocess.Popen:
        iface = self.lab.iface if self.lab else "lo"
        p = subprocess.Popen(self.client(["tcpdump", "-i", iface, "-U", "-s", "0", "-B", "262144", "-w", str(cap), filt]),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.dumps.append((p, cap))
        time.sleep(1.0)
        return p


def _need(*tools: str) -> None:
    for tool in tools:
        if not shutil.which(tool):
            sys.exit(f"bench: {tool} is missing (Debian: nghttp2-server, nghttp2-client, tcpdump, openssl, nginx, ethtool, nodejs)")


def make_h2(name: str, body_size: int | list[int], requests: int, clients: int, streams: int, mtu: bool = False) -> tuple[Path, Path]:
    """Capture h2load against nghttpd over TLS with tcpdump (loopback, or MTU 1500 namespaces).
    ``body_size`` may be a list of sizes: one object each, requested by h2load in turn (its
    URIs are used round robin), e.g. twenty 2.7 KB objects and one 30 KB one."""
    CORPUS.mkdir(parents=True, exist_ok=True)
    cap, keys = CORPUS / f"{name}.pcap", CORPUS / f"{name}.keys"
    if cap.exists() and keys.exists():
        return cap, keys
    _need("nghttpd", "h2load", "tcpdump", "openssl")
    print(f"making {name} …", file=sys.stderr)
    keys.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as td, Net(mtu) as net:
        d = Path(td)
        key, crt = make_cert(d)
        www = d / "www"
        www.mkdir()
        sizes = body_size if isinstance(body_size, list) else [body_size]
        names = ["obj"] if len(sizes) == 1 else [f"obj{i}" for i in range(len(sizes))]
        for n, size in zip(names, sizes):
            (www / n).write_bytes(os.urandom(size))
        port = free_port()
        srv = subprocess.Popen(net.server(["nghttpd", "-d", str(www), str(port), str(key), str(crt)]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        dump = net.tcpdump(cap, f"tcp port {port}")
        try:
            env = dict(os.environ, SSLKEYLOGFILE=str(keys))
            subprocess.run(net.client(["h2load", "-n", str(requests), "-c", str(clients), "-m", str(streams),
                                       *(f"https://{net.server_host}:{port}/{n}" for n in names)]),
                           env=env, check=True, stdout=subprocess.DEVNULL)
            time.sleep(1.0)
        finally:
            _stop(dump, signal.SIGINT)
            _stop(srv)
    return cap, keys


NGINX_CONF = """daemon off; master_process off; worker_processes 1; pid {d}/nginx.pid; error_log {d}/error.log;
events {{ worker_connections 1024; }}
http {{ access_log off; client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};
  keepalive_requests 1000000;
  server {{ listen {port} ssl; ssl_certificate {crt}; ssl_certificate_key {key}; root {www};
           ssl_protocols TLSv1.2 TLSv1.3; }} }}
"""


def make_h1(name: str, body_size: int, requests: int, clients: int, mtu: bool = True) -> tuple[Path, Path]:
    """HTTP/1.1 over TLS: h2load --h1 (keep-alive, one request at a time per connection) → nginx."""
    CORPUS.mkdir(parents=True, exist_ok=True)
    cap, keys = CORPUS / f"{name}.pcap", CORPUS / f"{name}.keys"
    if cap.exists() and keys.exists():
        return cap, keys
    _need("nginx", "h2load", "tcpdump", "openssl")
    print(f"making {name} …", file=sys.stderr)
    keys.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as td, Net(mtu) as net:
        d = Path(td)
        key, crt = make_cert(d)
        www = d / "www"
        www.mkdir()
        (www / "obj").write_bytes(os.urandom(body_size))
        port = free_port()
        conf = d / "nginx.conf"
        conf.write_text(NGINX_CONF.format(d=d, port=port, crt=crt, key=key, www=www))
        srv = subprocess.Popen(net.server(["nginx", "-c", str(conf), "-p", str(d)]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        dump = net.tcpdump(cap, f"tcp port {port}")
        try:
            env = dict(os.environ, SSLKEYLOGFILE=str(keys))
            subprocess.run(net.client(["h2load", "--h1", "-n", str(requests), "-c", str(clients), f"https://{net.server_host}:{port}/obj"]),
                           env=env, check=True, stdout=subprocess.DEVNULL)
            time.sleep(1.0)
        finally:
            _stop(dump, signal.SIGINT)
            _stop(srv, signal.SIGQUIT)
    return cap, keys


def make_h3(name: str, count: int) -> tuple[Path, Path]:
    """HTTP/3: the aioquic client and server of scripts/quic/aioquic_capture.py (loopback UDP is
    not coalesced: one record per QUIC datagram) fetching a lab page of ``count`` resources."""
    CORPUS.mkdir(parents=True, exist_ok=True)
    cap, keys = CORPUS / f"{name}.pcap", CORPUS / f"{name}.keys"
    if cap.exists() and keys.exists():
        return cap, keys
    print(f"making {name} …", file=sys.stderr)
    with tempfile.TemporaryDirectory() as td:
        subprocess.run([PY, str(ROOT / "scripts" / "quic" / "aioquic_capture.py"), td, "--count", str(count)], check=True, stdout=subprocess.DEVNULL)
        shutil.move(str(Path(td) / "aioquic-h3.pcap"), cap)
        shutil.move(str(Path(td) / "aioquic-h3.keys"), keys)
    return cap, keys


def make_spdy(name: str, count: int, mtu: bool = True) -> tuple[Path, Path]:
    """SPDY/3.1 over TLS: the node spdy server (scripts/spdy/server.js --root) serving a lab page
    of ``count`` resources, loaded by scripts/spdy/client.js --page 1 (key log from node)."""
    CORPUS.mkdir(parents=True, exist_ok=True)
    cap, keys = CORPUS / f"{name}.pcap", CORPUS / f"{name}.keys"
    if cap.exists() and keys.exists():
        return cap, keys
    _need("node", "tcpdump", "openssl")
    spdy = ROOT / "scripts" / "spdy"
    if not (spdy / "node_modules" / "spdy").exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=spdy, check=True, stdout=subprocess.DEVNULL)
    print(f"making {name} …", file=sys.stderr)
    keys.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as td, Net(mtu) as net:
        d = Path(td)
        key, crt = make_cert(d)
        subprocess.run([PY, str(ROOT / "scripts" / "lab" / "page" / "generate.py"), str(d / "site"), "--count", str(count)], check=True,
                       stdout=subprocess.DEVNULL)
        port = free_port()
        srv = subprocess.Popen(net.server(["node", str(spdy / "server.js"), "--port", str(port), "--version", "3.1", "--host", net.server_host,
                                           "--root", str(d / "site"), "--key", str(key), "--cert", str(crt), "--log", str(d / "server.jsonl")]),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)
        dump = net.tcpdump(cap, f"tcp port {port}")
        try:
            subprocess.run(net.client(["node", f"--tls-keylog={keys}", str(spdy / "client.js"), "--port", str(port), "--version", "3.1",
                                       "--tls", "1", "--page", "1", "--host", net.server_host, "--log", str(d / "client.jsonl")]),
                           check=True, stdout=subprocess.DEVNULL, timeout=600)
            time.sleep(1.0)
        finally:
            _stop(dump, signal.SIGINT)
            _stop(srv)
    return cap, keys


def amazon() -> tuple[Path, Path] | None:
    cap = SHARED / "pageload-amazon" / "amazon1.cap.gz"
    kgz = SHARED / "pageload-amazon" / "amazon1.key_log.txt.gz"
    plain, keys = CORPUS / "amazon1.pcap", CORPUS / "amazon1.keys"
    if plain.exists() and keys.exists():
        return plain, keys
    if not cap.exists():
        return None
    CORPUS.mkdir(parents=True, exist_ok=True)
    if not plain.exists():  # tshark reads gzip too, but give every tool the same plain file
        plain.write_bytes(gzip.decompress(cap.read_bytes()))
        keys.write_bytes(gzip.decompress(kgz.read_bytes()))
    return plain, keys


# tshark's field set per protocol: what the command extracts for HTTP/2, and the
# matching fields for the other protocols
FIELDS = {
    "h2": ["frame.number", "http2.streamid", "http2.type"],
    "h1": ["frame.number", "http.request.method", "http.response.code"],
    "spdy": ["frame.number", "spdy.streamid", "spdy.type"],
    "h3": ["frame.number", "quic.frame_type", "quic.stream.stream_id"],
}


def corpus_list(make: bool = True, big: bool = False) -> list[tuple[str, Path, Path, list[str]]]:
    """(name, capture, key log, tshark fields) of every corpus capture; ``make`` makes the
    missing ones (root: tcpdump, namespaces), otherwise they are skipped."""
    out = []
    a = amazon()
    if a:
        out.append(("amazon-pageload", *a, FIELDS["h2"]))
    page = ROOT / "sample_captures" / "page"
    for proto, fields in (("h2", "h2"), ("h1", "h1"), ("spdy", "spdy"), ("h3", "h3")):
        if (page / f"page-{proto}.pcapng").exists():
            out.append((f"page-{proto}", page / f"page-{proto}.pcapng", page / f"page-{proto}.keys", FIELDS[fields]))
    made = [
        ("h2-small", lambda: make_h2("h2-small", 512, 60000, 4, 64), "h2"),
        ("h2-large", lambda: make_h2("h2-large", 1 << 20, 240, 2, 8), "h2"),
        # request-heavy, as issue 24 measured it: 4 connections × 20 streams, TLS 1.3, twenty
        # 2.7 KB objects and one 30 KB object in turn (60 k + 3 k requests), loopback
        ("h2-requests", lambda: make_h2("h2-requests", [2700] * 20 + [30000], 63000, 4, 20), "h2"),
        # large bodies on 4 connections (256 KiB each), for per-core scaling on big DATA
        ("h2-bodies4", lambda: make_h2("h2-bodies4", 256 << 10, 1000, 4, 8), "h2"),
        ("h2-mtu", lambda: make_h2("h2-mtu", 16384, 20000, 4, 32, mtu=True), "h2"),
        ("h1-mtu", lambda: make_h1("h1-mtu", 4096, 20000, 8, mtu=True), "h1"),
        ("spdy-mtu", lambda: make_spdy("spdy-mtu", 400, mtu=True), "spdy"),
        ("h3-aioquic", lambda: make_h3("h3-aioquic", 300), "h3"),
    ]
    if big:  # ≥ 1 M packets at MTU 1500, made on demand
        made.append(("h2-big-mtu", lambda: make_h2("h2-big-mtu", 65536, 25000, 8, 32, mtu=True), "h2"))
    for name, mk, proto in made:
        cap, keys = CORPUS / f"{name}.pcap", CORPUS / f"{name}.keys"
        if not (cap.exists() and keys.exists()):
            if not make:
                continue
            cap, keys = mk()
        out.append((name, cap, keys, FIELDS[proto]))
    return out


def packet_count(cap: Path) -> int:
    out = subprocess.run(["capinfos", "-c", "-M", str(cap)], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "Number of packets" in line:
            return int(line.split(":")[1].strip())
    return 0


def _warm(path: Path) -> None:
    """Read the file once so every tool finds it in the page cache."""
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def _best(cmd: list[str], repeat: int, env=None) -> dict:
    """The run with the least wall time of ``repeat`` (a busy host only ever adds time), after
    one unmeasured run when ``repeat`` > 1 (byte-code compiled, libraries in the page cache:
    on sub-second files the first run of a fresh checkout measured start-up, not analysis)."""
    if repeat > 1:
        run_measured(cmd, env=env)
    runs = [run_measured(cmd, env=env) for _ in range(repeat)]
    best = min(runs, key=lambda r: r["wall"])
    best["runs"] = len(runs)
    best["cpu_min"] = min(r["cpu"] for r in runs)
    return best


# the wirefall of this interpreter's environment, importing the code of this tree (ROOT):
# running bench.py from a clean export (git archive HEAD) measures exactly that commit
WIREFALL = str(Path(sys.executable).parent / "wirefall")
# without PYTHONDONTWRITEBYTECODE: the unmeasured first run (``_best``) writes the byte code that
# the measured runs load, as ``pip install`` compiles it; with it set (some shells and CI images
# do), every run compiled each module changed since its .pyc, and a start cost ~0.1 s more
WF_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPATH": str(ROOT)}


def _interleaved(cmds: dict[str, tuple[list[str], dict | None]], repeat: int) -> dict[str, dict]:
    """Each command's best run (least wall time) of ``repeat``, the commands taking turns
    (a, b, c, a, b, c …) so that a load change on the shared host hits them alike; one
    unmeasured round first when ``repeat`` > 1 (see ``_best``)."""
    if repeat > 1:
        for cmd, env in cmds.values():
            run_measured(cmd, env=env)
    runs: dict[str, list[dict]] = {k: [] for k in cmds}
    for _ in range(repeat):
        for k, (cmd, env) in cmds.items():
            runs[k].append(run_pair(cmd, env=env) if k.endswith("x2") else run_measured(cmd, env=env))
    out = {}
    for k, rs in runs.items():
        best = min(rs, key=lambda r: r["wall"])
        best["runs"] = len(rs)
        best["cpu_min"] = min(r["cpu"] for r in rs)
        best["walls"] = [round(r["wall"], 3) for r in rs]
        out[k] = best
    return out


def bench_one(name: str, cap: Path, keys: Path, fields: list[str], pyshark_n: int, repeat: int | None = None,
              pyshark_s: float = 60.0) -> dict:
    size_mb = cap.stat().st_size / 1e6
    n = packet_count(cap)
    if repeat is None:
        # at least 3 paired runs each: on a shared host one run says little (CPU time least)
        repeat = 5 if size_mb < 5 else 3
    _warm(cap)
    res = {"name": name, "file": str(cap.relative_to(ROOT)) if cap.is_relative_to(ROOT) else cap.name, "packets": n, "mb": size_mb,
           "tshark_fields": fields}
    # wirefall with 1 and 2 workers (analyzer/parallel.py) and tshark, taking turns
    wf_cmd = [WIREFALL, "requests", str(cap), "--keylog", str(keys), "--json"]
    # "wf1x2": two -j1 runs at once, the host's ceiling for -j2 on this very work (print_scaling)
    got = _interleaved({"wf1": (wf_cmd + ["-j", "1"], WF_ENV), "wf2": (wf_cmd + ["-j", "2"], WF_ENV),
                        "tshark": (["tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-T", "fields",
                                    *(x for f in fields for x in ("-e", f))], None),
                        "wf1x2": (wf_cmd + ["-j", "1"], WF_ENV)}, repeat)
    from wirefall.analyzer.parallel import AUTO_MIN_BYTES

    ts = got["tshark"]
    res["wirefall_1"], res["wirefall_2"] = got["wf1"], got["wf2"]
    res["auto_workers"] = 2 if cap.stat().st_size >= AUTO_MIN_BYTES and (os.cpu_count() or 1) >= 2 else 1
    wf = res["wirefall"] = got["wf2"] if res["auto_workers"] == 2 else got["wf1"]  # what `wirefall requests` (-j auto) runs
    res["tshark"] = ts
    # reopening from the analysis cache (--cache): the second `summary --cache` of the file
    with tempfile.TemporaryDirectory() as cd:
        env = dict(WF_ENV, XDG_CACHE_HOME=cd)
        cmd = [WIREFALL, "summary", str(cap), "--keylog", str(keys), "--cache", "--json"]
        run_measured(cmd, env=env)
        res["cache_reopen"] = _best(cmd, max(repeat, 2), env=env)
    # pyshark on its first pyshark_n packets (or what it reads in pyshark_s seconds),
    # extrapolated to the whole file by packet count
    code = ("import pyshark,sys\n"
            f"c=pyshark.FileCapture({str(cap)!r}, override_prefs={{'tls.keylog_file': {str(keys)!r}}}, keep_packets=False)\n"
            "n=0\n"
            "for p in c:\n"
            "    n+=1\n"
            "    _=[l.layer_name for l in p.layers]\n"
            "    if n % 50 == 0: print(n, flush=True)\n"
            f"    if n>={pyshark_n}: break\n"
            "print(n, flush=True)\n"
            "c.close()\n")
    t = time.monotonic()
    p = subprocess.Popen([PY, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    done, wall = 0, 0.0
    fd = p.stdout.fileno()
    os.set_blocking(fd, False)
    buf = ""
    while True:
        try:
            buf += os.read(fd, 65536).decode()
        except BlockingIOError:
            pass
        *lines, buf = buf.split("\n")
        for line in lines:
            if line.strip().isdigit():
                done, wall = int(line), time.monotonic() - t
        if p.poll() is not None:
            os.set_blocking(fd, True)
            rest = (buf + p.stdout.read().decode()).split()
            if rest and rest[-1].isdigit():
                done, wall = int(rest[-1]), time.monotonic() - t
            break
        if time.monotonic() - t > pyshark_s:
            os.killpg(p.pid, signal.SIGTERM)  # pyshark and the tshark it started (own session)
            p.wait()
            break
        time.sleep(0.05)
    res["pyshark"] = {"wall": wall * (n / done) if done else None, "measured_packets": done, "measured_wall": wall}
    for k in ("wirefall", "tshark"):
        r = res[k]
        r["packets_per_s"] = n / r["wall"] if r["wall"] else None
        r["mb_per_s"] = size_mb / r["wall"] if r["wall"] else None
    res["wirefall"]["us_per_packet_cpu"] = 1e6 * wf["cpu_min"] / n if n else None
    res["ratio_time_tshark"] = ts["wall"] / wf["wall"]
    res["ratio_time_tshark_1"] = ts["wall"] / res["wirefall_1"]["wall"]
    res["ratio_time_tshark_2"] = ts["wall"] / res["wirefall_2"]["wall"]
    res["scaling_1_to_2"] = res["wirefall_1"]["wall"] / res["wirefall_2"]["wall"]
    res["pair"] = got["wf1x2"]
    res["host_ceiling"] = 2 * res["wirefall_1"]["wall"] / got["wf1x2"]["wall"]
    res["connections"] = _connections(cap, keys)
    res["ratio_cpu_tshark"] = ts["cpu_min"] / wf["cpu_min"] if wf["cpu_min"] else None
    # CPU time (user+sys of the process and its workers, least of the runs) is what a loaded
    # host disturbs least; with 2 workers it is the sum over both, so it shows no speed-up
    res["ratio_cpu_tshark_1"] = ts["cpu_min"] / res["wirefall_1"]["cpu_min"] if res["wirefall_1"]["cpu_min"] else None
    res["ratio_cpu_tshark_2"] = ts["cpu_min"] / res["wirefall_2"]["cpu_min"] if res["wirefall_2"]["cpu_min"] else None
    res["load_average"] = os.getloadavg()[0]
    res["ratio_rss_wirefall_to_tshark"] = wf["rss_mb"] / ts["rss_mb"]
    res["ratio_time_pyshark"] = res["pyshark"]["wall"] / wf["wall"] if res["pyshark"]["wall"] else None
    return res


def _connections(cap: Path, keys: Path) -> int:
    out = subprocess.run([WIREFALL, "summary", str(cap), "--keylog", str(keys), "--json", "-j", "1"], capture_output=True, env=WF_ENV)
    try:
        return len(json.loads(out.stdout)["connections"])
    except (ValueError, KeyError):
        return 0


def print_scaling(results: list[dict]) -> None:
    """wirefall with 1 worker and with 2, against tshark (issue 24's targets)."""
    hdr = ["capture", "conns", "wf -j1 s", "wf -j2 s", "tshark s", "tshark/wf -j1", "tshark/wf -j2", "-j1/-j2 (scaling)",
           "wf -j1 CPU s", "wf -j2 CPU s", "ts CPU s", "ts/wf -j1 CPU", "ts/wf -j2 CPU", "wf -j1 RSS MB", "wf -j2 RSS MB",
           "ts RSS MB", "default", "load", "two -j1 at once s", "host ceiling", "of ceiling"]
    acct = any("accounting" in r for r in results)
    if acct:
        hdr += ["serial CPU s", "-j2 critical path s", "-j1/-j2 idle (accounting)"]
    rows = []
    for r in results:
        a, b, ts = r["wirefall_1"], r["wirefall_2"], r["tshark"]
        ac = r.get("accounting") or {}
        extra = ([f"{ac['serial_cpu']:.2f}" if ac.get("serial_cpu") else "", f"{ac['critical_path']:.2f}" if ac.get("critical_path") else "",
                  _x(ac.get("speedup"))] if acct else [])
        rows.append([r["name"], r.get("connections", 0), f"{a['wall']:.2f}", f"{b['wall']:.2f}", f"{ts['wall']:.2f}",
                     f"{r['ratio_time_tshark_1']:.2f}×", f"{r['ratio_time_tshark_2']:.2f}×", f"{r['scaling_1_to_2']:.2f}×",
                     f"{a['cpu_min']:.2f}", f"{b['cpu_min']:.2f}", f"{ts['cpu_min']:.2f}", _x(r.get("ratio_cpu_tshark_1")),
                     _x(r.get("ratio_cpu_tshark_2")), f"{a['rss_mb']:.0f}", f"{b['rss_mb']:.0f}", f"{ts['rss_mb']:.0f}",
                     f"-j {r['auto_workers']}", f"{r.get('load_average', 0):.1f}",
                     f"{r['pair']['wall']:.2f}" if "pair" in r else "", _x(r.get("host_ceiling")),
                     f"{100 * r['scaling_1_to_2'] / r['host_ceiling']:.0f} %" if r.get("host_ceiling") else "", *extra])
    w = [max(len(str(x)) for x in col) for col in zip(hdr, *rows)]
    print("| " + " | ".join(h.ljust(w[i]) for i, h in enumerate(hdr)) + " |")
    print("|-" + "-|-".join("-" * x for x in w) + "-|")
    for row in rows:
        print("| " + " | ".join(str(v).rjust(w[i]) if i else str(v).ljust(w[i]) for i, v in enumerate(row)) + " |")
    print("\nThe three commands take turns (wf -j1, wf -j2, tshark, repeated); best wall time of each. CPU is user+sys of "
          "the process and its workers (least of the runs; CPU ratios are the ones a loaded host disturbs least, but the -j2 CPU "
          "is the sum over the processes, so it shows no speed-up: compare wall times, on an idle host); RSS is the largest "
          "single process (ru_maxrss), not the sum over the workers living at once.  'default' is what `-j auto` picks; "
          "'load' the 1-minute load average after the capture's runs.  'two -j1 at once': two serial runs started "
          "together, until both end; 'host ceiling' is 2 × the -j1 time over that: what this host's two cores give two "
          "independent copies of the same work (2.00× on two cores that do not slow each other), the most any split of "
          "it could gain; 'of ceiling' is -j1/-j2 as a share of it.  With --accounting: the serial CPU of -j1, the "
          "critical path of -j2 (each process's CPU on it: start-up, the pass spread over 2 cores, reading the parts, merge, "
          "post-pass, JSON) and their ratio, the -j1/-j2 an idle 2-core host would show (benchmarks/parallel_accounting.py).")


def _x(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}×"


# the README's names for the corpus captures (its performance table)
README_LABELS = {
    "amazon-pageload": "amazon page load (h2)",
    "page-h2": "lab page h2",
    "page-h1": "lab page h1",
    "page-spdy": "lab page spdy/3.1",
    "page-h3": "lab page h3",
    "h2-small": "h2-small (60 k requests, loopback)",
    "h2-large": "h2-large (1 MiB bodies, loopback)",
    "h2-requests": "h2-requests (63 k requests of 2.7/30 KB, 4 connections)",
    "h2-bodies4": "h2-bodies4 (256 KiB bodies, 4 connections)",
    "h2-mtu": "h2-mtu (20 k × 16 KiB, MTU 1500)",
    "h1-mtu": "h1-mtu (20 k × 4 KiB, nginx)",
    "spdy-mtu": "spdy-mtu (lab page, 400 resources)",
    "h3-aioquic": "h3-aioquic (300 resources)",
    "h2-big-mtu": "h2-big-mtu (`--big`)",
}


def print_readme_table(results: list[dict]) -> None:
    """The README's performance table (its columns, and the CPU-time ratio after them), ready
    to paste: wirefall as `-j auto` runs it."""
    print("| capture | packets | MB | wirefall s | tshark s | tshark/wirefall time | wirefall/tshark RSS | pyshark/wirefall time "
          "| cache reopen s | tshark/wirefall CPU |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        wf, ts = r["wirefall"], r["tshark"]
        print(f"| {README_LABELS.get(r['name'], r['name'])} | {r['packets']:,} | {r['mb']:.1f} | {wf['wall']:.2f} | {ts['wall']:.2f} "
              f"| {r['ratio_time_tshark']:.2f}× | {r['ratio_rss_wirefall_to_tshark']:.2f} "
              f"| {'–' if r['ratio_time_pyshark'] is None else format(r['ratio_time_pyshark'], '.0f') + '×'} "
              f"| {r['cache_reopen']['wall']:.2f} | {_x(r.get('ratio_cpu_tshark'))} |")


def print_table(results: list[dict]) -> None:
    hdr = ["capture", "packets", "MB", "wf s", "tshark s", "pyshark s*", "wf CPU s", "ts CPU s", "wf RSS MB", "ts RSS MB",
           "wf pkt/s", "wf MB/s", "tshark/wf time", "tshark/wf CPU", "wf/tshark RSS", "pyshark/wf time", "cache reopen s"]
    rows = []
    for r in results:
        wf, ts, ps = r["wirefall"], r["tshark"], r["pyshark"]
        rows.append([r["name"], f"{r['packets']:,}", f"{r['mb']:.1f}", f"{wf['wall']:.2f}", f"{ts['wall']:.2f}",
                     "–" if ps["wall"] is None else f"{ps['wall']:.0f}", f"{wf['cpu_min']:.2f}", f"{ts['cpu_min']:.2f}",
                     f"{wf['rss_mb']:.0f}", f"{ts['rss_mb']:.0f}",
                     f"{wf['packets_per_s']:,.0f}", f"{wf['mb_per_s']:.1f}", f"{r['ratio_time_tshark']:.2f}×",
                     f"{r['ratio_cpu_tshark']:.2f}×", f"{r['ratio_rss_wirefall_to_tshark']:.2f}",
                     "–" if r["ratio_time_pyshark"] is None else f"{r['ratio_time_pyshark']:.0f}×", f"{r['cache_reopen']['wall']:.2f}"])
    w = [max(len(str(x)) for x in col) for col in zip(hdr, *rows)]
    print("| " + " | ".join(h.ljust(w[i]) for i, h in enumerate(hdr)) + " |")
    print("|-" + "-|-".join("-" * x for x in w) + "-|")
    for row in rows:
        print("| " + " | ".join(str(v).rjust(w[i]) if i else str(v).ljust(w[i]) for i, v in enumerate(row)) + " |")
    print("\n* pyshark measured on its first packets and extrapolated to the whole capture. Times are the best of "
          "several runs on small files (wall); CPU is user+sys of the child.")
    # linear in size: CPU per packet of captures of one kind, small and big
    pairs = [(a, b) for a in results for b in results if a["name"] == "h2-mtu" and b["name"] == "h2-big-mtu"]
    for a, b in pairs:
        ua, ub = a["wirefall"]["us_per_packet_cpu"], b["wirefall"]["us_per_packet_cpu"]
        print(f"linearity: {a['name']} {a['packets']:,} packets {ua:.1f} µs/packet CPU; {b['name']} {b['packets']:,} packets "
              f"{ub:.1f} µs/packet CPU (ratio {ub / ua:.2f}; 1.00 = linear); RSS {a['wirefall']['rss_mb']:.0f} → {b['wirefall']['rss_mb']:.0f} MB")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--big", action="store_true", help="also make and measure a >= 1 M-packet capture")
    ap.add_argument("--only", help="comma-separated capture names")
    ap.add_argument("--pyshark-packets", type=int, default=3000)
    ap.add_argument("--pyshark-seconds", type=float, default=60.0, help="stop pyshark after this long and extrapolate")
    ap.add_argument("--repeat", type=int, help="paired runs per tool (default: 5 below 5 MB, else 3)")
    ap.add_argument("--json", metavar="OUT")
    ap.add_argument("--corpus", metavar="DIR", help="corpus folder (default benchmarks/corpus of this tree)")
    ap.add_argument("--shared", metavar="DIR", help="the third-party captures folder (default ../shared/captures beside this tree): "
                                                    "the amazon page load is taken from it (a tree unpacked elsewhere needs this)")
    ap.add_argument("--pss", action="store_true",
                    help="also one untimed run of each tool sampling its process tree's summed PSS (the memory of "
                         "wirefall's workers together, shared pages once): the peak, and wirefall/tshark")
    ap.add_argument("--accounting", action="store_true",
                    help="also the CPU accounting of -j1 against -j2 (benchmarks/parallel_accounting.py): the speed-up an idle "
                         "2-core host would show, computed from each process's CPU on the critical path")
    args = ap.parse_args()
    global CORPUS, SHARED
    if args.corpus:
        CORPUS = Path(args.corpus).resolve()
    if args.shared:
        SHARED = Path(args.shared).resolve()
    # an installed wirefall runs from compiled bytecode; an editable checkout under
    # PYTHONDONTWRITEBYTECODE would compile every module on every run (~0.12 s)
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "analyzer"), str(ROOT / "dissectors"), str(ROOT / "ui")],
                   check=False, stdout=subprocess.DEVNULL)
    corpus = corpus_list(make=True, big=args.big)
    if args.only:
        keep = set(args.only.split(","))
        corpus = [c for c in corpus if c[0] in keep]
    results = []
    for name, cap, keys, fields in corpus:
        print(f"measuring {name} …", file=sys.stderr)
        results.append(bench_one(name, cap, keys, fields, args.pyshark_packets, args.repeat, args.pyshark_seconds))
        if args.pss:
            wf_pss = peak_tree_pss([WIREFALL, "requests", str(cap), "--keylog", str(keys), "--json"], env=WF_ENV)
            ts_pss = peak_tree_pss(["tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-T", "fields",
                                    *(x for f in fields for x in ("-e", f))])
            results[-1]["pss"] = {"wirefall_mb": wf_pss, "tshark_mb": ts_pss, "ratio": wf_pss / ts_pss if ts_pss else None}
            print(f"  {name}: peak PSS of the process tree (-j auto) wirefall {wf_pss:.0f} MB, tshark {ts_pss:.0f} MB, "
                  f"ratio {wf_pss / ts_pss if ts_pss else float('nan'):.2f}", file=sys.stderr)
        if args.accounting:
            from parallel_accounting import account  # (benchmarks/ is the script's folder)

            acc = account(str(cap), str(keys), 2, 2, args.repeat or 3)
            results[-1]["accounting"] = {"serial_cpu": acc["serial_total"], "critical_path": acc.get("critical", {}).get("total"),
                                         "speedup": acc.get("speedup"), "steps": acc.get("critical", {}).get("steps")}
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"wirefall {rev or os.environ.get('WF_BENCH_REV', ROOT.name)} ({ROOT}), "
          f"{subprocess.run(['tshark', '--version'], capture_output=True, text=True).stdout.splitlines()[0]}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f} at the end\n")
    print_table(results)
    print()
    print_scaling(results)
    print("\nIn the README's format:\n")
    print_readme_table(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
