#!/usr/bin/env python3
"""A multi-origin Chromium page load whose main QUIC and HTTP/2 connections the capture joins late.

The held-out capture of issue 20 (real Chrome loading a search engine's home page) mixes HTTP/2
and HTTP/3 to several origins, and its main QUIC connection was opened before tcpdump started.
``late_join_capture.py`` makes the kind version (one origin, one aioquic server); this script
makes a harder one with real implementations on loopback, each origin on its own address:

=================  ===========  ============================================================
www.lab.test       127.0.0.2    nginx HTTP/2 (TCP 443) with ``Alt-Svc: h3=":443"`` and aioquic
                                HTTP/3 (UDP 443): the document, after the upgrade over HTTP/3
static.lab.test    127.0.0.3    Caddy (HTTP/2 and HTTP/3 by quic-go, its own Alt-Svc;
                                4-byte connection IDs, no QPACK dynamic table)
img.lab.test       127.0.0.4    nginx HTTP/2 with Alt-Svc + aioquic HTTP/3 (images)
api.lab.test       127.0.0.5    nginx HTTP/2 only, long keep-alive (fetch()es, a POST -> 405,
                                a 404): the same HTTP/2 connection before and inside the capture
late.lab.test      127.0.0.6    nginx HTTP/2, used only by the captured loads (a new connection)
fresh.lab.test     127.0.0.7    aioquic HTTP/3 forced with --origin-to-force-quic-on, used only
                                by the captured loads (a QUIC handshake inside the capture)
=================  ===========  ============================================================

Host names are resolved by Chromium's ``--host-resolver-rules`` (no DNS), the certificate (one,
for ``*.lab.test``) is accepted with ``--ignore-certificate-errors-spki-list``.  Every response is
``Cache-Control: no-store`` so each load asks the network again.  Steps:

1. ``goto https://www.lab.test/`` (HTTP/2; Chromium learns the Alt-Svc of www, static, img);
2. wait until the short-lived HTTP/2 connections of www, static and img are closed by their
   servers (keep-alive 1 s), ``goto /?warm=1``: Chromium now opens HTTP/3 to www, static, img;
3. ``tcpdump -i lo 'port 443'`` starts (nothing of the above is captured);
4. ``goto /?late=1`` (the document over HTTP/3 on the QUIC connection opened in step 2, the api
   HTTP/2 connection of step 1 reused, new connections to late and fresh), then ``reload``;
5. tcpdump stops, the browser closes (the NetLog is written out), the servers stop.

    .venv/bin/python scripts/quic/late_join_multi.py -o sample_captures/quic [--name page-multi-late]

Writes OUT/NAME.pcapng, OUT/NAME.keys (Chromium's SSLKEYLOGFILE: it holds the secrets of every
connection, those opened before the capture included), OUT/NAME.netlog.json.gz and
OUT/NAME.manifest.json (tools, origins, steps and the capture window).  Run as root.
"""
from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lab"))
import serve_and_capture as lab  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
# Chromium accepts a certificate that no built-in root issued on a QUIC connection only for the
# hosts of --origin-to-force-quic-on (its "hostnames to allow unknown roots"): fresh.lab.test
# is forced onto QUIC; www, static and img are named with port 9, where nothing listens and the
# page never goes, so that their Alt-Svc upgrade to QUIC on port 443 accepts the lab's certificate.
FORCED = "fresh.lab.test:443,www.lab.test:9,static.lab.test:9,img.lab.test:9"
ORIGINS = {  # host -> (address, what serves it)
    "www.lab.test": ("127.0.0.2", "nginx-h2+alt-svc, aioquic (scripts/quic/h3_origin.py)"),
    "static.lab.test": ("127.0.0.3", "caddy"),
    "img.lab.test": ("127.0.0.4", "nginx-h2+alt-svc, aioquic (scripts/quic/h3_origin.py)"),
    "api.lab.test": ("127.0.0.5", "nginx-h2"),
    "late.lab.test": ("127.0.0.6", "nginx-h2"),
    "fresh.lab.test": ("127.0.0.7", "aioquic (scripts/lab/h3_server.py, forced)"),
}


def make_cert(d: Path) -> tuple[Path, Path, str]:
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "7", "-subj", "/CN=lab.test",
                    "-addext", "subjectAltName=DNS:lab.test,DNS:*.lab.test"], check=True, capture_output=True)
    pub = subprocess.run(["openssl", "x509", "-in", str(cert), "-pubkey", "-noout"], check=True,
                         capture_output=True).stdout
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=pub, check=True,
                         capture_output=True).stdout
    return cert, key, base64.b64encode(hashlib.sha256(der).digest()).decode()


