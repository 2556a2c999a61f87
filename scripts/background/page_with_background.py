#!/usr/bin/env python3
"""Capture a real page load with background traffic beside it, as on a cloud VM or a LAN.

Four network namespaces joined by a bridge (the capture watches the bridge, so it sees every
host's packets, as a capture on a shared segment or a VM's uplink does):

    srv  10.78.0.2   nginx, TLS, HTTP/2: page.test and static.test (one certificate for both,
                     one address: Chromium may pool static.test onto page.test's connection)
         10.78.0.5   the same nginx: telemetry.test (an OS telemetry endpoint)
         10.78.0.53  a DNS server (page.test, static.test, telemetry.test; nothing else)
         169.254.169.254  a metadata server whose long-poll answers after 3 s (HTTP/1.1, port 80)
    cli  10.78.0.10  the browser's host: headless Chromium (Playwright) loads https://page.test/,
                     whose HTML pulls page.test and static.test resources and fetches one more
                     from static.test 2.5 s after load (by then nginx has closed the idle
                     connection: a new connection, the name long resolved); beside it a VM
                     agent's curl long-poll to 169.254.169.254 (opened before the page, polled
                     again and again) and a telemetry report by curl to telemetry.test
    oth  10.78.0.11  another client host: curl with Chromium's User-Agent and a Referer of
                     page.test fetches page.test/css/main.css during the load
    lan  br0         tcpdump -i br0

Every client resolves through the DNS server (resolv.conf of its namespace), so the capture
holds the lookups too.  No DNS server package is installed here (dnsmasq, dnslib, dnspython are
absent), so the answering server is the few lines of ``dns_server`` below (A records; other
types NOERROR with no answer).

    .venv/bin/python scripts/background/page_with_background.py -o sample_captures/page [--name bg-mixed]

Writes OUT/NAME.pcapng, OUT/NAME.keys (Chromium's and curl's TLS secrets), OUT/NAME.netlog.json.gz
(Chromium's NetLog) and OUT/NAME.manifest.json (addresses of each role, what ran when, tools).
tests/test_truth20.py takes the page alone out of the capture with tshark (every packet of the
other host, the metadata server, telemetry.test and their lookups removed) and checks that
wirefall's page load time and milestones are those of the page alone and that exactly the
background requests are marked.  Run as root.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lab"))
import serve_and_capture as lab  # noqa: E402

SRV, STATIC_SRV, TELEMETRY, DNS, META = "10.78.0.2", "10.78.0.2", "10.78.0.5", "10.78.0.53", "169.254.169.254"
CLI, OTHER = "10.78.0.10", "10.78.0.11"
NAMES = {"page.test": SRV, "static.test": STATIC_SRV, "telemetry.test": TELEMETRY}
UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.0.0 Safari/537.36"


# ------------------------------------------------------------------ servers run as children

def dns_server(addr: str, names: dict[str, str]) -> None:
    """Answer A queries for ``names`` (TTL 300), everything else NOERROR without an answer."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 53))
    while True:
        q, peer = s.recvfrom(2048)
        if len(q) < 12:
            continue
        i, labels = 12, []
        while i < len(q) and q[i]:
            labels.append(q[i + 1:i + 1 + q[i]].decode("ascii", "replace"))
            i += 1 + q[i]
        qtype, _qclass = struct.unpack("!HH", q[i + 1:i + 5])
        question = q[12:i + 5]
        name = ".".join(labels).lower()
        ans = b""
        if qtype == 1 and name in names:
            ans = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 300, 4) + socket.inet_aton(names[name])
        rcode = 0 if name in names else 3  # NXDOMAIN for names not ours
        flags = 0x8180 | rcode
        s.sendto(q[:2] + struct.pack("!HHHHH", flags, 1, 1 if ans else 0, 0, 0) + question + ans, peer)


