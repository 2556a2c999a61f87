"""Network conditions for ``wirefall lab``: two network namespaces joined by a link with set
RTT, loss and rate, and a check that the conditions are in force.

This kernel has no ``netem`` (NET_SCH_NETEM is not built), so delay and loss come from a small
userspace relay: it owns one TUN device in each namespace and copies IP packets between them
through a ``DelayLine`` per direction (one-way delay RTT/2, independent random loss drawn from
a seeded RNG, or bursty), and with a rate a bottleneck per direction (the downlink's and the
uplink's own rate, a drop-tail queue of a set number of packets or milliseconds, e.g. one BDP).
The bottleneck is in the relay, not a qdisc on an end's egress: a local qdisc pushes back on the
sender's TCP (TSQ, NET_XMIT_CN) instead of queueing and dropping as a router does, and tbf's queue
is set in bytes/latency of its own. With no delay, loss or rate the namespaces are joined by a
plain veth pair instead (no relay).
Either way both links have MTU 1500 and segmentation offloads off, so the capture shows the
packets a real network would carry.

    client ns  wf-lab-c-<pid>: <link>  10.77.0.1  (browser / spdy client, tcpdump)
    server ns  wf-lab-s-<pid>: <link>  10.77.0.2  (nginx, node spdy, aioquic)

Entry points run as child processes (``python -m lab.net relay|echo|probe ...``) so
that the lab stops each by PID. Nothing here touches any interface outside the lab's own
namespaces (only the TUN devices, which are created in the root namespace and moved at once).
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import random
import selectors
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time
from collections import deque

CLIENT_IP, SERVER_IP = "10.77.0.1", "10.77.0.2"
HOSTS_NET = "10.77.0.0/24"   # a page's origins: SERVER_IP, then origin_ip(i); the DNS server at .53


def origin_ip(i: int) -> str:
    """The address of a page's i-th origin (0: SERVER_IP, where the probes measure the link)."""
    if i == 0:
        return SERVER_IP
    if not 1 <= i <= 150:
        raise ValueError("at most 151 origins per page")
    return f"10.77.0.{100 + i}"
MTU = 1500
QUEUE_LIMIT = 4096           # packets in flight per direction in the relay (tail drop beyond)
DEFAULT_BUFFER = "64p"       # a rate-limited link's queue when --buffer is not given
TUNSETIFF, IFF_TUN, IFF_NO_PI = 0x400454CA, 0x0001, 0x1000
PROBE_PORT = 9


# ------------------------------------------------------------------ relay core (pure, unit-tested)

