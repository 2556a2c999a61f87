#!/usr/bin/env python3
"""Serve the lab test page over one or more protocols and capture a real client loading it.

For each protocol: start the server on 127.0.0.1 (throwaway self-signed cert made
with openssl), start `tcpdump -i lo -U -w ... port P`, load the page, stop
everything by PID (also on failure or Ctrl-C) and keep the capture (pcapng, via
editcap), the key log and, for Chromium, its NetLog (gzip'd) as timing truth.

  h1   nginx, TLS, ALPN http/1.1 only          client: headless Chromium
  h2   nginx, TLS, `listen ... ssl http2`       client: headless Chromium
  h3   aioquic (scripts/lab/h3_server.py)       client: headless Chromium, QUIC forced
  h1c  nginx, cleartext HTTP/1.1                client: curl (one keep-alive connection)
  h2c  nghttpd --no-tls                         client: nghttp -ans (prior knowledge)
  spdy node spdy 4.0.2 server (scripts/spdy)    client: scripts/spdy/client.js --page 1 (spdy/3.1, TLS)

`wirefall lab` (lab/run.py) drives the same `Lab` class across network namespaces
(lab/net.py) instead of loopback: a `net` object says where the server listens
(net.server_host), which interface tcpdump watches (net.iface) and wraps each client and
server command (net.client_cmd / net.server_cmd, `ip netns exec NS ...`).

    .venv/bin/python scripts/lab/serve_and_capture.py -o sample_captures/page \
        [--protocols h2,h1,h3] [--count 12] [--keep-workdir]

Writes OUT/page-<proto>.pcapng, .keys (TLS protocols), .netlog.json.gz (Chromium),
.server.log (server's own request log) and OUT/manifest.json (protocol, files, tool
versions, page). Must run as root (tcpdump on lo); Chromium runs with --no-sandbox.
"""
from __future__ import annotations

import argparse
import base64
import datetime
import gzip
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "page"))
import generate as page  # noqa: E402  (scripts/lab/page/generate.py)

# tool -> Debian package
TOOLS = {
    "tcpdump": "tcpdump", "editcap": "wireshark-common", "openssl": "openssl",
    "nginx": "nginx", "chromium": "chromium", "nghttpd": "nghttp2-server",
    "nghttp": "nghttp2-client", "curl": "curl", "cjpeg": "libjpeg-turbo-progs", "node": "nodejs",
    "ss": "iproute2", "dnsmasq": "dnsmasq-base", "caddy": "caddy", "gtlsserver": "ngtcp2-server",
}
SPDY_DIR = HERE.parent / "spdy"
NEEDS = {
    "h1": ["nginx", "chromium"], "h2": ["nginx", "chromium"], "h3": ["chromium"],
    "h1c": ["nginx", "curl"], "h2c": ["nghttpd", "nghttp"], "spdy": ["node"],
}
COMMON = ["tcpdump", "editcap", "openssl", "cjpeg", "ss"]
CHROMIUM_FLAGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--default-browser-check=false",
    "--disable-default-apps", "--disable-extensions", "--ignore-certificate-errors",
    "--net-log-capture-mode=Default",
]


def die(msg: str) -> None:
    raise SystemExit(f"serve_and_capture: {msg}")


def check_tools(protocols: list[str], extra: list[str] = ()) -> dict:
    need = list(COMMON) + [t for t in extra if t not in COMMON]
    for p in protocols:
        need += [t for t in NEEDS[p] if t not in need]
    missing = [t for t in need if not shutil.which(t)]
    if missing:
        die("missing tools: " + ", ".join(f"{t} (apt-get install {TOOLS[t]})" for t in missing))
    if "spdy" in protocols and not (SPDY_DIR / "node_modules" / "spdy").is_dir():
        die(f"spdy needs the npm spdy package: cd {SPDY_DIR} && npm ci")
    if "h3" in protocols:
        try:
            import aioquic  # noqa: F401
        except ImportError:
            die("h3 needs the aioquic Python package (pip install aioquic, or run with the project's .venv)")
    if os.geteuid() != 0:
        die("run as root: tcpdump must capture on lo")
    return {t: shutil.which(t) for t in need}


def tool_versions(tools: dict) -> dict:
    cmds = {
        "tcpdump": ["tcpdump", "--version"], "editcap": ["editcap", "--version"],
        "openssl": ["openssl", "version"], "nginx": ["nginx", "-v"],
        "chromium": ["chromium", "--version"], "nghttpd": ["nghttpd", "--version"],
        "nghttp": ["nghttp", "--version"], "curl": ["curl", "--version"], "cjpeg": ["cjpeg", "-version"],
        "node": ["node", "--version"], "ss": ["ss", "--version"], "ip": ["ip", "-V"], "tc": ["tc", "-V"],
        "ethtool": ["ethtool", "--version"], "dnsmasq": ["dnsmasq", "--version"], "caddy": ["caddy", "version"],
        "gtlsserver": ["dpkg-query", "-W", "-f", "ngtcp2-server ${Version}", "ngtcp2-server"],
    }
    out = {}
    for t in tools:
        if t not in cmds:
            continue
        try:
            r = subprocess.run(cmds[t], capture_output=True, text=True, timeout=20)
            lines = [ln for ln in (r.stdout + r.stderr).splitlines()
                     if ln.strip() and "unexpected operator" not in ln and "Running as user" not in ln]
            out[t] = lines[0].strip() if lines else "?"
        except Exception as e:  # noqa: BLE001
            out[t] = f"? ({e})"
    out["python"] = sys.version.split()[0]
    try:
        import aioquic
        out["aioquic"] = aioquic.__version__
    except ImportError:
        pass
    if "node" in tools:
        try:
            out["npm spdy"] = json.loads((SPDY_DIR / "node_modules/spdy/package.json").read_text())["version"]
            out["npm spdy-transport"] = json.loads(
                (SPDY_DIR / "node_modules/spdy-transport/package.json").read_text())["version"]
        except (OSError, ValueError, KeyError):
            pass
    return out