def metadata_server(addr: str, hold: float) -> None:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):  # noqa: N802 - http.server's name
            time.sleep(hold)
            body = json.dumps({"etag": str(time.time()), "maintenance-event": "NONE"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    ThreadingHTTPServer((addr, 80), H).serve_forever()


def browser(url: str, keys: str, netlog: str, spki: str, after: float) -> None:
    from playwright.sync_api import sync_playwright

    flags = [f for f in lab.CHROMIUM_FLAGS if not f.startswith("--headless")]
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                               args=[*flags, f"--log-net-log={netlog}", f"--ignore-certificate-errors-spki-list={spki}",
                                     "--disable-quic"], env=dict(os.environ, SSLKEYLOGFILE=keys))
        try:
            page = b.new_page(user_agent=UA)
            print("loading", flush=True)  # (the parent starts the other clients now)
            page.goto(url, wait_until="load", timeout=30000)
            time.sleep(after)  # the page's late fetch (2.5 s after load) and its response
        finally:
            b.close()


# ------------------------------------------------------------------ the namespaces

class Net:
    def __init__(self, tag: str):
        self.ns = {r: f"wfbg-{r}-{tag}" for r in ("lan", "srv", "cli", "oth")}
        self.made: list[str] = []

    def run(self, *cmd: str, check: bool = True) -> None:
        subprocess.run(list(cmd), check=check, capture_output=True)

    def exec(self, role: str, cmd: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.ns[role], *cmd]

    def up(self) -> None:
        for r, n in self.ns.items():
            self.run("ip", "netns", "add", n)
            self.made.append(n)
            self.run("ip", "-n", n, "link", "set", "lo", "up")
            if r != "lan":
                Path(f"/etc/netns/{n}").mkdir(parents=True, exist_ok=True)
                Path(f"/etc/netns/{n}/resolv.conf").write_text(f"nameserver {DNS}\noptions attempts:1 timeout:2\n")
                Path(f"/etc/netns/{n}/hosts").write_text("127.0.0.1 localhost\n")
        lan = self.ns["lan"]
        self.run("ip", "-n", lan, "link", "add", "br0", "type", "bridge")
        self.run("ip", "-n", lan, "link", "set", "br0", "up")
        addrs = {"srv": [SRV, TELEMETRY, DNS], "cli": [CLI], "oth": [OTHER]}
        for r in ("srv", "cli", "oth"):
            n = self.ns[r]
            self.run("ip", "link", "add", f"p-{r}", "netns", lan, "type", "veth", "peer", "eth0", "netns", n)
            self.run("ip", "-n", lan, "link", "set", f"p-{r}", "master", "br0")
            self.run("ip", "-n", lan, "link", "set", f"p-{r}", "up")
            for a in addrs[r]:
                self.run("ip", "-n", n, "addr", "add", f"{a}/24", "dev", "eth0")
            if r == "srv":
                self.run("ip", "-n", n, "addr", "add", f"{META}/16", "dev", "eth0")
            self.run("ip", "-n", n, "link", "set", "eth0", "mtu", "1500", "up")
            self.run("ip", "-n", n, "route", "add", "169.254.0.0/16", "dev", "eth0", check=False)
            for ifc, ns in ((f"p-{r}", lan), ("eth0", n)):  # the packets a real network carries
                self.run("ip", "netns", "exec", ns, "ethtool", "-K", ifc, "tso", "off", "gso", "off", "gro", "off", check=False)

    def down(self) -> None:
        for n in reversed(self.made):
            self.run("ip", "netns", "del", n, check=False)
            shutil.rmtree(f"/etc/netns/{n}", ignore_errors=True)
        self.made.clear()


SITE_HTML = """<!doctype html>
<html><head><meta charset="utf-8"><title>wirefall background test page</title>
<link rel="stylesheet" href="/css/main.css">
<link rel="stylesheet" href="https://static.test/css/theme.css">
<script src="/js/app.js"></script>
<script src="https://static.test/js/lib.js"></script>
</head><body><h1>wirefall background test page</h1>
<img src="/img/hero.jpg"><img src="https://static.test/img/logo.png"><img src="https://static.test/img/photo.jpg">
<script>
window.addEventListener("load", () => setTimeout(() => fetch("https://static.test/data/late.json").then(r => r.text()), 2500));
</script>
</body></html>
"""


def make_site(d: Path) -> dict:
    import random

    rnd = random.Random(20)
    files = {"index.html": SITE_HTML.encode(), "css/main.css": b"body{margin:0}\n" * 1500,
             "css/theme.css": b"h1{color:#123}\n" * 400, "js/app.js": b"var a=1;\n" * 3000,
             "js/lib.js": b"function f(){}\n" * 2000, "img/hero.jpg": bytes(rnd.randrange(256) for _ in range(60000)),
             "img/logo.png": bytes(rnd.randrange(256) for _ in range(9000)),
             "img/photo.jpg": bytes(rnd.randrange(256) for _ in range(30000)),
             "data/late.json": b'{"late": true}\n', "v1/report": b"{}\n"}
    for rel, data in files.items():
        f = d / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(data)
    return {rel: len(data) for rel, data in files.items()}


def make_cert(d: Path) -> tuple[Path, Path, str]:
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "7", "-subj", "/CN=page.test",
                    "-addext", "subjectAltName=DNS:page.test,DNS:static.test,DNS:telemetry.test"], check=True, capture_output=True)
    pub = subprocess.run(["openssl", "x509", "-in", str(cert), "-pubkey", "-noout"], check=True, capture_output=True).stdout
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=pub, check=True, capture_output=True).stdout
    import base64
    import hashlib

    return cert, key, base64.b64encode(hashlib.sha256(der).digest()).decode()