class DelayLine:
    """One direction of the relay: a loss model, then (with a rate) a bottleneck with a bounded
    drop-tail queue, then the propagation delay.

    - loss: each packet offered draws once from the seeded RNG (so the drop pattern depends only on
      the seed and the packet's index). Independent (Bernoulli, probability ``loss``) or, with
      ``burst`` > 1, bursty: a two-state Gilbert chain (every packet lost in the bad state, none in
      the good one) whose stationary loss is ``loss`` and whose mean loss burst is ``burst``
      packets (P(good→bad) = loss / (burst·(1 − loss)), P(bad→good) = 1 / burst);
    - rate (bit/s): packets leave the bottleneck one after the other, each taking len·8/rate; a
      packet waits behind those admitted before it. The queue (packets admitted and not yet fully
      sent, the one being sent included) holds at most ``limit`` packets and, with ``limit_s``,
      only what the link sends in ``limit_s`` seconds: a packet whose wait plus its own
      transmission would exceed ``limit_s`` is dropped (tail drop, ``overflow``), unless the queue
      is empty. Buffer = BDP is ``limit_s`` = RTT (rate × RTT bytes drain in one RTT);
    - delay: a packet leaves at (end of its transmission, or arrival without a rate) + ``delay``.
      Without a rate ``limit`` bounds the packets in flight.

    Packets come out in the order they went in (the delay is constant, transmission ends increase).
    """

    def __init__(self, delay: float, loss: float, seed: int, limit: int = QUEUE_LIMIT,
                 rate: float | None = None, limit_s: float | None = None, burst: float | None = None):
        if not 0.0 <= loss < 1.0:
            raise ValueError("loss must be in [0, 1)")
        if rate is not None and rate <= 0:
            raise ValueError("rate must be > 0 bit/s")
        if burst is not None and burst < 1:
            raise ValueError("mean loss burst must be >= 1 packet")
        if limit < 1 or (limit_s is not None and limit_s < 0):
            raise ValueError("queue limit must be >= 1 packet and >= 0 s")
        self.delay, self.loss, self.limit = max(0.0, delay), loss, limit
        self.rate, self.limit_s = rate, limit_s
        self.burst = burst if burst and burst > 1 and loss > 0 else None
        if self.burst:
            self.p_gb, self.p_bg = loss / (self.burst * (1 - loss)), 1 / self.burst
        self.bad = False
        self.rng = random.Random(seed)
        self.q: deque[tuple[float, bytes]] = deque()
        self.backlog: deque[float] = deque()  # transmission ends of packets in the bottleneck queue
        self.tx_free = 0.0                    # when the bottleneck has sent all it admitted
        self.offered = self.dropped = self.overflow = self.delivered = 0
        self.bytes_delivered = 0
        self.reset_peaks()

    def reset_peaks(self) -> None:
        """Peaks since the last call (the lab reads them per page load)."""
        self.max_queue = 0          # packets in the bottleneck queue, the arriving one included
        self.max_wait = 0.0         # s a packet waited before its transmission began
        self.wait_sum, self.admitted = 0.0, 0

    def _lost(self) -> bool:
        u = self.rng.random()
        if self.burst is None:
            return u < self.loss
        if self.bad:
            self.bad = u >= self.p_bg
        else:
            self.bad = u < self.p_gb
        return self.bad

    def offer(self, now: float, pkt: bytes) -> bool:
        self.offered += 1
        if self._lost():
            self.dropped += 1
            return False
        if self.rate is None:
            if len(self.q) >= self.limit:
                self.overflow += 1
                return False
            self.q.append((now + self.delay, pkt))
            return True
        while self.backlog and self.backlog[0] <= now:
            self.backlog.popleft()
        tx = len(pkt) * 8 / self.rate
        start = max(now, self.tx_free)
        wait = start - now
        if self.backlog and (len(self.backlog) >= self.limit
                             or (self.limit_s is not None and wait + tx > self.limit_s + 1e-9)):
            self.overflow += 1
            return False
        self.tx_free = start + tx
        self.backlog.append(self.tx_free)
        self.max_queue = max(self.max_queue, len(self.backlog))
        self.max_wait = max(self.max_wait, wait)
        self.wait_sum += wait
        self.admitted += 1
        self.q.append((self.tx_free + self.delay, pkt))
        return True

    def next_due(self) -> float | None:
        return self.q[0][0] if self.q else None

    def due(self, now: float) -> list[bytes]:
        out = []
        while self.q and self.q[0][0] <= now:
            out.append(self.q.popleft()[1])
        self.delivered += len(out)
        self.bytes_delivered += sum(len(p) for p in out)
        return out

    def stats(self) -> dict:
        return {"offered": self.offered, "dropped": self.dropped, "overflow": self.overflow,
                "delivered": self.delivered, "queued": len(self.q)}

    def peaks(self) -> dict:
        return {"max_queue_packets": self.max_queue, "max_wait_ms": round(1000 * self.max_wait, 3),
                "mean_wait_ms": round(1000 * self.wait_sum / self.admitted, 3) if self.admitted else None,
                "bytes_delivered": self.bytes_delivered}