class Loopback:
    """Everything on 127.0.0.1, captured on lo (the standalone script's default)."""
    server_host = "127.0.0.1"
    iface = "lo"
    kind = "loopback"

    @staticmethod
    def client_cmd(cmd: list[str]) -> list[str]:
        return cmd

    @staticmethod
    def server_cmd(cmd: list[str]) -> list[str]:
        return cmd


def free_port(kind=socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Procs:
    """Every process we start; stopped by PID (its own process group) at the end."""

    def __init__(self):
        self.procs: list[tuple[str, subprocess.Popen, int]] = []

    def start(self, name, cmd, stop_sig=signal.SIGTERM, **kw) -> subprocess.Popen:
        p = subprocess.Popen(cmd, start_new_session=True, **kw)
        self.procs.append((name, p, stop_sig))
        return p

    def stop(self, p: subprocess.Popen, timeout=5.0) -> None:
        for i, (_name, q, sig) in enumerate(self.procs):
            if q is p:
                self._stop_one(q, sig, timeout)
                del self.procs[i]
                return

    @staticmethod
    def _stop_one(p, sig, timeout):
        if p.poll() is None:
            try:
                os.kill(p.pid, sig)
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)  # our child's own group (start_new_session)
                except ProcessLookupError:
                    pass
                p.wait()
            except ProcessLookupError:
                pass
        # leftovers of that process's group (e.g. Chromium helpers)
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def stop_all(self):
        while self.procs:
            name, p, sig = self.procs.pop()
            self._stop_one(p, sig, 5.0)


def wait_port(port: int, udp=False, proc=None, timeout=10.0, net=Loopback) -> None:
    """Wait until a socket listens on the port where the server runs (ss in the server's namespace)."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc is not None and proc.poll() is not None:
            die(f"server exited early (rc {proc.returncode})")
        r = subprocess.run(net.server_cmd(["ss", "-Hlun" if udp else "-Hltn", f"sport = :{port}"]),
                           capture_output=True, text=True)
        if r.stdout.strip():
            return
        time.sleep(0.1)
    die(f"nothing listening on port {port} after {timeout}s")


def wait_addr(ip: str, port: int, udp=False, proc=None, timeout=10.0, net=Loopback) -> None:
    """Wait until a socket listens on ip:port in the server's namespace."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc is not None and proc.poll() is not None:
            die(f"server exited early (rc {proc.returncode})")
        r = subprocess.run(net.server_cmd(["ss", "-Hlun" if udp else "-Hltn", "src", f"{ip}:{port}"]),
                           capture_output=True, text=True)
        if r.stdout.strip():
            return
        time.sleep(0.1)
    die(f"nothing listening on {ip}:{port} after {timeout}s")


def make_cert(d: Path, names: list[str] = (), ips: list[str] = ()) -> tuple[Path, Path, str]:
    """One self-signed certificate for every name the page's origins have (and the lab's
    addresses), so each origin's server presents a certificate for its name."""
    cert, key = d / "cert.pem", d / "key.pem"
    san = ",".join(["DNS:localhost", *(f"DNS:{n}" for n in names), "IP:127.0.0.1", "IP:10.77.0.2",
                    *(f"IP:{i}" for i in ips if i not in ("127.0.0.1", "10.77.0.2"))])
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "7", "-subj", "/CN=localhost",
                    "-addext", f"subjectAltName={san}"],
                   check=True, capture_output=True)
    der = subprocess.run(["openssl", "x509", "-in", str(cert), "-pubkey", "-noout"], check=True,
                         capture_output=True).stdout
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=der, check=True,
                         capture_output=True).stdout
    spki = base64.b64encode(hashlib.sha256(der).digest()).decode()
    return cert, key, spki


def nginx_conf(d: Path, site: Path, port: int, mode: str, cert: Path, key: Path, host="127.0.0.1",
               push: list[str] | None = None) -> Path:
    listen = {"h1": "ssl", "h2": "ssl http2", "h1c": ""}[mode]
    tls = (f"ssl_certificate {cert};\n    ssl_certificate_key {key};\n"
           "    ssl_protocols TLSv1.2 TLSv1.3;\n") if mode != "h1c" else ""
    conf = d / f"nginx-{mode}.conf"
    # server push (HTTP/2 only, nginx 1.22's http2_push): the listed paths go with the page's HTML
    # ("/" is served as /index.html by an internal redirect, which runs this location)
    pushes = "".join(f"http2_push {p};" for p in (push or []) if re.fullmatch(r"/[A-Za-z0-9._/-]*", p))
    push_loc = f"location = /index.html {{ {pushes} }}" if pushes and mode == "h2" else ""
    conf.write_text(f"""
user root;
worker_processes 1;
daemon off;
pid {d}/nginx-{mode}.pid;
error_log {d}/nginx-{mode}.error.log info;
events {{ worker_connections 64; }}
http {{
  types {{ text/html html; text/css css; application/javascript js; image/jpeg jpg;
          image/png png; application/json json; }}
  default_type application/octet-stream;
  log_format lab '$connection $connection_requests "$request" $status $body_bytes_sent $server_protocol';
  access_log {d}/nginx-{mode}.access.log lab;
  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fcgi;
  uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  sendfile off; gzip off; etag off; server_tokens off; keepalive_timeout 30;
  server {{
    listen {host}:{port} {listen};
    server_name localhost;
    {tls}
    root {site};
    index index.html;
    {push_loc}
  }}
}}
""")
    return conf


NGINX_TYPES = ("text/html html; text/css css; application/javascript js; image/jpeg jpg; image/png png; "
               "application/json json; image/gif gif; image/webp webp; image/svg+xml svg; image/x-icon ico; "
               "font/woff2 woff2; font/woff woff; text/plain txt; application/xml xml; application/octet-stream bin;")


