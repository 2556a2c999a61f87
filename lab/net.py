"""Network conditions for ``wirefall lab``: two network namespaces joined by a link with set
RTT, loss and rate, and a check that the conditions are in force.

This kernel has no ``netem`` (NET_SCH_NETEM is not built), so delay and loss come from a small
userspace relay: it owns one TUN device in each namespace and copies IP packets between them
through a ``DelayLine`` per direction (one-way delay RTT/2, independent random loss drawn from
a seeded RNG, bounded queue). Rate limiting is the kernel's ``tbf`` on each end's egress.
With no delay and no loss the namespaces are joined by a plain veth pair instead (no relay).
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
MTU = 1500
QUEUE_LIMIT = 4096           # packets in flight per direction in the relay (tail drop beyond)
TUNSETIFF, IFF_TUN, IFF_NO_PI = 0x400454CA, 0x0001, 0x1000
PROBE_PORT = 9


# ------------------------------------------------------------------ relay core (pure, unit-tested)

class DelayLine:
    """One direction of the relay: packets offered at time t come out at t + delay, in order,
    unless the seeded RNG drops them (probability ``loss``) or the queue is full."""

    def __init__(self, delay: float, loss: float, seed: int, limit: int = QUEUE_LIMIT):
        if not 0.0 <= loss < 1.0:
            raise ValueError("loss must be in [0, 1)")
        self.delay, self.loss, self.limit = max(0.0, delay), loss, limit
        self.rng = random.Random(seed)
        self.q: deque[tuple[float, bytes]] = deque()
        self.offered = self.dropped = self.overflow = self.delivered = 0

    def offer(self, now: float, pkt: bytes) -> bool:
        self.offered += 1
        # draw for every packet, so the drop pattern depends only on the seed and the packet index
        if self.rng.random() < self.loss:
            self.dropped += 1
            return False
        if len(self.q) >= self.limit:
            self.overflow += 1
            return False
        self.q.append((now + self.delay, pkt))
        return True

    def next_due(self) -> float | None:
        return self.q[0][0] if self.q else None

    def due(self, now: float) -> list[bytes]:
        out = []
        while self.q and self.q[0][0] <= now:
            out.append(self.q.popleft()[1])
        self.delivered += len(out)
        return out

    def stats(self) -> dict:
        return {"offered": self.offered, "dropped": self.dropped, "overflow": self.overflow,
                "delivered": self.delivered, "queued": len(self.q)}


def open_tun(name: str) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def relay_main(a) -> int:
    """Open TUN a (client side) and b (server side), say 'ready', relay until SIGTERM/SIGINT,
    then write the per-direction counters to --stats."""
    fa, fb = open_tun(a.tun_a), open_tun(a.tun_b)
    lines = {fa: DelayLine(a.delay_ms / 1000, a.loss_pct / 100, a.seed * 2 + 0),   # client→server
             fb: DelayLine(a.delay_ms / 1000, a.loss_pct / 100, a.seed * 2 + 1)}   # server→client
    out_of = {fa: fb, fb: fa}
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    sel = selectors.DefaultSelector()
    sel.register(fa, selectors.EVENT_READ)
    sel.register(fb, selectors.EVENT_READ)
    print("ready", flush=True)
    clock = time.monotonic
    while not stop:
        nd = [t for t in (lines[fa].next_due(), lines[fb].next_due()) if t is not None]
        timeout = max(0.0, min(nd) - clock()) if nd else 0.5
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
    if a.stats:
        with open(a.stats, "w") as f:
            json.dump({"c2s": lines[fa].stats(), "s2c": lines[fb].stats(), "delay_ms": a.delay_ms,
                       "loss_pct": a.loss_pct, "seed": a.seed}, f)
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

    # commands run inside a namespace (``ip netns exec`` execs the command: same PID)
    def client_cmd(self, cmd: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.client_ns, *cmd]

    def server_cmd(self, cmd: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.server_ns, *cmd]

    def up(self, rtt_ms: float, loss_pct: float, rate_mbit: float | None, seed: int, workdir) -> dict:
        self.down()
        for ns in (self.client_ns, self.server_ns):
            _run(["ip", "netns", "add", ns])
            self.made.append(ns)
            _run(["ip", "-n", ns, "link", "set", "lo", "up"])
        if rtt_ms > 0 or loss_pct > 0:
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
            if rate_mbit:
                burst = max(MTU * 4, int(rate_mbit * 1e6 / 8 / 250))  # ≥ 4 ms of traffic at the rate
                _run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "tbf",
                      "rate", f"{rate_mbit}mbit", "burst", str(burst), "latency", "400ms"])
        return self.describe(rtt_ms, loss_pct, rate_mbit)

    def describe(self, rtt_ms, loss_pct, rate_mbit) -> dict:
        offl = _run(["ip", "netns", "exec", self.client_ns, "ethtool", "-k", self.client_if], check=False).stdout
        off = {k: v.split()[0] for k, v in (ln.strip().split(":", 1) for ln in offl.splitlines() if ":" in ln)
               if k in ("generic-segmentation-offload", "tcp-segmentation-offload", "generic-receive-offload")}
        qd = _run(["ip", "netns", "exec", self.client_ns, "tc", "qdisc", "show", "dev", self.client_if],
                  check=False).stdout.strip()
        return {"link": self.kind, "client_ns": self.client_ns, "server_ns": self.server_ns,
                "client": f"{CLIENT_IP} dev {self.client_if}", "server": f"{SERVER_IP} dev {self.server_if}",
                "mtu": MTU, "offloads": off, "qdisc": qd,
                "relay": None if self.relay is None else {"pid": self.relay.pid, "one_way_delay_ms": rtt_ms / 2,
                                                          "loss_pct_each_way": loss_pct}}

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