def parse_buffer(spec: str | None) -> tuple[str, float] | None:
    """``--buffer``: ``bdp``, ``N`` or ``Np`` (packets), ``Nms`` (milliseconds of the link's rate)."""
    if spec is None:
        return None
    t = str(spec).strip().lower()
    try:
        if t == "bdp":
            return ("bdp", 1.0)
        if t.endswith("ms"):
            v = float(t[:-2])
            if v >= 0:
                return ("ms", v)
        else:
            v = float(t[:-1] if t.endswith("p") else t)
            if v >= 1 and v.is_integer():
                return ("packets", v)
    except ValueError:
        pass
    raise ValueError(f"--buffer {spec}: use bdp, a number of packets (64 or 64p) or a time (50ms)")


def queue_limits(buffer: tuple[str, float] | None, rtt_ms: float) -> tuple[int, float | None]:
    """(packets, seconds) the bottleneck queue may hold for a parsed ``--buffer`` (the same each
    direction: in seconds at that direction's rate, BDP = one RTT). No buffer: ``DEFAULT_BUFFER``."""
    kind, v = buffer or parse_buffer(DEFAULT_BUFFER) or ("bdp", 1.0)
    if kind == "packets":
        return int(v), None
    if kind == "ms":
        return QUEUE_LIMIT, v / 1000
    if rtt_ms <= 0:
        raise ValueError("--buffer bdp needs an RTT above 0 (BDP = rate × RTT)")
    return QUEUE_LIMIT, rtt_ms / 1000