def nginx_conf_multi(d: Path, site: Path, origins: dict[str, str], mode: str, cert: Path, key: Path,
                     push: list[str] | None = None, doc_host: str | None = None, port: int = 443) -> Path:
    """One nginx, one ``server`` per origin: its own address and name, its own directory
    (site/<host>), the one certificate that covers every name. Responses allow any origin
    (the page's fetches are credentialed CORS requests across its origins: the Origin is echoed)."""
    listen = {"h1": "ssl", "h2": "ssl http2"}[mode]
    conf = d / f"nginx-{mode}.conf"
    # credentialed CORS (the page's cross-origin fetches share the browser's credentialed connections)
    cors = "add_header Access-Control-Allow-Origin $http_origin always; add_header Access-Control-Allow-Credentials true always;"
    blocks = []
    for host, ip in origins.items():
        pushes = "".join(f"http2_push {p};" for p in (push or []) if re.fullmatch(r"/[A-Za-z0-9._/-]*", p))
        push_loc = f"location = /index.html {{ {pushes} {cors} }}" \
            if pushes and mode == "h2" and host == doc_host else ""
        blocks.append(f"""
  server {{
    listen {ip}:{port} {listen};
    server_name {host};
    ssl_certificate {cert};
    ssl_certificate_key {key};
    ssl_protocols TLSv1.2 TLSv1.3;
    root {site / host};
    index index.html;
    {cors}
    {push_loc}
  }}""")
    conf.write_text(f"""
user root;
worker_processes 1;
daemon off;
pid {d}/nginx-{mode}.pid;
error_log {d}/nginx-{mode}.error.log info;
events {{ worker_connections 512; }}
http {{
  types {{ {NGINX_TYPES} }}
  default_type application/octet-stream;
  log_format lab '$connection $connection_requests $server_name $server_addr "$request" $status $body_bytes_sent $server_protocol';
  access_log {d}/nginx-{mode}.access.log lab;
  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fcgi;
  uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  sendfile off; gzip off; etag off; server_tokens off; keepalive_timeout 30;
  {"".join(blocks)}
}}
""")
    return conf


def caddy_conf(d: Path, site: Path, origins: dict[str, str], cert: Path, key: Path, port: int = 443) -> Path:
    """Caddy (quic-go) serving HTTP/3 for every origin: one listener per origin's address, a
    route per host name to its directory, the lab's certificate, no admin endpoint, no
    automatic HTTPS, storage in the work directory."""
    routes = [{"match": [{"host": [h]}], "terminal": True, "handle": [
        {"handler": "headers", "response": {"set": {"Access-Control-Allow-Origin": ["{http.request.header.Origin}"],
                                                      "Access-Control-Allow-Credentials": ["true"], "Server": ["caddy (wirefall lab)"]}}},
        {"handler": "file_server", "root": str(site / h)}]} for h in origins]
    conf = {"admin": {"disabled": True}, "storage": {"module": "file_system", "root": str(d / "caddy-data")},
            "logging": {"logs": {"default": {"level": "ERROR", "writer": {"output": "file", "filename": str(d / "caddy.log")}}}},
            "apps": {"http": {"servers": {"lab": {
                "listen": [f"{ip}:{port}" for ip in dict.fromkeys(origins.values())], "protocols": ["h3"],
                "routes": routes, "automatic_https": {"disable": True},
                "tls_connection_policies": [{"certificate_selection": {"any_tag": ["lab"]}}],
                "logs": {"default_logger_name": "access"}}}},
                "tls": {"certificates": {"load_files": [{"certificate": str(cert), "key": str(key), "tags": ["lab"]}]}}}}
    conf["logging"]["logs"]["access"] = {"include": ["http.log.access.access"], "level": "INFO",
                                         "writer": {"output": "file", "filename": str(d / "caddy-access.log")}}
    conf["logging"]["logs"]["default"]["exclude"] = ["http.log.access.access"]
    p = d / "caddy.json"
    p.write_text(json.dumps(conf, indent=1))
    return p


H3_SERVERS = ("ngtcp2", "caddy", "aioquic")


def h3_server_kind(want: str = "auto") -> str:
    """The HTTP/3 server: ``want``, or the first installed of ngtcp2's example server
    (``gtlsserver``, Debian ngtcp2-server: C, answers Chromium's Initial in ~1 ms), Caddy (Go,
    quic-go 2.6.2: drops the second of two back-to-back client Initials, so Chromium's two-packet
    ClientHello waits for a retransmission, ~1.5 RTT) and aioquic (Python, scripts/lab/h3_server.py:
    ~10-40 ms per handshake on this host). docs/LAB.md has the measurements."""
    if want in H3_SERVERS:
        return want
    if shutil.which("gtlsserver"):
        return "ngtcp2"
    return "caddy" if shutil.which("caddy") else "aioquic"


def page_of(site: Path) -> dict:
    """The manifest of a page directory: its page.json (generate.py) or, for a page made
    elsewhere, the same-origin paths its index.html references (what the clients fetch)."""
    pj = site / "page.json"
    if pj.exists():
        return json.loads(pj.read_text())
    html = (site / "index.html").read_text(errors="replace")
    reqs = ["/"]
    for m in re.finditer(r'(?:href|src)="(/[^"]*)"|fetch\("(/[^"]*)"', html):
        p = m.group(1) or m.group(2)
        if p not in reqs:
            reqs.append(p)
    files = []
    for f in sorted(site.rglob("*")):
        if f.is_file():
            d = f.read_bytes()
            files.append({"path": "/" + f.relative_to(site).as_posix(), "bytes": len(d),
                          "sha256": hashlib.sha256(d).hexdigest()})
    return {"count": len(reqs) - 1, "seed": None, "requests": reqs, "files": files}


