#!/usr/bin/env python3
"""Record the lab page load three ways at once: the wire (tcpdump), Chromium's HAR (through
the DevTools protocol, written by Playwright's ``record_har_path``) and Chromium's NetLog,
with the TLS key log — capture + HAR + NetLog + keys of the same load.

The page and server are the lab's (scripts/lab/serve_and_capture.py: generate.py's page,
nginx over TLS with ALPN h2 or http/1.1 only, a throwaway certificate); the browser is
/usr/bin/chromium driven by Playwright (from the project's .venv), headless, with
SSLKEYLOGFILE and --log-net-log set.  Each process is stopped by its PID.  Must run as root
(tcpdump on lo).

    .venv/bin/python scripts/browser/record_har.py -o sample_captures/page [--protocols h2,h1] [--count 12]

Writes OUT/pw-<proto>.pcapng, .keys, .har.gz (the HAR, gzip'd: wirefall reads it by content),
.netlog.json.gz and adds a run to OUT/pw-manifest.json.
"""
from __future__ import annotations

import argparse
import datetime
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
LAB = HERE.parent / "lab"
sys.path.insert(0, str(LAB))
import serve_and_capture as sc  # noqa: E402  (the lab's page, nginx, tcpdump and process handling)

CHROMIUM = "/usr/bin/chromium"


def load_with_playwright(url: str, har: Path, netlog: Path, keys: Path, profile: Path) -> dict:
    from playwright.sync_api import sync_playwright

    env = dict(os.environ, SSLKEYLOGFILE=str(keys))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, env=env,
                                     args=["--no-sandbox", "--disable-gpu", "--ignore-certificate-errors",
                                           "--disable-background-networking", "--disable-component-update",
                                           "--no-first-run", f"--log-net-log={netlog}", "--net-log-capture-mode=Default"])
        try:
            ctx = browser.new_context(record_har_path=str(har), record_har_content="omit", ignore_https_errors=True)
            page = ctx.new_page()
            page.goto(url, wait_until="load", timeout=60_000)
            page.wait_for_timeout(500)  # the page's fetch() of config.json settles
            title = page.title()
            ctx.close()  # writes the HAR
        finally:
            browser.close()  # closes the NetLog
        return {"title": title, "playwright": _version("playwright"), "chromium": browser.version}


def _version(pkg: str) -> str:
    from importlib.metadata import version

    return version(pkg)


def run(lab: sc.Lab, out: Path, proto: str) -> dict:
    name = f"pw-{proto}"
    port = sc.free_port()
    conf = sc.nginx_conf(lab.work, lab.site, port, proto, lab.cert, lab.key)
    srv = lab.procs.start("nginx", ["nginx", "-c", str(conf), "-e", str(lab.work / f"nginx-{proto}.stderr")],
                          stop_sig=signal.SIGQUIT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sc.wait_port(port, proc=srv)
    td, pcap = lab.tcpdump(name, port, udp=False)
    keys = out / f"{name}.keys"
    keys.unlink(missing_ok=True)
    har = lab.work / f"{name}.har"
    netlog = lab.work / f"{name}.netlog.json"
    profile = Path(tempfile.mkdtemp(prefix="chromium-", dir=lab.work))
    info = load_with_playwright(f"https://127.0.0.1:{port}/", har, netlog, keys, profile)
    cap = lab.finish_capture(name, td, pcap)
    lab.procs.stop(srv)
    for src, dst in ((har, out / f"{name}.har.gz"), (netlog, out / f"{name}.netlog.json.gz")):
        with open(src, "rb") as f, gzip.GzipFile(dst, "wb", mtime=0) as g:
            shutil.copyfileobj(f, g)
    return {"protocol": proto, "port": port, "capture": cap.name, "keys": keys.name, "har": f"{name}.har.gz",
            "netlog": f"{name}.netlog.json.gz", "capture_bytes": cap.stat().st_size, **info,
            "made": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", type=Path, required=True)
    ap.add_argument("--protocols", default="h2,h1", help="comma list of h2, h1 (default h2,h1)")
    ap.add_argument("--count", type=int, default=12)
    a = ap.parse_args(argv)
    protos = [p.strip() for p in a.protocols.split(",") if p.strip()]
    if any(p not in ("h1", "h2") for p in protos):
        sc.die("record_har: protocols are h1, h2")
    tools = sc.check_tools(protos)
    a.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="wirefall-har-"))
    os.chmod(work, 0o755)
    mpath = a.out / "pw-manifest.json"
    manifest = json.loads(mpath.read_text()) if mpath.exists() else {}
    lab = None
    try:
        lab = sc.Lab(a.out, work, a.count)
        manifest["page"] = {k: lab.page[k] for k in ("count", "seed", "requests", "files")}
        manifest.setdefault("tools", {}).update(sc.tool_versions(tools))
        manifest.setdefault("runs", {})
        for proto in protos:
            r = run(lab, a.out, proto)
            manifest["runs"][proto] = r
            print(f"[{proto}] {r['capture']} {r['capture_bytes']} bytes, {r['har']}", flush=True)
            mpath.write_text(json.dumps(manifest, indent=1) + "\n")
    finally:
        if lab is not None:
            lab.procs.stop_all()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