def open_tun(name: str) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def raise_priority() -> str:
    """The relay is the link: on a loaded machine (2 cores, browsers starting) a normal-priority
    relay is woken late and the late wake-ups become RTT and queueing nobody asked for (seen: 74 ms
    handshakes on a 50 ms link). Real-time FIFO priority (root) lets it run as soon as a packet or
    a timer is due; it blocks in select otherwise and does bounded work per wake-up. Falls back to
    nice −10, then to nothing; says which."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        return "SCHED_FIFO 10"
    except (OSError, AttributeError):
        pass
    try:
        os.nice(-10)
        return "nice -10"
    except OSError:
        return "normal"


def relay_lines(a) -> tuple[DelayLine, DelayLine]:
    """The relay's two directions from its arguments: client→server is the uplink, server→client
    the downlink."""
    def mk(rate_mbit, seed):
        return DelayLine(a.delay_ms / 1000, a.loss_pct / 100, seed, limit=a.limit_packets,
                         rate=rate_mbit * 1e6 if rate_mbit else None,
                         limit_s=a.limit_ms / 1000 if a.limit_ms is not None else None, burst=a.burst)
    return mk(a.up_mbit, a.seed * 2 + 0), mk(a.down_mbit, a.seed * 2 + 1)


def relay_main(a) -> int:
    """Open TUN a (client side) and b (server side), say 'ready', relay until SIGTERM/SIGINT,
    then write the per-direction counters to --stats. SIGUSR1 writes them at once (with the
    queue's peaks since the last SIGUSR1, then reset; ``snapshot`` counts up), so the lab reads
    what each page load met."""
    fa, fb = open_tun(a.tun_a), open_tun(a.tun_b)
    up, down = relay_lines(a)
    prio = raise_priority()
    lines = {fa: up, fb: down}
    out_of = {fa: fb, fb: fa}
    stop: list[int] = []
    snap: list[int] = []
    seq = [0]
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    signal.signal(signal.SIGUSR1, lambda *_: snap.append(1))

    def write_stats() -> None:
        if not a.stats:
            return
        seq[0] += 1
        st = {"c2s": {**up.stats(), **up.peaks()}, "s2c": {**down.stats(), **down.peaks()}, "snapshot": seq[0],
              "delay_ms": a.delay_ms, "loss_pct": a.loss_pct, "seed": a.seed, "burst": a.burst,
              "up_mbit": a.up_mbit, "down_mbit": a.down_mbit, "limit_packets": a.limit_packets, "limit_ms": a.limit_ms,
              "scheduling": prio}
        tmp = a.stats + ".tmp"
        with open(tmp, "w") as f:
            json.dump(st, f)
        os.replace(tmp, a.stats)
        up.reset_peaks()
        down.reset_peaks()

    sel = selectors.DefaultSelector()
    sel.register(fa, selectors.EVENT_READ)
    sel.register(fb, selectors.EVENT_READ)
    print("ready", flush=True)
    clock = time.monotonic
    while not stop:
        if snap:
            snap.clear()
            write_stats()
        nd = [t for t in (up.next_due(), down.next_due()) if t is not None]
        timeout = min(0.1, max(0.0, min(nd) - clock())) if nd else 0.1
        try:
            events = sel.select(timeout)
        except InterruptedError:
            continue
        now = clock()
        for key, _ in events:
            fd = key.fd
            for _ in range(256):  # drain what is there, bounded
                try:
                    pkt = os.read(fd, 65535)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:  # device gone (namespace removed)
                    stop.append(1)
                    break
                lines[fd].offer(now, pkt)
        now = clock()
        for src, line in lines.items():
            for pkt in line.due(now):
                try:
                    os.write(out_of[src], pkt)
                except OSError:
                    pass  # the kernel refused it (device down); counted as delivered by the line
    write_stats()
    return 0


# ------------------------------------------------------------------ probes

def echo_main(a) -> int:
    """In the server namespace: UDP echo (reply carries how many probes arrived so far) and a TCP
    listener for connect timing."""
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind((a.host, a.port))
    t = socket.socket()
    t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    t.bind((a.host, a.port))
    t.listen(64)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sel = selectors.DefaultSelector()
    sel.register(u, selectors.EVENT_READ)
    sel.register(t, selectors.EVENT_READ)
    got = 0
    print("ready", flush=True)
    while True:
        for key, _ in sel.select():
            if key.fileobj is u:
                data, peer = u.recvfrom(2048)
                got += 1
                u.sendto(struct.pack(">I", got) + data[:8], peer)
            else:
                c, _ = t.accept()
                c.close()


def probe_main(a) -> int:
    """In the client namespace: median TCP connect time (one RTT: SYN → SYN/ACK) over --connects
    tries and loss over --udp probes; prints one JSON line."""
    rtts = []
    for _ in range(a.connects):
        s = socket.socket()
        s.settimeout(5)
        t0 = time.perf_counter()
        try:
            s.connect((a.host, a.port))
            rtts.append((time.perf_counter() - t0) * 1000)
        except OSError:
            pass  # a SYN lost and not retried within 5 s; loss is measured below
        finally:
            s.close()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.setblocking(False)
    echoed, server_max = 0, 0
    gap = max(0.002, a.spacing_ms / 1000)
    deadline = None
    for i in range(a.udp):
        u.sendto(struct.pack(">Q", i), (a.host, a.port))
        time.sleep(gap)
        while True:
            try:
                d = u.recv(64)
            except BlockingIOError:
                break
            echoed += 1
            server_max = max(server_max, struct.unpack(">I", d[:4])[0])
    deadline = time.time() + max(1.0, 3 * (statistics.median(rtts) / 1000 if rtts else 1.0))
    u.setblocking(True)
    while time.time() < deadline:
        u.settimeout(max(0.01, deadline - time.time()))
        try:
            d = u.recv(64)
        except (TimeoutError, BlockingIOError):
            break
        echoed += 1
        server_max = max(server_max, struct.unpack(">I", d[:4])[0])
    res = {"connects": a.connects, "connect_ok": len(rtts),
           "rtt_ms": round(statistics.median(rtts), 3) if rtts else None,
           "rtt_ms_min": round(min(rtts), 3) if rtts else None,
           "rtt_ms_max": round(max(rtts), 3) if rtts else None,
           "udp_sent": a.udp, "udp_received_by_server": server_max, "udp_echoed": echoed}
    # the server's count in the last echo that came back is a lower bound of what it received
    if a.udp:
        res["loss_c2s_pct"] = round(100 * (1 - server_max / a.udp), 2)
        res["loss_s2c_pct"] = round(100 * (1 - echoed / server_max), 2) if server_max else None
        res["loss_round_trip_pct"] = round(100 * (1 - echoed / a.udp), 2)
    print(json.dumps(res), flush=True)
    return 0


# ------------------------------------------------------------------ namespaces

def _run(cmd: list[str], check=True) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip() or r.stdout.strip()}")
    return r


class LabNet:
    """The two namespaces and the link between them. ``procs`` is the lab's process table
    (start(name, cmd, ...)/stop(p)), so the relay is stopped by PID with everything else."""

    def __init__(self, procs, tag: str | None = None):
        tag = tag or str(os.getpid())
        self.procs = procs
        self.client_ns, self.server_ns = f"wf-lab-c-{tag}", f"wf-lab-s-{tag}"
        # interface names ≤ 15 chars
        self.client_if, self.server_if = f"wfc{tag}"[:15], f"wfs{tag}"[:15]
        self.server_host = SERVER_IP
        self.client_host = CLIENT_IP
        self.iface = self.client_if  # where the capture is taken (client side, like a browser's host)
        self.relay: subprocess.Popen | None = None
        self.relay_stats_path: str | None = None
        self.kind: str | None = None  # "veth" or "tun+relay" once up
        self.made: list[str] = []
        self.extra_hosts: list[str] = []  # addresses added for a page's other origins (add_hosts)
        self.resolv = False

    # commands run inside a namespace (``ip netns exec`` execs the command: same PID)
    def client_cmd(self, cmd: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.client_ns, *cmd]

    def server_cmd(self, cmd: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.server_ns, *cmd]

    def up(self, rtt_ms: float, loss_pct: float, rate_mbit: float | None, seed: int, workdir,
           down_mbit: float | None = None, up_mbit: float | None = None, buffer: str | None = None,
           burst: float | None = None) -> dict:
        """Build the link: RTT, loss (independent, or bursty with ``burst``), a rate each way
        (``rate_mbit`` both, ``down_mbit``/``up_mbit`` one each) with a bottleneck queue of
        ``buffer`` (parse_buffer) — all in the relay; a plain veth pair when none is set."""
        down_mbit = down_mbit or rate_mbit
        up_mbit = up_mbit or rate_mbit
        limit_packets, limit_s = queue_limits(parse_buffer(buffer), rtt_ms) if (down_mbit or up_mbit) else (QUEUE_LIMIT, None)
        self.snapshots = 0
        self.down()
        for ns in (self.client_ns, self.server_ns):
            _run(["ip", "netns", "add", ns])
            self.made.append(ns)
            _run(["ip", "-n", ns, "link", "set", "lo", "up"])
        if rtt_ms > 0 or loss_pct > 0 or down_mbit or up_mbit:
            self.kind = "tun+relay"
            self.relay_stats_path = os.path.join(str(workdir), f"relay-{self.client_if}.json")
            try:
                os.unlink(self.relay_stats_path)
            except FileNotFoundError:
                pass
            log = open(os.path.join(str(workdir), "relay.log"), "w")
            self.relay = self.procs.start("relay", [
                sys.executable, "-m", "wirefall.lab.net", "relay", "--tun-a", self.client_if, "--tun-b", self.server_if,
                "--delay-ms", str(rtt_ms / 2), "--loss-pct", str(loss_pct), "--seed", str(seed),
                *(["--burst", str(burst)] if burst else []),
                *(["--up-mbit", str(up_mbit)] if up_mbit else []), *(["--down-mbit", str(down_mbit)] if down_mbit else []),
                "--limit-packets", str(limit_packets), *(["--limit-ms", str(1000 * limit_s)] if limit_s is not None else []),
                "--stats", self.relay_stats_path], stdout=subprocess.PIPE, stderr=log, text=True)
            assert self.relay.stdout is not None  # stdout=PIPE
            line = self.relay.stdout.readline()
            if line.strip() != "ready":
                raise RuntimeError(f"relay did not start (see {log.name})")
            _run(["ip", "link", "set", self.client_if, "netns", self.client_ns])
            _run(["ip", "link", "set", self.server_if, "netns", self.server_ns])
            peer = True
        else:
            self.kind = "veth"
            _run(["ip", "link", "add", self.client_if, "netns", self.client_ns, "type", "veth",
                  "peer", "name", self.server_if, "netns", self.server_ns])
            peer = False
        for ns, dev, ip, other in ((self.client_ns, self.client_if, CLIENT_IP, SERVER_IP),
                                   (self.server_ns, self.server_if, SERVER_IP, CLIENT_IP)):
            if peer:
                _run(["ip", "-n", ns, "addr", "add", ip, "peer", other, "dev", dev])
            else:
                _run(["ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", dev])
            _run(["ip", "-n", ns, "link", "set", dev, "mtu", str(MTU), "up"])
            # no GSO/TSO/GRO: one capture record per packet on the wire
            _run(["ip", "netns", "exec", ns, "ethtool", "-K", dev, "gso", "off", "tso", "off", "gro", "off"],
                 check=False)
            # UDP GSO too (ngtcp2 sends 64 kB UDP_SEGMENT super-datagrams; on a veth the capture
            # would see them whole, cut at the snap length): segmented before the link
            _run(["ip", "netns", "exec", ns, "ethtool", "-K", dev, "tx-udp-segmentation", "off"],
                 check=False)
        self.queue = {"limit_packets": limit_packets, "limit_ms": None if limit_s is None else round(1000 * limit_s, 3)}
        return self.describe(rtt_ms, loss_pct, down_mbit, up_mbit, burst)

    def add_hosts(self, addresses: list[str], dns_ip: str | None = None) -> None:
        """One network host per origin: each address on the server namespace's end of the link
        (routed from the client over the same link, so every origin meets the same conditions),
        and with ``dns_ip`` the client namespace's resolver pointed at the lab's DNS server there."""
        from .dns import install_resolv

        link_kind = self.kind
        for ip in [a for a in addresses if a != SERVER_IP] + ([dns_ip] if dns_ip else []):
            if ip in self.extra_hosts:
                continue
            if link_kind == "tun+relay":
                _run(["ip", "-n", self.server_ns, "addr", "add", f"{ip}/32", "dev", self.server_if])
            else:
                _run(["ip", "-n", self.server_ns, "addr", "add", f"{ip}/24", "dev", self.server_if])
            self.extra_hosts.append(ip)
        if link_kind == "tun+relay" and self.extra_hosts:
            _run(["ip", "-n", self.client_ns, "route", "replace", f"{HOSTS_NET}", "dev", self.client_if], check=False)
        if dns_ip:
            install_resolv(self.client_ns, dns_ip)
            self.resolv = True

    def describe(self, rtt_ms, loss_pct, down_mbit, up_mbit=None, burst=None) -> dict:
        offl = _run(["ip", "netns", "exec", self.client_ns, "ethtool", "-k", self.client_if], check=False).stdout
        off = {k: v.split()[0] for k, v in (ln.strip().split(":", 1) for ln in offl.splitlines() if ":" in ln)
               if k in ("generic-segmentation-offload", "tcp-segmentation-offload", "generic-receive-offload")}
        qd = _run(["ip", "netns", "exec", self.client_ns, "tc", "qdisc", "show", "dev", self.client_if],
                  check=False).stdout.strip()
        return {"link": self.kind, "client_ns": self.client_ns, "server_ns": self.server_ns,
                "client": f"{CLIENT_IP} dev {self.client_if}", "server": f"{SERVER_IP} dev {self.server_if}",
                "mtu": MTU, "offloads": off, "qdisc": qd,
                "relay": None if self.relay is None else {
                    "pid": self.relay.pid, "one_way_delay_ms": rtt_ms / 2, "loss_pct_each_way": loss_pct,
                    "loss_model": f"gilbert, mean burst {burst:g} packets" if burst and burst > 1 and loss_pct else "independent",
                    "down_mbit": down_mbit, "up_mbit": up_mbit,
                    "queue": getattr(self, "queue", None) if (down_mbit or up_mbit) else None}}

    def measure(self, workdir, connects=20, udp=200) -> dict:
        """RTT by TCP connect timing and loss by UDP echo probes, across the lab's link."""
        echo = self.procs.start("echo", self.server_cmd([sys.executable, "-m", "wirefall.lab.net", "echo",
                                                         "--host", SERVER_IP, "--port", str(PROBE_PORT)]),
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            if echo.stdout.readline().strip() != "ready":
                raise RuntimeError("probe echo server did not start")
            # space the probes so they do not queue behind each other at a low rate
            r = subprocess.run(self.client_cmd([sys.executable, "-m", "wirefall.lab.net", "probe", "--host", SERVER_IP,
                                                "--port", str(PROBE_PORT), "--connects", str(connects),
                                                "--udp", str(udp), "--spacing-ms", "5"]),
                               capture_output=True, text=True, timeout=120)
            if r.returncode:
                raise RuntimeError(f"probe failed: {r.stderr.strip()}")
            return json.loads(r.stdout.strip().splitlines()[-1])
        finally:
            self.procs.stop(echo)

    def snapshot(self, timeout: float = 3.0) -> dict | None:
        """The relay's counters now and its queue peaks since the last snapshot (SIGUSR1)."""
        if self.relay is None or self.relay_stats_path is None or self.relay.poll() is not None:
            return None
        want = self.snapshots + 1
        os.kill(self.relay.pid, signal.SIGUSR1)
        t0 = time.time()
        while time.time() - t0 < timeout:
            try:
                with open(self.relay_stats_path) as f:
                    st = json.load(f)
                if st.get("snapshot", 0) >= want:
                    self.snapshots = st["snapshot"]
                    return st
            except (OSError, ValueError):
                pass
            time.sleep(0.02)
        return None

    def relay_stats(self) -> dict | None:
        """Stop the relay (by PID) and read its counters."""
        if self.relay is None:
            return None
        self.procs.stop(self.relay)
        self.relay = None
        path = self.relay_stats_path  # set with the relay
        if path is None:
            return None
        try:
            with open(path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def down(self) -> None:
        if self.relay is not None:
            self.procs.stop(self.relay)
            self.relay = None
        if self.resolv:
            from .dns import remove_resolv

            remove_resolv(self.client_ns)
            self.resolv = False
        self.extra_hosts = []
        for ns in (self.client_ns, self.server_ns):
            # any process still inside (there should be none: the lab stops each by PID) keeps the
            # namespace alive only as long as it lives; the name is removed either way
            _run(["ip", "netns", "del", ns], check=False)
        self.made.clear()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lab.net")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("relay")
    r.add_argument("--tun-a", required=True)
    r.add_argument("--tun-b", required=True)
    r.add_argument("--delay-ms", type=float, default=0.0)
    r.add_argument("--loss-pct", type=float, default=0.0)
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--burst", type=float, default=None, help="mean loss burst in packets (Gilbert); default independent loss")
    r.add_argument("--up-mbit", type=float, default=None, help="client→server rate (default: no bottleneck)")
    r.add_argument("--down-mbit", type=float, default=None, help="server→client rate")
    r.add_argument("--limit-packets", type=int, default=QUEUE_LIMIT)
    r.add_argument("--limit-ms", type=float, default=None)
    r.add_argument("--stats")
    e = sub.add_parser("echo")
    e.add_argument("--host", required=True)
    e.add_argument("--port", type=int, default=PROBE_PORT)
    p = sub.add_parser("probe")
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, default=PROBE_PORT)
    p.add_argument("--connects", type=int, default=20)
    p.add_argument("--udp", type=int, default=200)
    p.add_argument("--spacing-ms", type=float, default=5)
    a = ap.parse_args(argv)
    return {"relay": relay_main, "echo": echo_main, "probe": probe_main}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
