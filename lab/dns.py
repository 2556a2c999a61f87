"""The lab's DNS server: every origin of a page resolves to its own address in the server
namespace, as mahimahi's ReplayShell does with dnsmasq.

The server is dnsmasq (Debian package dnsmasq-base: the binary only, no service), run in the
server namespace on its own address (``DNS_IP``), so the queries cross the lab's link (its delay
and loss) and appear in the client-side capture as a browser's lookups do on the web. The client
namespace's resolver is pointed at it through ``/etc/netns/<ns>/resolv.conf``, which
``ip netns exec`` binds over /etc/resolv.conf (Chromium's and glibc's resolvers both read it).
No name outside the page resolves (``no-resolv``: nothing is forwarded), and names the page does
not have get NXDOMAIN; AAAA and HTTPS queries for the page's names get an empty answer (NODATA),
so clients fall back to the A record at once.

dnslib / dnspython are not in the project's environment (checked); dnsmasq is a well-kept real
DNS server and is what ReplayShell uses.
"""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

DNS_IP = "10.77.0.53"
DNSMASQ_PACKAGE = "dnsmasq-base"
_NAME = re.compile(r"^(?=.{1,253}$)([A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?)*$")


def valid_name(host: str) -> bool:
    return bool(_NAME.match(host)) and not re.fullmatch(r"[0-9.]+", host)


def dnsmasq_conf(records: dict[str, str], listen: str = DNS_IP, log: str | None = None, ttl: int = 300,
                 port: int = 53) -> str:
    """dnsmasq's configuration: answer ``records`` (name → IPv4 address) and nothing else."""
    bad = [h for h in records if not valid_name(h)]
    if bad:
        raise ValueError(f"not DNS names: {bad}")
    lines = ["no-resolv", "no-hosts", "no-poll", "no-negcache", "bind-interfaces", f"listen-address={listen}",
             *([] if listen.startswith("127.") else ["except-interface=lo"]), f"port={port}", f"local-ttl={ttl}",
             "cache-size=0", "local=/#/"]  # every other name: NXDOMAIN, nothing forwarded
    if log:
        lines += ["log-queries=extra", f"log-facility={log}"]
    for host, ip in records.items():
        # host-record: A for the name (no AAAA → NODATA); local=: the name is ours, nothing forwarded
        lines.append(f"host-record={host},{ip}")
        lines.append(f"local=/{host}/")
    return "\n".join(lines) + "\n"


def dnsmasq_cmd(conf: Path, pid: Path) -> list[str]:
    exe = shutil.which("dnsmasq") or "dnsmasq"
    return [exe, "--keep-in-foreground", f"--conf-file={conf}", f"--pid-file={pid}", "--user=root", "--group=root"]


def have_dnsmasq() -> bool:
    return shutil.which("dnsmasq") is not None


def resolv_conf(server: str = DNS_IP) -> str:
    # one server, no search list, one try with a short timeout: a lost query is retried after 1 s
    # as by a stub resolver on the web (the loss is part of the condition)
    return f"nameserver {server}\noptions timeout:1 attempts:3\n"


def netns_etc(ns: str) -> Path:
    return Path("/etc/netns") / ns


def install_resolv(ns: str, server: str = DNS_IP) -> Path:
    """``/etc/netns/<ns>/resolv.conf`` (and an empty hosts file, so the host's /etc/hosts names do
    not answer first) for ``ip netns exec <ns>``; ``remove_resolv`` takes them away."""
    d = netns_etc(ns)
    d.mkdir(parents=True, exist_ok=True)
    (d / "resolv.conf").write_text(resolv_conf(server))
    (d / "hosts").write_text("127.0.0.1 localhost\n")
    return d


def remove_resolv(ns: str) -> None:
    d = netns_etc(ns)
    for f in ("resolv.conf", "hosts"):
        try:
            os.unlink(d / f)
        except FileNotFoundError:
            pass
    try:
        d.rmdir()
    except OSError:
        pass