def nginx_conf(d: Path, site: Path, cert: Path, key: Path) -> Path:
    conf = d / "nginx.conf"
    conf.write_text(textwrap.dedent(f"""
        user root;
        worker_processes 1;
        daemon off;
        pid {d}/nginx.pid;
        error_log {d}/nginx.error.log info;
        events {{ worker_connections 64; }}
        http {{
          types {{ text/html html; text/css css; application/javascript js; image/jpeg jpg;
                  image/png png; application/json json; }}
          default_type application/json;
          access_log {d}/nginx.access.log;
          client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fcgi;
          uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
          sendfile off; gzip off; etag off; server_tokens off;
          keepalive_timeout 1s;  # the idle connection closes before the page's late fetch
          server {{
            listen {SRV}:443 ssl http2;
            listen {TELEMETRY}:443 ssl http2;
            server_name _;
            ssl_certificate {cert};
            ssl_certificate_key {key};
            ssl_protocols TLSv1.3;
            root {site};
            index index.html;
          }}
        }}
        """))
    return conf


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("-o", "--out", default="sample_captures/page")
    ap.add_argument("--name", default="bg-mixed")
    ap.add_argument("--keep-workdir", action="store_true")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("page_with_background: run as root (network namespaces, tcpdump)")
    tools = lab.check_tools(["h2"], ["curl"])
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="wirefall-bg-"))
    procs = lab.Procs()
    net = Net(str(os.getpid()))
    signal.signal(signal.SIGTERM, lambda *a: (procs.stop_all(), net.down(), sys.exit(1)))
    name = args.name
    py = sys.executable
    me = str(Path(__file__).resolve())
    log = []

    def mark(what: str) -> None:
        log.append({"t": time.time(), "what": what})

    try:
        net.up()
        site = work / "site"
        sizes = make_site(site)
        cert, key, spki = make_cert(work)
        ch_keys, curl_keys = work / "chromium.keys", work / "curl.keys"
        srv = [procs.start("nginx", net.exec("srv", ["nginx", "-c", str(nginx_conf(work, site, cert, key)), "-e", str(work / "nginx.stderr")]),
                           stop_sig=signal.SIGQUIT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
               procs.start("dns", net.exec("srv", [py, me, "--serve-dns"]), stdout=subprocess.DEVNULL, stderr=open(work / "dns.log", "w")),
               procs.start("metadata", net.exec("srv", [py, me, "--serve-metadata"]), stdout=subprocess.DEVNULL,
                           stderr=open(work / "meta.log", "w"))]
        for port, udp in ((443, False), (53, True), (80, False)):
            lab.wait_port(port, udp=udp, proc=None, net=type("N", (), {"server_cmd": staticmethod(lambda c: net.exec("srv", c))}))
        pcap = work / f"{name}.pcap"
        tderr = open(work / "tcpdump.log", "w+")
        td = procs.start("tcpdump", net.exec("lan", ["tcpdump", "-i", "br0", "--immediate-mode", "-B", "131072", "-U", "-s", "0",
                                                     "-w", str(pcap), "ip"]), stop_sig=signal.SIGINT, stdout=subprocess.DEVNULL, stderr=tderr)
        t0 = time.time()
        while "listening on" not in (tderr.seek(0) or tderr.read()):
            if time.time() - t0 > 10 or td.poll() is not None:
                raise SystemExit("tcpdump did not start")
            time.sleep(0.05)
        env = dict(os.environ, SSLKEYLOGFILE=str(curl_keys))
        # the VM agent's long-poll, open before the page and polled again while it loads
        agent = procs.start("agent", net.exec("cli", ["sh", "-c", f"while :; do curl -s -m 10 -H 'Metadata-Flavor: Google' "
                                                                  f"'http://{META}/computeMetadata/v1/instance/?wait_for_change=true'; done"]),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        mark("agent long-poll started")
        time.sleep(0.6)
        mark("browser starts")
        br = procs.start("browser", net.exec("cli", [py, me, "--browser", str(ch_keys), str(work / "netlog.json"), spki]),
                         stdout=subprocess.PIPE, stderr=open(work / "browser.log", "w"), text=True)
        if br.stdout.readline().strip() != "loading":  # Chromium is up: the navigation starts now
            raise SystemExit(f"browser failed: {(work / 'browser.log').read_text()[-2000:]}")
        mark("navigation starts")
        time.sleep(0.1)
        mark("other host and telemetry start")
        other = procs.start("other", net.exec("oth", ["curl", "-sk", "-o", "/dev/null", "-A", UA, "-H", "Referer: https://page.test/",
                                                      "-H", "Sec-Fetch-Dest: style", "https://page.test/css/main.css"]), env=env)
        tele = procs.start("telemetry", net.exec("cli", ["curl", "-sk", "-o", "/dev/null",
                                                         "https://telemetry.test/v1/report?event=heartbeat"]), env=env)
        for p in (other, tele):
            p.wait(20)
        rc = br.wait(60)
        mark(f"browser done rc={rc}")
        if rc != 0:
            raise SystemExit(f"browser failed: {(work / 'browser.log').read_text()[-2000:]}")
        time.sleep(0.5)
        procs.stop(agent)
        time.sleep(0.3)
        procs.stop(td)
        for p in srv:
            procs.stop(p)
        cap = out / f"{name}.pcapng"
        subprocess.run(["editcap", "-F", "pcapng", str(pcap), str(cap)], check=True)
        (out / f"{name}.keys").write_text(ch_keys.read_text() + (curl_keys.read_text() if curl_keys.exists() else ""))
        with open(work / "netlog.json", "rb") as f, gzip.GzipFile(out / f"{name}.netlog.json.gz", "wb", mtime=0) as g:
            shutil.copyfileobj(f, g)
        manifest = {
            "tools": lab.tool_versions(tools), "page": "https://page.test/", "files": sizes,
            "roles": {"browser": CLI, "other_host": OTHER, "page_server": SRV, "static_server": STATIC_SRV,
                      "telemetry_server": TELEMETRY, "dns_server": DNS, "metadata_server": META},
            "names": NAMES, "background": {"hosts": [OTHER, META, TELEMETRY], "names": ["telemetry.test"]},
            "steps": log, "capture": cap.name, "keys": f"{name}.keys", "netlog": f"{name}.netlog.json.gz",
        }
        (out / f"{name}.manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
        print(f"wrote {cap} ({cap.stat().st_size} bytes)")
        return 0
    finally:
        procs.stop_all()
        net.down()
        if not args.keep_workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--serve-dns":
        dns_server(DNS, NAMES)
    elif len(sys.argv) > 1 and sys.argv[1] == "--serve-metadata":
        metadata_server(META, 3.0)
    elif len(sys.argv) > 1 and sys.argv[1] == "--browser":
        browser("https://page.test/", sys.argv[2], sys.argv[3], sys.argv[4], 3.5)
    else:
        sys.exit(main())