def _png(w: int, h: int, rng: random.Random) -> bytes:
    raw = b"".join(b"\0" + bytes(rng.randrange(256) for _ in range(3 * w)) for _ in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def _text(n: int, rng: random.Random, comment: str) -> bytes:
    words = ["alpha", "beta", "gamma", "delta", "wire", "fall", "quic", "frame", "table", "entry"]
    out = [comment]
    while sum(map(len, out)) < n:
        out.append(" ".join(rng.choice(words) for _ in range(12)))
    return ("\n".join(out)[:n] + "\n").encode()


def build_site(root: Path) -> dict:
    """The page and its resources (deterministic); returns {origin: [paths]} the page asks for."""
    rng = random.Random(20)
    root.mkdir(parents=True, exist_ok=True)
    plan: dict[str, list[str]] = {h: [] for h in ORIGINS}

    def put(path: str, data: bytes):
        f = root / path.lstrip("/")
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(data)

    head, body = [], []
    for i in range(4):  # www: styles and scripts on the document's own (HTTP/3) connection
        p = f"/www/css/site-{i}.css"
        put(p, _text(3000 + 900 * i, rng, f"/* site {i} */"))
        head.append(f'<link rel="stylesheet" href="https://www.lab.test{p}">')
        plan["www.lab.test"].append(p)
    for i in range(4):
        p = f"/www/js/module-{i}.js"
        put(p, _text(5000 + 1500 * i, rng, f"// module {i}"))
        body.append(f'<script src="https://www.lab.test{p}"></script>')
        plan["www.lab.test"].append(p)
    for i in range(10):  # static (Caddy, quic-go)
        ext = ("js", "css")[i % 2]
        p = f"/static/lib/chunk-{i:02d}.{ext}"
        put(p, _text(2000 + 700 * i, rng, f"/* chunk {i} */"))
        body.append(f'<script src="https://static.lab.test{p}"></script>' if ext == "js"
                    else f'<link rel="stylesheet" href="https://static.lab.test{p}">')
        plan["static.lab.test"].append(p)
    for i in range(10):  # images (aioquic)
        p = f"/img/tile-{i:02d}.png"
        put(p, _png(16 + 4 * i, 16, rng))
        body.append(f'<img src="https://img.lab.test{p}?w={64 + i}&amp;dpr=1" width="32" height="32">')
        plan["img.lab.test"].append(f"{p}?w={64 + i}&dpr=1")
    for i in range(5):  # api (HTTP/2 only)
        p = f"/api/data-{i}.json"
        put(p, json.dumps({"i": i, "items": [rng.randrange(1000) for _ in range(50 + 40 * i)]}).encode())
    for i in range(3):
        put(f"/late/extra-{i}.js", _text(1500 + 500 * i, rng, f"// late {i}"))
        put(f"/fresh/pixel-{i}.png", _png(8 + 8 * i, 8, rng))
    script = """
<script>
(async () => {
  const late = location.search.includes('late');
  const q = (n) => 'https://api.lab.test/api/data-' + n + '.json?session=' + location.search.slice(1) + '&n=' + n;
  const jobs = [0, 1, 2, 3, 4].map(n => fetch(q(n), {mode: 'no-cors', cache: 'no-store'}));
  jobs.push(fetch('https://api.lab.test/api/submit', {method: 'POST', mode: 'no-cors', body: 'x=' + 'y'.repeat(300)}));
  jobs.push(fetch('https://api.lab.test/api/missing?x=1', {mode: 'no-cors', cache: 'no-store'}));
  for (let n = 0; n < 3; n++)
    jobs.push(fetch('https://www.lab.test/beacon?ev=' + n + '&t=' + Date.now(), {method: 'POST', body: 'e='.repeat(40 + n)}));
  if (late) {
    for (let i = 0; i < 3; i++) {
      jobs.push(fetch('https://late.lab.test/late/extra-' + i + '.js', {mode: 'no-cors', cache: 'no-store'}));
      jobs.push(fetch('https://fresh.lab.test/fresh/pixel-' + i + '.png', {mode: 'no-cors', cache: 'no-store'}));
    }
  }
  await Promise.allSettled(jobs);
  if (document.readyState !== 'complete') await new Promise(r => addEventListener('load', r));
  window.__done = true;
})();
</script>"""
    html = ("<!doctype html><html><head><meta charset=utf-8><title>wirefall multi-origin page</title>"
            '<link rel="icon" href="data:,">' + "".join(head) + "</head><body><h1>multi-origin</h1>"
            + "".join(body) + script + "</body></html>\n")
    put("/index.html", html.encode())
    plan["api.lab.test"] = [f"/api/data-{n}.json?session=…&n={n}" for n in range(5)] + ["/api/submit", "/api/missing?x=1"]
    plan["late.lab.test"] = [f"/late/extra-{i}.js" for i in range(3)]
    plan["fresh.lab.test"] = [f"/fresh/pixel-{i}.png" for i in range(3)]
    return plan


def nginx_conf(d: Path, site: Path, cert: Path, key: Path) -> Path:
    def server(host, addr, keepalive, altsvc):
        alt = 'add_header Alt-Svc \'h3=":443"; ma=3600\' always;' if altsvc else ""
        return f"""
  server {{
    listen {addr}:443 ssl http2;
    server_name {host};
    ssl_certificate {cert};
    ssl_certificate_key {key};
    ssl_protocols TLSv1.3;
    keepalive_timeout {keepalive};
    http2_idle_timeout {keepalive};
    root {site};
    add_header Cache-Control no-store always;
    add_header Access-Control-Allow-Origin * always;
    {alt}
  }}"""
    conf = d / "nginx.conf"
    servers = "".join([server("www.lab.test", "127.0.0.2", "1s", True), server("img.lab.test", "127.0.0.4", "1s", True),
                       server("api.lab.test", "127.0.0.5", "120s", False), server("late.lab.test", "127.0.0.6", "120s", False)])
    conf.write_text(f"""
user root;
worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/nginx.error.log info;
events {{ worker_connections 256; }}
http {{
  types {{ text/html html; text/css css; application/javascript js; image/png png; application/json json; }}
  default_type application/octet-stream;
  log_format lab '$host $connection $connection_requests "$request" $status $body_bytes_sent $server_protocol';
  access_log {d}/nginx.access.log lab;
  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fcgi;
  uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  sendfile off; gzip off; etag off; server_tokens off; if_modified_since off;
  {servers}
}}
""")
    return conf


def caddyfile(d: Path, site: Path, cert: Path, key: Path) -> Path:
    f = d / "Caddyfile"
    f.write_text(f"""{{
	admin off
	auto_https disable_redirects
	skip_install_trust
	storage file_system {d}/caddy-data
	servers {{
		protocols h1 h2 h3
		timeouts {{
			idle 1s
		}}
	}}
}}
https://static.lab.test:443 {{
	bind 127.0.0.3
	tls {cert} {key}
	root * {site}
	header Cache-Control no-store
	header -Last-Modified
	header -ETag
	file_server
}}
""")
    return f


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("-o", "--out", default="sample_captures/quic")
    ap.add_argument("--name", default="page-multi-late")
    ap.add_argument("--keep-workdir", action="store_true")
    args = ap.parse_args(argv)
    tools = lab.check_tools(["h2", "h3"])
    if not shutil.which("caddy"):
        lab.die("missing tool: caddy (apt-get install caddy: Caddy 2.6, HTTP/3 by quic-go)")
    from playwright.sync_api import sync_playwright

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="wirefall-multi-"))
    procs = lab.Procs()
    signal.signal(signal.SIGTERM, lambda *a: (procs.stop_all(), sys.exit(1)))
    name = args.name
    try:
        site = work / "site"
        plan = build_site(site)
        cert, key, spki = make_cert(work)
        for d in ("body", "proxy", "fcgi", "uwsgi", "scgi", "caddy-data"):
            (work / d).mkdir()
        conf = nginx_conf(work, site, cert, key)
        ngx = procs.start("nginx", ["nginx", "-c", str(conf), "-e", str(work / "nginx.stderr")], stop_sig=signal.SIGQUIT,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cf = caddyfile(work, site, cert, key)
        cenv = dict(os.environ, HOME=str(work), XDG_DATA_HOME=str(work / "caddy-data"), XDG_CONFIG_HOME=str(work))
        cad = procs.start("caddy", ["caddy", "run", "--config", str(cf), "--adapter", "caddyfile"], env=cenv,
                          stdout=open(work / "caddy.log", "w"), stderr=subprocess.STDOUT)
        h3s = {}
        for host in ("www.lab.test", "img.lab.test", "fresh.lab.test"):
            addr = ORIGINS[host][0]
            server = [str(HERE / "h3_origin.py"), "--key-update-every", "15"] if host != "fresh.lab.test" else \
                [str(HERE.parent / "lab" / "h3_server.py")]
            h3s[host] = procs.start(f"h3-{host}", [sys.executable, *server,
                                                   "--root", str(site), "--cert", str(cert), "--key", str(key),
                                                   "--host", addr, "--port", "443",
                                                   "--request-log", str(work / f"h3-{host}.log")],
                                    stdout=open(work / f"h3-{host}.out", "w"), stderr=subprocess.STDOUT)
        deadline = time.time() + 15
        while time.time() < deadline:
            tcp = subprocess.run(["ss", "-Hltn", "sport = :443"], capture_output=True, text=True).stdout
            udp = subprocess.run(["ss", "-Hlun", "sport = :443"], capture_output=True, text=True).stdout
            if all(a in tcp for a in ("127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6")) and \
                    all(a in udp for a in ("127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.7")):
                break
            for p in (ngx, cad, *h3s.values()):
                if p.poll() is not None:
                    lab.die(f"a server exited early (see {work})")
            time.sleep(0.2)
        else:
            lab.die(f"servers not listening on 443 (see {work})")
        keys = out / f"{name}.keys"
        keys.unlink(missing_ok=True)
        netlog = work / f"{name}.netlog.json"
        rules = ",".join(f"MAP {h} {a}" for h, (a, _) in ORIGINS.items())
        flags = [f for f in lab.CHROMIUM_FLAGS if not f.startswith("--headless")]
        chromium_args = [*flags, f"--log-net-log={netlog}", "--enable-quic", f"--host-resolver-rules={rules}",
                         "--origin-to-force-quic-on=" + FORCED, f"--ignore-certificate-errors-spki-list={spki}"]
        window: dict = {}
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=chromium_args,
                                         env=dict(os.environ, SSLKEYLOGFILE=str(keys)))
            try:
                page = browser.new_page()

                def load(url, reload=False):
                    if reload:
                        page.reload(wait_until="load", timeout=30000)
                    else:
                        page.goto(url, wait_until="load", timeout=30000)
                    page.wait_for_function("window.__done === true", timeout=30000)

                load("https://www.lab.test/")
                time.sleep(2.5)  # www/static/img HTTP/2 connections close (keep-alive 1 s); api's stays
                load("https://www.lab.test/?warm=1")
                time.sleep(0.5)
                pcap = work / f"{name}.pcap"
                tlog = open(work / "tcpdump.log", "w+")
                td = procs.start("tcpdump", ["tcpdump", "-i", "lo", "--immediate-mode", "-B", "131072", "-U", "-s", "0",
                                             "-w", str(pcap), "port", "443"], stop_sig=signal.SIGINT,
                                 stdout=subprocess.DEVNULL, stderr=tlog)
                t0 = time.time()
                while "listening on" not in (tlog.seek(0) or tlog.read()):
                    if time.time() - t0 > 10 or td.poll() is not None:
                        lab.die("tcpdump did not start")
                    time.sleep(0.05)
                time.sleep(0.2)
                window["capture_start"] = time.time()
                load("https://www.lab.test/?late=1")
                load(None, reload=True)
                time.sleep(0.5)
                window["capture_end"] = time.time()
                time.sleep(0.3)
                procs.stop(td)
            finally:
                browser.close()  # the NetLog is completed at exit
        log = (work / "tcpdump.log").read_text()
        if "0 packets dropped by kernel" not in log:
            lab.die(f"tcpdump lost packets: {log}")
        cap = out / f"{name}.pcapng"
        subprocess.run(["editcap", "-F", "pcapng", str(pcap), str(cap)], check=True)
        gz = out / f"{name}.netlog.json.gz"
        with open(netlog, "rb") as f, gzip.GzipFile(gz, "wb", mtime=0) as g:
            shutil.copyfileobj(f, g)
        versions = lab.tool_versions(tools)
        versions["caddy"] = subprocess.run(["caddy", "version"], capture_output=True, text=True).stdout.strip()
        versions["playwright"] = subprocess.run([sys.executable, "-m", "pip", "show", "playwright"], capture_output=True,
                                                text=True).stdout.split("Version: ")[-1].split()[0]
        manifest = {"tools": versions, "origins": {h: {"address": a, "servers": s} for h, (a, s) in ORIGINS.items()},
                    "page": plan, "capture": cap.name, "keys": keys.name, "netlog": gz.name, "window": window,
                    "steps": ["goto / (not captured)", "wait 2.5 s (short keep-alives close)", "goto /?warm=1 (not captured)",
                              "tcpdump -i lo port 443 starts", "goto /?late=1", "reload"],
                    "server_logs": {h: [json.loads(x) for x in (work / f"h3-{h}.log").read_text().splitlines() if x.strip()]
                                    for h in h3s if (work / f"h3-{h}.log").exists()},
                    "nginx_log": (work / "nginx.access.log").read_text().splitlines()}
        (out / f"{name}.manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
        print(f"wrote {cap} ({cap.stat().st_size} bytes), {keys.name}, {gz.name}; work {work}")
        return 0
    finally:
        procs.stop_all()
        if not args.keep_workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