class Lab:
    def __init__(self, out: Path, work: Path, count: int, net=Loopback, site: Path | None = None,
                 procs: Procs | None = None, linger: float = 0.5, push: list[str] | None = None,
                 page_spec=None, h3: str = "auto"):
        self.out, self.work, self.count = out, work, count
        self.net = net
        self.linger = linger  # wait after the client ends, so the last FIN/CONNECTION_CLOSE is captured
        self.push = list(push or [])  # paths the HTTP/2 and SPDY servers push with the HTML
        self.procs = procs or Procs()
        self.h3 = h3_server_kind(h3)
        if page_spec is not None:  # lab/pages.py: a HAR's page or a built-in one, one directory per origin
            from wirefall.lab.pages import write_site

            self.site = work / "site"
            self.page = write_site(page_spec, self.site, jpeg=page._jpeg if page_spec.source == "builtin:jpeg" else None)
        elif site is None:
            self.site = work / "site"
            self.page = page.build(self.site, count)
        else:
            self.site = Path(site).resolve()
            self.page = page_of(self.site)
        # a page with origins (names): one network host each, names from the lab's DNS server, port 443
        self.origins: dict[str, str] = {}
        if self.page.get("origins"):
            from wirefall.lab.net import origin_ip

            self.origins = {h: origin_ip(i) for i, h in enumerate(self.page["origins"])}
        self.cert, self.key, self.spki = make_cert(work, list(self.origins), list(self.origins.values()))

    @property
    def doc_host(self) -> str:
        return self.page["origins"][0]

    # ------------------------------------------------------------------ several origins
    def prepare_net(self) -> None:
        """Each origin's address on the server side and the client's resolver (once per link)."""
        if not self.origins:
            return
        if not hasattr(self.net, "add_hosts"):
            die("a page with several origins needs the lab's network namespaces (wirefall lab)")
        from wirefall.lab.dns import DNS_IP

        if DNS_IP not in self.net.extra_hosts:
            self.net.add_hosts(list(self.origins.values()), DNS_IP)

    def start_dns(self, name: str) -> subprocess.Popen:
        """dnsmasq in the server namespace answering the page's names (lab/dns.py)."""
        from wirefall.lab.dns import DNS_IP, dnsmasq_cmd, dnsmasq_conf

        conf = self.work / "dnsmasq.conf"
        conf.write_text(dnsmasq_conf(self.origins, DNS_IP, log=str(self.work / f"{name}.dns.log")))
        p = self.procs.start("dnsmasq", self.net.server_cmd(dnsmasq_cmd(conf, self.work / "dnsmasq.pid")),
                             stdout=open(self.work / "dnsmasq.out", "w"), stderr=subprocess.STDOUT)
        wait_addr(DNS_IP, 53, udp=True, proc=p, net=self.net)
        return p

    def stop_dns(self, name: str, p: subprocess.Popen) -> str | None:
        self.procs.stop(p)
        log = self.work / f"{name}.dns.log"
        if log.exists():
            shutil.copy(log, self.out / log.name)
            return log.name
        return None

    # ------------------------------------------------------------------ capture
    def tcpdump(self, name: str, port: int, udp: bool) -> tuple[subprocess.Popen, Path]:
        pcap = self.work / f"{name}.pcap"
        err = open(self.work / f"{name}.tcpdump.log", "w+")
        expr = ["udp" if udp else "tcp", "port", str(port)]
        if self.origins:  # and the DNS lookups, as on the web
            expr = ["(", *expr, ")", "or", "udp", "port", "53"]
        p = self.procs.start("tcpdump", self.net.client_cmd(
                             ["tcpdump", "-i", self.net.iface, "--immediate-mode", "-B", "131072", "-U", "-s", "0",
                              "-w", str(pcap), *expr]),
                             stop_sig=signal.SIGINT, stdout=subprocess.DEVNULL, stderr=err)
        t0 = time.time()
        while time.time() - t0 < 10:
            err.seek(0)
            if "listening on" in err.read():
                return p, pcap
            if p.poll() is not None:
                die(f"tcpdump exited: {(self.work / f'{name}.tcpdump.log').read_text()}")
            time.sleep(0.05)
        die("tcpdump did not start listening")

    def finish_capture(self, name: str, td: subprocess.Popen, pcap: Path) -> Path:
        time.sleep(self.linger)  # let the last FIN/CONNECTION_CLOSE reach the capture
        self.procs.stop(td)
        # tcpdump's exit report: nothing may be dropped. (On lo "received by filter" counts each
        # packet twice, outgoing and incoming copies; libpcap keeps one, so it is not compared.)
        log = (self.work / f"{name}.tcpdump.log").read_text()
        m = {k: int(v) for v, k in re.findall(r"(\d+) packets? (captured|received by filter|dropped by kernel)", log)}
        if "captured" not in m or m.get("dropped by kernel", 0):
            die(f"{name}: tcpdump lost packets: {m}")
        dst = self.out / f"{name}.pcapng"
        subprocess.run(["editcap", "-F", "pcapng", str(pcap), str(dst)], check=True)
        return dst

    # ------------------------------------------------------------------ clients
    def chromium(self, name: str, url: str, extra: list[str]) -> dict:
        keys = self.out / f"{name}.keys"
        keys.unlink(missing_ok=True)
        netlog = self.work / f"{name}.netlog.json"
        profile = Path(tempfile.mkdtemp(prefix="chromium-", dir=self.work))
        env = dict(os.environ, SSLKEYLOGFILE=str(keys))
        if self.origins:
            # only the page's names are looked up (in the lab's DNS, so in the capture): Chromium's own
            # background lookups at start-up (clients2.google.com, update.googleapis.com) would start
            # the capture a second before the page and count Chromium's start-up as page load time
            extra = [*extra, "--host-resolver-rules=MAP * ~NOTFOUND, " + ", ".join(f"EXCLUDE {h}" for h in self.origins)]
        cmd = self.net.client_cmd(["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                                   f"--log-net-log={netlog}", *extra, "--dump-dom", url])
        outf = open(self.work / f"{name}.dom.html", "w")
        errf = open(self.work / f"{name}.chromium.log", "w")
        p = self.procs.start("chromium", cmd, stdout=outf, stderr=errf, env=env)
        try:
            p.wait(90)
        except subprocess.TimeoutExpired:
            self.procs.stop(p)
            die(f"{name}: chromium did not finish in 90 s")
        self.procs.stop(p)  # helpers left in its group, if any
        shutil.rmtree(profile, ignore_errors=True)
        dom = (self.work / f"{name}.dom.html").read_text()
        if ("wirefall test page" if self.page.get("seed") is not None else "<html") not in dom:
            die(f"{name}: chromium did not load the page (see {self.work / (name + '.chromium.log')})")
        gz = self.out / f"{name}.netlog.json.gz"
        with open(netlog, "rb") as f, gzip.GzipFile(gz, "wb", mtime=0) as g:
            shutil.copyfileobj(f, g)
        netlog.unlink(missing_ok=True)
        return {"client": "chromium", "command": " ".join(cmd[:-2] + ["--dump-dom", url]),
                "keys": keys.name, "netlog": gz.name, "dom_has_config": bool(re.search(r"features: \d+", dom))}

    # ------------------------------------------------------------------ protocols
    def run_nginx_chromium(self, proto: str) -> dict:
        name = f"page-{proto}"
        port = free_port()
        conf = nginx_conf(self.work, self.site, port, proto, self.cert, self.key, self.net.server_host, push=self.push)
        (self.work / f"nginx-{proto}.access.log").unlink(missing_ok=True)
        srv = self.procs.start("nginx", self.net.server_cmd(
                               ["nginx", "-c", str(conf), "-e", str(self.work / f"nginx-{proto}.stderr")]),
                               stop_sig=signal.SIGQUIT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(port, proc=srv, net=self.net)
        td, pcap = self.tcpdump(name, port, udp=False)
        info = self.chromium(name, f"https://{self.net.server_host}:{port}/", [])
        cap = self.finish_capture(name, td, pcap)
        self.procs.stop(srv)
        shutil.copy(self.work / f"nginx-{proto}.access.log", self.out / f"{name}.server.log")
        return {**info, "server": "nginx", "port": port, "capture": cap.name, "server_log": f"{name}.server.log"}

    def run_h3(self) -> dict:
        name = "page-h3"
        port = free_port(socket.SOCK_DGRAM)
        slog = self.out / f"{name}.server.log"
        slog.unlink(missing_ok=True)
        srv_keys = self.work / "h3-server.keys"
        srv_keys.unlink(missing_ok=True)
        srv = self.procs.start("h3_server", self.net.server_cmd(
                               [sys.executable, str(HERE / "h3_server.py"), "--root", str(self.site),
                                "--cert", str(self.cert), "--key", str(self.key), "--port", str(port),
                                "--host", self.net.server_host,
                                "--secrets-log", str(srv_keys), "--request-log", str(slog)]),
                               stdout=open(self.work / "h3_server.log", "w"), stderr=subprocess.STDOUT)
        wait_port(port, udp=True, proc=srv, net=self.net)
        td, pcap = self.tcpdump(name, port, udp=True)
        origin = f"{self.net.server_host}:{port}"
        info = self.chromium(name, f"https://{origin}/", [
            "--enable-quic", f"--origin-to-force-quic-on={origin}",
            f"--ignore-certificate-errors-spki-list={self.spki}"])
        cap = self.finish_capture(name, td, pcap)
        self.procs.stop(srv)
        keys = self.out / info["keys"]
        if not keys.exists() or "CLIENT_TRAFFIC_SECRET_0" not in keys.read_text():
            # Chromium did not log QUIC secrets: fall back to the server's log (same secrets)
            shutil.copy(srv_keys, keys)
            info["keys_from"] = "aioquic server secrets_log_file"
        return {**info, "server": "scripts/lab/h3_server.py (aioquic)", "port": port, "capture": cap.name,
                "server_log": slog.name}

    def run_h1c(self) -> dict:
        name = "page-h1c"
        port = free_port()
        conf = nginx_conf(self.work, self.site, port, "h1c", self.cert, self.key, self.net.server_host)
        (self.work / "nginx-h1c.access.log").unlink(missing_ok=True)
        srv = self.procs.start("nginx", self.net.server_cmd(
                               ["nginx", "-c", str(conf), "-e", str(self.work / "nginx-h1c.stderr")]),
                               stop_sig=signal.SIGQUIT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(port, proc=srv, net=self.net)
        td, pcap = self.tcpdump(name, port, udp=False)
        urls = [f"http://{self.net.server_host}:{port}{p}" for p in self.page["requests"]]
        cmd = ["curl", "-sS", "--http1.1", "-w", "%{http_code} %{url_effective}\\n"]
        for u in urls:  # page first, then its resources, one after another on one keep-alive connection
            cmd += [u, "-o", "/dev/null"]
        p = self.procs.start("curl", self.net.client_cmd(cmd), stdout=open(self.work / "curl.log", "w"),
                             stderr=subprocess.STDOUT)
        p.wait(60)
        self.procs.stop(p)
        cap = self.finish_capture(name, td, pcap)
        self.procs.stop(srv)
        shutil.copy(self.work / "nginx-h1c.access.log", self.out / f"{name}.server.log")
        return {"client": "curl", "command": " ".join(cmd), "server": "nginx", "port": port,
                "capture": cap.name, "server_log": f"{name}.server.log"}

    def run_h2c(self) -> dict:
        name = "page-h2c"
        port = free_port()
        srv = self.procs.start("nghttpd", self.net.server_cmd(
                               ["nghttpd", "--no-tls", "-a", self.net.server_host, "-d", str(self.site), str(port)]),
                               stdout=open(self.work / "nghttpd.log", "w"), stderr=subprocess.STDOUT)
        wait_port(port, proc=srv, net=self.net)
        td, pcap = self.tcpdump(name, port, udp=False)
        cmd = ["nghttp", "-ans", f"http://{self.net.server_host}:{port}/index.html"]
        log = self.out / f"{name}.client.log"
        p = self.procs.start("nghttp", self.net.client_cmd(cmd), stdout=open(log, "w"), stderr=subprocess.STDOUT)
        p.wait(60)
        self.procs.stop(p)
        cap = self.finish_capture(name, td, pcap)
        self.procs.stop(srv)
        return {"client": "nghttp", "command": " ".join(cmd), "server": "nghttpd --no-tls", "port": port,
                "capture": cap.name, "client_log": log.name,
                "tshark": f"-d tcp.port=={port},http2"}  # prior-knowledge h2c on a random port

    def run_spdy(self) -> dict:
        """SPDY/3.1 over TLS (ALPN spdy/3.1): npm spdy server serving the page's files, the
        spdy-transport client loading it like a browser (scripts/spdy/client.js --page 1);
        key log from `node --tls-keylog`, each side's header blocks logged by scripts/spdy/hooks.js."""
        name = "page-spdy"
        port = free_port()
        keys = self.out / f"{name}.keys"
        slog, clog = self.out / f"{name}.server.jsonl", self.out / f"{name}.client.jsonl"
        for f in (keys, slog, clog):
            f.unlink(missing_ok=True)
        srv = self.procs.start("spdy-server", self.net.server_cmd(
                               ["node", "server.js", "--root", str(self.site), "--host", self.net.server_host,
                                "--port", str(port), "--version", "3.1", "--key", str(self.key), "--cert", str(self.cert),
                                "--log", str(slog), *(["--push", ",".join(self.push)] if self.push else [])]),
                               cwd=SPDY_DIR, stdout=open(self.work / "spdy-server.log", "w"), stderr=subprocess.STDOUT)
        wait_port(port, proc=srv, net=self.net)
        td, pcap = self.tcpdump(name, port, udp=False)
        cmd = ["node", f"--tls-keylog={keys}", "client.js", "--host", self.net.server_host, "--port", str(port),
               "--version", "3.1", "--tls", "1", "--page", "1", "--log", str(clog)]
        out = self.work / f"{name}.client.out"
        p = self.procs.start("spdy-client", self.net.client_cmd(cmd), cwd=SPDY_DIR, stdout=open(out, "w"),
                             stderr=subprocess.STDOUT)
        try:
            p.wait(120)
        except subprocess.TimeoutExpired:
            self.procs.stop(p)
            die(f"{name}: spdy client did not finish in 120 s")
        self.procs.stop(p)
        cap = self.finish_capture(name, td, pcap)
        self.procs.stop(srv)
        loaded = []
        for ln in out.read_text().splitlines():
            try:
                loaded.append(json.loads(ln))
            except ValueError:
                pass
        # a push's status is not in spdy-transport's push object: a push counts when its body is the
        # file's, byte for byte in number (its :status is checked from the capture by the lab)
        size = {f["path"]: f["bytes"] for f in self.page.get("files", [])}
        got = sorted(r["path"] for r in loaded if r.get("status") == 200
                     or (r.get("pushed") and r.get("path") in self.push and r.get("bytes") == size.get(r["path"])))
        shutil.copy(out, self.out / f"{name}.client.log")
        if p.returncode or got != sorted(self.page["requests"]):
            die(f"{name}: spdy client did not load the page (rc {p.returncode}; see {self.out / (name + '.client.log')})")
        return {"client": "scripts/spdy/client.js (spdy-transport)", "command": " ".join(cmd),
                "server": "scripts/spdy/server.js --root (npm spdy)", "port": port, "capture": cap.name,
                "keys": keys.name, "server_log": slog.name, "client_log": f"{name}.client.log",
                "header_logs": [clog.name, slog.name]}

    # ------------------------------------------------------------------ pages with several origins
    def quic_origins(self, port: int) -> str:
        return ",".join(f"{h}:{port}" for h in self.origins)

    def multi_nginx_chromium(self, proto: str) -> dict:
        name = f"page-{proto}"
        conf = nginx_conf_multi(self.work, self.site, self.origins, proto, self.cert, self.key, push=self.push,
                                doc_host=self.doc_host)
        (self.work / f"nginx-{proto}.access.log").unlink(missing_ok=True)
        dns = self.start_dns(name)
        srv = self.procs.start("nginx", self.net.server_cmd(
                               ["nginx", "-c", str(conf), "-e", str(self.work / f"nginx-{proto}.stderr")]),
                               stop_sig=signal.SIGQUIT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for ip in dict.fromkeys(self.origins.values()):
            wait_addr(ip, 443, proc=srv, net=self.net)
        td, pcap = self.tcpdump(name, 443, udp=False)
        info = self.chromium(name, f"https://{self.doc_host}/", [])
        cap = self.finish_capture(name, td, pcap)
        self.procs.stop(srv)
        dns_log = self.stop_dns(name, dns)
        shutil.copy(self.work / f"nginx-{proto}.access.log", self.out / f"{name}.server.log")
        return {**info, "server": "nginx", "port": 443, "capture": cap.name, "server_log": f"{name}.server.log",
                "dns_log": dns_log, "origins": self.origins}

    def multi_spdy(self) -> dict:
        """One npm spdy server per origin (its own address), the page loader of
        scripts/lab/spdy_page_client.js: one connection per origin, names from the lab's DNS."""
        name = "page-spdy"
        keys = self.out / f"{name}.keys"
        clog = self.out / f"{name}.client.jsonl"
        for f in (keys, clog):
            f.unlink(missing_ok=True)
        dns = self.start_dns(name)
        slogs = []
        for i, (host, ip) in enumerate(self.origins.items()):
            slog = self.out / f"{name}.server-{i}.jsonl"
            slog.unlink(missing_ok=True)
            push = self.push if host == self.doc_host else []
            srv = self.procs.start(f"spdy-server-{i}", self.net.server_cmd(
                                   ["node", "server.js", "--root", str(self.site / host), "--host", ip, "--port", "443",
                                    "--version", "3.1", "--key", str(self.key), "--cert", str(self.cert),
                                    "--log", str(slog), *(["--push", ",".join(push)] if push else [])]),
                                   cwd=SPDY_DIR, stdout=open(self.work / f"spdy-server-{i}.log", "w"), stderr=subprocess.STDOUT)
            wait_addr(ip, 443, proc=srv, net=self.net)
            slogs.append(slog.name)
        td, pcap = self.tcpdump(name, 443, udp=False)
        cmd = ["node", f"--tls-keylog={keys}", str(HERE / "spdy_page_client.js"), "--url", f"https://{self.doc_host}/",
               "--version", "3.1", "--log", str(clog)]
        out = self.work / f"{name}.client.out"
        p = self.procs.start("spdy-client", self.net.client_cmd(cmd), cwd=SPDY_DIR, stdout=open(out, "w"),
                             stderr=subprocess.STDOUT)
        try:
            p.wait(180)
        except subprocess.TimeoutExpired:
            self.procs.stop(p)
            die(f"{name}: spdy client did not finish in 180 s")
        self.procs.stop(p)
        cap = self.finish_capture(name, td, pcap)
        for q in [q for n_, q, _ in list(self.procs.procs) if n_.startswith("spdy-server-")]:
            self.procs.stop(q)
        dns_log = self.stop_dns(name, dns)
        loaded = []
        for ln in out.read_text().splitlines():
            try:
                loaded.append(json.loads(ln))
            except ValueError:
                pass
        size = {f["url"]: f["bytes"] for f in self.page.get("files", [])}
        doc_push = {f"https://{self.doc_host}{x}" for x in self.push}
        got = sorted({r["url"] for r in loaded if r.get("status") == 200
                      or (r.get("pushed") and r.get("url") in doc_push and r.get("bytes") == size.get(r["url"]))})
        shutil.copy(out, self.out / f"{name}.client.log")
        if p.returncode or got != sorted(self.page["requests"]):
            die(f"{name}: spdy client did not load the page (rc {p.returncode}; see {self.out / (name + '.client.log')})")
        return {"client": "scripts/lab/spdy_page_client.js (spdy-transport)", "command": " ".join(cmd),
                "server": "scripts/spdy/server.js --root (npm spdy), one per origin", "port": 443, "capture": cap.name,
                "keys": keys.name, "server_log": slogs[0], "client_log": f"{name}.client.log",
                "header_logs": [clog.name, *slogs], "dns_log": dns_log, "origins": self.origins}

    def warm_h3(self, targets: list[tuple[str, str, int]]) -> None:
        """One QUIC handshake per server before the capture (aioquic client, outside the capture),
        so the load does not pay the server process's first-handshake start-up (Go's crypto and
        TLS set-up on first use: ~40 ms measured on Caddy's first Initial, ~10 ms after)."""
        p = self.procs.start("h3-warm", self.net.client_cmd(
            [sys.executable, str(HERE / "h3_warm.py"), *[f"{ip}:{port}:{sni}" for ip, sni, port in targets]]),
            stdout=open(self.work / "h3-warm.log", "w"), stderr=subprocess.STDOUT)
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            pass
        self.procs.stop(p)
        shutil.copy(self.work / "h3-warm.log", self.out / "page-h3.warm.log")

    def run_h3_caddy(self) -> dict:
        name = "page-h3"
        multi = bool(self.origins)
        port = 443 if multi else free_port(socket.SOCK_DGRAM)
        origins = self.origins or {self.net.server_host: self.net.server_host}
        conf = caddy_conf(self.work, self.site, origins if multi else {}, self.cert, self.key, port=port)
        if not multi:  # the default page: one route for any host, on the server's address
            c = json.loads(conf.read_text())
            srv_ = c["apps"]["http"]["servers"]["lab"]
            srv_["listen"] = [f"{self.net.server_host}:{port}"]
            srv_["routes"] = [{"handle": [{"handler": "headers", "response": {"set": {"Server": ["caddy (wirefall lab)"]}}},
                                          {"handler": "file_server", "root": str(self.site)}]}]
            conf.write_text(json.dumps(c, indent=1))
        dns = self.start_dns(name) if multi else None
        env = dict(os.environ, XDG_CONFIG_HOME=str(self.work / "caddy-config"), XDG_DATA_HOME=str(self.work / "caddy-data"),
                   HOME=str(self.work))
        srv = self.procs.start("caddy", self.net.server_cmd(["caddy", "run", "--config", str(conf)]),
                               stdout=open(self.work / "caddy.out", "w"), stderr=subprocess.STDOUT, env=env)
        for ip in dict.fromkeys(origins.values()):
            wait_addr(ip, port, udp=True, proc=srv, net=self.net)
        self.warm_h3([(ip, h if multi else "localhost", port) for h, ip in origins.items()])
        td, pcap = self.tcpdump(name, port, udp=True)
        quic_on = self.quic_origins(port) if multi else f"{self.net.server_host}:{port}"
        url = f"https://{self.doc_host}/" if multi else f"https://{self.net.server_host}:{port}/"
        info = self.chromium(name, url, ["--enable-quic", f"--origin-to-force-quic-on={quic_on}",
                                         f"--ignore-certificate-errors-spki-list={self.spki}"])
        cap = self.finish_capture(name, td, pcap)
        self.procs.stop(srv)
        dns_log = self.stop_dns(name, dns) if dns else None
        slog = self.out / f"{name}.server.log"
        if (self.work / "caddy-access.log").exists():
            shutil.copy(self.work / "caddy-access.log", slog)
            (self.work / "caddy-access.log").unlink()
        return {**info, "server": "caddy (quic-go)", "port": port, "capture": cap.name,
                "server_log": slog.name if slog.exists() else None, "dns_log": dns_log,
                **({"origins": self.origins} if multi else {}), "warmed": True}

    def run_h3_ngtcp2(self) -> dict:
        """ngtcp2's example HTTP/3 server (gtlsserver: GnuTLS, nghttp3), one per origin's address,
        serving that origin's directory. It sends no CORS headers: a page's cross-origin preloads
        (lab/pages.py's \"other\" resources) are fetched and answered, then refused by the browser."""
        name = "page-h3"
        multi = bool(self.origins)
        port = 443 if multi else free_port(socket.SOCK_DGRAM)
        roots = {ip: self.site / h for h, ip in self.origins.items()} if multi else {self.net.server_host: self.site}
        dns = self.start_dns(name) if multi else None
        mime = self.work / "mime.types"
        from wirefall.lab.pages import EXT_TYPES

        mime.write_text("".join(f"{t} {e.lstrip('.')}\n" for e, t in EXT_TYPES.items()))
        for i, (ip, root) in enumerate(roots.items()):
            srv = self.procs.start(f"h3_server-{i}", self.net.server_cmd(
                                   ["gtlsserver", "-q", "-d", str(root), f"--mime-types-file={mime}", ip, str(port),
                                    str(self.key), str(self.cert)]),
                                   stdout=open(self.work / f"gtlsserver-{i}.log", "w"), stderr=subprocess.STDOUT)
            wait_addr(ip, port, udp=True, proc=srv, net=self.net)
        self.warm_h3([(ip, h, port) for h, ip in self.origins.items()] if multi else [(self.net.server_host, "localhost", port)])
        td, pcap = self.tcpdump(name, port, udp=True)
        quic_on = self.quic_origins(port) if multi else f"{self.net.server_host}:{port}"
        url = f"https://{self.doc_host}/" if multi else f"https://{self.net.server_host}:{port}/"
        info = self.chromium(name, url, ["--enable-quic", f"--origin-to-force-quic-on={quic_on}",
                                         f"--ignore-certificate-errors-spki-list={self.spki}"])
        cap = self.finish_capture(name, td, pcap)
        for q in [q for n_, q, _ in list(self.procs.procs) if n_.startswith("h3_server-")]:
            self.procs.stop(q)
        dns_log = self.stop_dns(name, dns) if dns else None
        return {**info, "server": "ngtcp2 gtlsserver" + (", one per origin" if multi else ""), "port": port,
                "capture": cap.name, "dns_log": dns_log, **({"origins": self.origins} if multi else {}), "warmed": True}

    def multi_h3_aioquic(self) -> dict:
        name = "page-h3"
        dns = self.start_dns(name)
        slog = self.out / f"{name}.server.log"
        slog.unlink(missing_ok=True)
        for i, (host, ip) in enumerate(self.origins.items()):
            srv = self.procs.start(f"h3_server-{i}", self.net.server_cmd(
                                   [sys.executable, str(HERE / "h3_server.py"), "--root", str(self.site / host),
                                    "--cert", str(self.cert), "--key", str(self.key), "--port", "443", "--host", ip,
                                    "--request-log", str(slog)]),
                                   stdout=open(self.work / f"h3_server-{i}.log", "w"), stderr=subprocess.STDOUT)
            wait_addr(ip, 443, udp=True, proc=srv, net=self.net)
        self.warm_h3([(ip, h, 443) for h, ip in self.origins.items()])
        td, pcap = self.tcpdump(name, 443, udp=True)
        info = self.chromium(name, f"https://{self.doc_host}/", [
            "--enable-quic", f"--origin-to-force-quic-on={self.quic_origins(443)}",
            f"--ignore-certificate-errors-spki-list={self.spki}"])
        cap = self.finish_capture(name, td, pcap)
        for q in [q for n_, q, _ in list(self.procs.procs) if n_.startswith("h3_server-")]:
            self.procs.stop(q)
        dns_log = self.stop_dns(name, dns)
        return {**info, "server": "scripts/lab/h3_server.py (aioquic), one per origin", "port": 443, "capture": cap.name,
                "server_log": slog.name, "dns_log": dns_log, "origins": self.origins, "warmed": True}

    def run(self, proto: str) -> dict:
        self.prepare_net()
        if self.origins and proto not in ("h1", "h2", "h3", "spdy"):
            die(f"{proto}: a page with several origins is served over h1, h2, h3 and spdy only")
        if self.origins and proto == "spdy":
            r = self.multi_spdy()
        elif self.origins and proto in ("h1", "h2"):
            r = self.multi_nginx_chromium(proto)
        elif proto == "h3" and self.h3 == "ngtcp2":
            r = self.run_h3_ngtcp2()
        elif proto == "h3" and self.h3 == "caddy":
            r = self.run_h3_caddy()
        elif self.origins and proto == "h3":
            r = self.multi_h3_aioquic()
        elif proto == "spdy":
            r = self.run_spdy()
        elif proto in ("h1", "h2"):
            r = self.run_nginx_chromium(proto)
        elif proto == "h3":
            r = self.run_h3()
        elif proto == "h1c":
            r = self.run_h1c()
        else:
            r = self.run_h2c()
        cap = self.out / r["capture"]
        r.update(protocol=proto, capture_bytes=cap.stat().st_size)
        return r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Capture real clients loading the lab test page")
    ap.add_argument("-o", "--out", type=Path, required=True)
    ap.add_argument("--protocols", default="h2,h1,h3", help="comma list of h1,h2,h3,h1c,h2c (default h2,h1,h3)")
    ap.add_argument("--count", type=int, default=12, help="sub-resources on the page (default 12)")
    ap.add_argument("--keep-workdir", action="store_true")
    a = ap.parse_args(argv)
    protos = [p.strip() for p in a.protocols.split(",") if p.strip()]
    bad = [p for p in protos if p not in NEEDS]
    if bad:
        die(f"unknown protocol(s) {bad}; choose from {list(NEEDS)}")
    tools = check_tools(protos)
    a.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="wirefall-lab-"))
    os.chmod(work, 0o755)

    def on_signal(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)  # also when started in the background (SIGINT ignored)
    lab = None
    manifest_path = a.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    try:
        lab = Lab(a.out, work, a.count)
        page_info = {k: lab.page[k] for k in ("count", "seed", "requests", "files")}
        if manifest.get("page") != page_info:  # earlier runs in OUT served another page: start afresh
            manifest = {}
        manifest["page"] = page_info
        manifest.setdefault("tools", {}).update(tool_versions(tools))
        manifest["host_kernel"] = os.uname().release
        manifest.setdefault("runs", {})
        for proto in protos:
            print(f"[{proto}] ...", flush=True)
            r = lab.run(proto)
            r["made"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            manifest["runs"][proto] = r
            print(f"[{proto}] {r['capture']} {r['capture_bytes']} bytes", flush=True)
            manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    except KeyboardInterrupt:
        print("interrupted; stopping processes", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the clean-up short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if lab is not None:
            lab.procs.stop_all()
        if a.keep_workdir:
            print(f"workdir kept: {work}", file=sys.stderr)
        else:
            # a signal landing inside Popen() after fork leaves a short-lived helper (openssl, cjpeg)
            # we hold no handle to; it may still write into the workdir, so remove it until it stays gone
            for _ in range(30):
                shutil.rmtree(work, ignore_errors=True)
                time.sleep(0.1)
                if not work.exists():
                    break
    return 0


if __name__ == "__main__":
    sys.exit(main())
