#!/usr/bin/env python3
"""Capture a real Chromium page load on a QUIC connection opened *before* the capture.

The held-out capture of issue 20 (a browser load of a search engine's home page) joined its
main QUIC connection mid-way: no handshake, so no ALPN, and the HTTP/3 unidirectional
streams (control, QPACK encoder and decoder) are seen mid-stream.  This script makes such
captures on loopback with the lab's own parts (scripts/lab/serve_and_capture.py: the test
page, the throwaway certificate, aioquic's HTTP/3 server scripts/lab/h3_server.py, tcpdump):

1. start the aioquic server and one headless Chromium driven by Playwright (QUIC forced
   with --origin-to-force-quic-on, SSLKEYLOGFILE and --log-net-log set);
2. load the page once: Chromium opens the QUIC connection (not captured);
3. start ``tcpdump -i lo --immediate-mode udp port P`` and wait until it listens;
4. load the page again (a new query string, so the document's URL is new) and reload it;
   Chromium reuses the QUIC connection;
5. stop tcpdump, close the browser (the NetLog is written out at exit), stop the server.

    .venv/bin/python scripts/quic/late_join_capture.py -o sample_captures/quic [--name page-h3-late]

Writes OUT/NAME.pcapng, OUT/NAME.keys (Chromium's key log: it holds the secrets of the
connection opened before the capture), OUT/NAME.netlog.json.gz and OUT/NAME.manifest.json
(tools, page, timestamps of the capture window).  Run as root (tcpdump on lo).
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lab"))
import serve_and_capture as lab  # noqa: E402

CHROMIUM = "/usr/bin/chromium"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("-o", "--out", default="sample_captures/quic")
    ap.add_argument("--name", default="page-h3-late")
    ap.add_argument("--count", type=int, default=12, help="resources on the test page")
    ap.add_argument("--keep-workdir", action="store_true")
    args = ap.parse_args(argv)
    tools = lab.check_tools(["h3"])
    from playwright.sync_api import sync_playwright

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="wirefall-late-"))
    procs = lab.Procs()
    signal.signal(signal.SIGTERM, lambda *a: (procs.stop_all(), sys.exit(1)))
    name = args.name
    try:
        L = lab.Lab(out, work, args.count, procs=procs)
        port = lab.free_port(socket.SOCK_DGRAM)
        srv_keys = work / "h3-server.keys"
        slog = work / "server.log"
        srv = procs.start("h3_server", [sys.executable, str(HERE.parent / "lab" / "h3_server.py"),
                                        "--root", str(L.site), "--cert", str(L.cert), "--key", str(L.key),
                                        "--port", str(port), "--secrets-log", str(srv_keys),
                                        "--request-log", str(slog)],
                          stdout=open(work / "h3_server.log", "w"), stderr=subprocess.STDOUT)
        lab.wait_port(port, udp=True, proc=srv)
        origin = f"127.0.0.1:{port}"
        keys = out / f"{name}.keys"
        keys.unlink(missing_ok=True)
        netlog = work / f"{name}.netlog.json"
        flags = [f for f in lab.CHROMIUM_FLAGS if not f.startswith("--headless")]
        chromium_args = [*flags, f"--log-net-log={netlog}", "--enable-quic", f"--origin-to-force-quic-on={origin}",
                         f"--ignore-certificate-errors-spki-list={L.spki}"]
        window = {}
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=chromium_args,
                                         env=dict(os.environ, SSLKEYLOGFILE=str(keys)))
            try:
                page = browser.new_page()
                page.goto(f"https://{origin}/", wait_until="load", timeout=30000)
                time.sleep(0.5)  # the first load's last responses and ACKs
                td, pcap = L.tcpdump(name, port, udp=True)
                time.sleep(0.2)
                window["capture_start"] = time.time()
                page.goto(f"https://{origin}/?late=1", wait_until="load", timeout=30000)
                page.reload(wait_until="load", timeout=30000)
                time.sleep(0.5)
                window["capture_end"] = time.time()
                cap = L.finish_capture(name, td, pcap)
            finally:
                browser.close()  # the NetLog is completed at exit
        procs.stop(srv)
        if not keys.exists() or "CLIENT_TRAFFIC_SECRET_0" not in keys.read_text():
            shutil.copy(srv_keys, keys)  # Chromium did not log QUIC secrets: the server's are the same
            window["keys_from"] = "aioquic server secrets_log_file"
        gz = out / f"{name}.netlog.json.gz"
        with open(netlog, "rb") as f, gzip.GzipFile(gz, "wb", mtime=0) as g:
            shutil.copyfileobj(f, g)
        manifest = {"tools": lab.tool_versions(tools), "page": L.page, "port": port, "capture": cap.name,
                    "keys": keys.name, "netlog": gz.name, "window": window,
                    "steps": ["goto / (not captured)", "tcpdump starts", "goto /?late=1", "reload"],
                    "server_log": [json.loads(x) for x in slog.read_text().splitlines() if x.strip()]}
        (out / f"{name}.manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
        print(f"wrote {cap} ({cap.stat().st_size} bytes), {keys.name}, {gz.name}")
        return 0
    finally:
        procs.stop_all()
        if not args.keep_workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
