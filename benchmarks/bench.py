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
CORPUS = ROOT / "benchmarks" / "corpus"
SHARED = ROOT.parent / "shared" / "captures"
PY = sys.executable


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


def make_cert(d: Path) -> tuple[Path, Path]:
    key, crt = d / "key.pem", d / "cert.pem"
    if not crt.exists():
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(crt),
                        "-days", "2", "-subj", "/CN=localhost"], check=True, capture_output=True)
    return key, crt


def make_h2(name: str, body_size: int, requests: int, clients: int, streams: int) -> tuple[Path, Path]:
    """Capture h2load against nghttpd over TLS on loopback with tcpdump."""
    CORPUS.mkdir(parents=True, exist_ok=True)
    cap, keys = CORPUS / f"{name}.pcap", CORPUS / f"{name}.keys"
    if cap.exists() and keys.exists():
        return cap, keys
    for tool in ("nghttpd", "h2load", "tcpdump", "openssl"):
        if not shutil.which(tool):
            sys.exit(f"bench: {tool} is missing (Debian: nghttp2-server, nghttp2-client, tcpdump, openssl)")
    with tempfile.TemporaryDirectory() as td:
        d = Path(td)
        key, crt = make_cert(d)
        www = d / "www"
        www.mkdir()
        (www / "obj").write_bytes(os.urandom(body_size))
        port = free_port()
        srv = subprocess.Popen(["nghttpd", "-d", str(www), str(port), str(key), str(crt)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        dump = subprocess.Popen(["tcpdump", "-i", "lo", "-U", "-s", "0", "-B", "65536", "--immediate-mode", "-w", str(cap), f"tcp port {port}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(1.0)
            env = dict(os.environ, SSLKEYLOGFILE=str(keys))
            subprocess.run(["h2load", "-n", str(requests), "-c", str(clients), "-m", str(streams), f"https://127.0.0.1:{port}/obj"],
                           env=env, check=True, stdout=subprocess.DEVNULL)
            time.sleep(1.0)
        finally:
            dump.send_signal(signal.SIGINT)
            dump.wait(timeout=30)
            srv.terminate()
            srv.wait(timeout=10)
    return cap, keys


def amazon() -> tuple[Path, Path] | None:
    cap = SHARED / "pageload-amazon" / "amazon1.cap.gz"
    kgz = SHARED / "pageload-amazon" / "amazon1.key_log.txt.gz"
    if not cap.exists():
        return None
    CORPUS.mkdir(parents=True, exist_ok=True)
    plain, keys = CORPUS / "amazon1.pcap", CORPUS / "amazon1.keys"
    if not plain.exists():  # tshark reads gzip too, but give every tool the same plain file
        plain.write_bytes(gzip.decompress(cap.read_bytes()))
        keys.write_bytes(gzip.decompress(kgz.read_bytes()))
    return plain, keys


def packet_count(cap: Path) -> int:
    out = subprocess.run(["capinfos", "-c", "-M", str(cap)], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "Number of packets" in line:
            return int(line.split(":")[1].strip())
    return 0


def bench_one(name: str, cap: Path, keys: Path, pyshark_n: int) -> dict:
    size_mb = cap.stat().st_size / 1e6
    n = packet_count(cap)
    res = {"name": name, "file": str(cap.relative_to(ROOT)) if cap.is_relative_to(ROOT) else cap.name, "packets": n, "mb": size_mb}
    wf = run_measured([str(ROOT / ".venv" / "bin" / "wirefall"), "requests", str(cap), "--keylog", str(keys), "--json"])
    ts = run_measured(["tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-T", "fields",
                       "-e", "frame.number", "-e", "http2.streamid", "-e", "http2.type"])
    res["wirefall"], res["tshark"] = wf, ts
    # pyshark on the first pyshark_n packets, extrapolated to the whole file
    code = ("import pyshark,sys,time\n"
            f"c=pyshark.FileCapture({str(cap)!r}, override_prefs={{'tls.keylog_file': {str(keys)!r}}}, keep_packets=False)\n"
            "n=0\n"
            "for p in c:\n"
            "    n+=1\n"
            "    _=getattr(p,'http2',None)\n"
            f"    if n>={pyshark_n}: break\n"
            "c.close()\n"
            "print(n)\n")
    t = time.monotonic()
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - t
    done = int(out.stdout.strip() or 0)
    res["pyshark"] = {"wall": wall * (n / done) if done else None, "measured_packets": done, "measured_wall": wall}
    for k in ("wirefall", "tshark"):
        r = res[k]
        r["packets_per_s"] = n / r["wall"] if r["wall"] else None
        r["mb_per_s"] = size_mb / r["wall"] if r["wall"] else None
    res["ratio_time_tshark"] = ts["wall"] / wf["wall"]
    res["ratio_rss_wirefall_to_tshark"] = wf["rss_mb"] / ts["rss_mb"]
    res["ratio_time_pyshark"] = res["pyshark"]["wall"] / wf["wall"] if res["pyshark"]["wall"] else None
    return res


def print_table(results: list[dict]) -> None:
    hdr = ["capture", "packets", "MB", "wirefall s", "tshark s", "pyshark s*", "wf RSS MB", "ts RSS MB", "wf pkt/s", "wf MB/s",
           "tshark/wf time", "wf/tshark RSS", "pyshark/wf time"]
    rows = []
    for r in results:
        wf, ts, ps = r["wirefall"], r["tshark"], r["pyshark"]
        rows.append([r["name"], f"{r['packets']:,}", f"{r['mb']:.1f}", f"{wf['wall']:.2f}", f"{ts['wall']:.2f}",
                     "–" if ps["wall"] is None else f"{ps['wall']:.0f}", f"{wf['rss_mb']:.0f}", f"{ts['rss_mb']:.0f}",
                     f"{wf['packets_per_s']:,.0f}", f"{wf['mb_per_s']:.1f}", f"{r['ratio_time_tshark']:.2f}×",
                     f"{r['ratio_rss_wirefall_to_tshark']:.2f}", "–" if r["ratio_time_pyshark"] is None else f"{r['ratio_time_pyshark']:.0f}×"])
    w = [max(len(str(x)) for x in col) for col in zip(hdr, *rows)]
    print(" | ".join(h.ljust(w[i]) for i, h in enumerate(hdr)))
    print("-|-".join("-" * x for x in w))
    for row in rows:
        print(" | ".join(str(v).rjust(w[i]) if i else str(v).ljust(w[i]) for i, v in enumerate(row)))
    print("* pyshark measured on its first packets and extrapolated to the whole capture")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--big", action="store_true", help="also make and measure a >= 1 M-packet capture")
    ap.add_argument("--only", help="comma-separated capture names")
    ap.add_argument("--pyshark-packets", type=int, default=3000)
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args()
    corpus = []
    a = amazon()
    if a:
        corpus.append(("amazon-pageload", *a))
    page = ROOT / "sample_captures" / "page"
    if (page / "page-h2.pcapng").exists():
        corpus.append(("page-h2", page / "page-h2.pcapng", page / "page-h2.keys"))
    corpus.append(("h2-small", *make_h2("h2-small", 512, 60000, 4, 64)))
    corpus.append(("h2-large", *make_h2("h2-large", 1 << 20, 240, 2, 8)))
    if args.big:
        corpus.append(("h2-big", *make_h2("h2-big", 2048, 1_500_000, 8, 100)))
    if args.only:
        keep = set(args.only.split(","))
        corpus = [c for c in corpus if c[0] in keep]
    results = []
    for name, cap, keys in corpus:
        print(f"measuring {name} …", file=sys.stderr)
        results.append(bench_one(name, cap, keys, args.pyshark_packets))
    print_table(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
