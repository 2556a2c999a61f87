"""``write_pcapng`` / ``wirefall packets -w``: the packets equal those ``tshark -r IN -Y F -w``
writes (bytes, lengths, timestamps tick for tick, link types), tshark reads the file and
decrypts it from its Decryption Secrets Block alone, which holds only the keys of the
connections written."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from wirefall.analyzer.capture import CaptureInfo, read_capture
from wirefall.analyzer.pcapng_write import write_pcapng
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parent.parent
S = ROOT / "sample_captures"
pytestmark = pytest.mark.skipif(subprocess.run(["which", "tshark"], capture_output=True).returncode != 0,
                                reason="tshark not installed")


def _records(path) -> list[tuple]:
    info = CaptureInfo()
    return [(r.ts, r.caplen, r.origlen, r.linktype, bytes(r.data)) for r in read_capture(str(path), info)]


def _raw_times(path) -> list[str]:
    out = subprocess.run(["tshark", "-r", str(path), "-T", "fields", "-e", "frame.time_epoch"], capture_output=True, text=True,
                         check=True).stdout
    return out.split()


def _tshark_numbers(cap, flt, keys=None) -> list[int]:
    cmd = ["tshark", "-n", "-r", str(cap), "-Y", flt, "-T", "fields", "-e", "frame.number"]
    if keys:
        cmd += ["-o", f"tls.keylog_file:{keys}"]
    return [int(x) for x in subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()]


CASES = [("page/page-h2.pcapng", "page/page-h2.keys", "tcp.stream == 0 || dns", "http2"),
         ("page/page-h3.pcapng", "page/page-h3.keys", "udp", "http3"),
         ("page/page-spdy.pcapng", "page/page-spdy.keys", "tcp", "spdy"),
         ("http/http1-nginx.pcap", None, "tcp.stream == 0 || tcp.stream == 3", "http"),
         ("link-sll2.pcap", None, "frame", None),
         ("quic/aioquic-qlog.pcap", "quic/aioquic-qlog.keys", "frame.number >= 1", "http3")]


@pytest.mark.parametrize("cap,keys,flt,proto", CASES, ids=[c for c, *_ in CASES])
def test_packets_equal_tshark_w_and_decrypt_from_the_dsb(cap, keys, flt, proto, tmp_path):
    cap_p, keys_p = S / cap, (S / keys if keys else None)
    an = analyze(str(cap_p), keylogs=[str(keys_p)] if keys_p else [])
    nums = _tshark_numbers(cap_p, flt, keys_p)
    assert nums
    out, ref = tmp_path / "out.pcapng", tmp_path / "ref.pcapng"
    r = write_pcapng(an, nums, str(out))
    cmd = ["tshark", "-r", str(cap_p), "-Y", flt, "-w", str(ref)]
    if keys_p:
        cmd += ["-o", f"tls.keylog_file:{keys_p}"]
    subprocess.run(cmd, capture_output=True, check=True)
    assert _records(out) == _records(ref) and r.packets == len(nums)
    assert _raw_times(out) == _raw_times(ref)  # timestamps to the tick, as tshark prints them
    if proto:  # the DSB alone decrypts what the key log decrypts in the original
        assert _tshark_numbers(out, proto) == _tshark_numbers(ref, proto, keys_p) != []
    assert (r.secrets > 0) == bool(keys_p)


def test_dsb_holds_only_the_selected_connections_keys(tmp_path):
    cap, keys = S / "page/page-h1.pcapng", S / "page/page-h1.keys"
    an = analyze(str(cap), keylogs=[str(keys)])
    tls = [c for c in an.connections if c.tls is not None and c.tls.client_random]
    assert len(tls) >= 6
    one = tls[2]
    nums = [i + 1 for i in range(an.packets) if an.index.conn[i] == one.id]
    out = tmp_path / "one.pcapng"
    r = write_pcapng(an, nums, str(out))
    # the DSB's lines: every one names this connection's client random, and it holds them all
    text = out.read_bytes()
    cr = one.tls.client_random.hex()
    mine = [ln for ln in keys.read_text().splitlines() if cr in ln]
    assert r.secrets == len(mine) >= 4
    for ln in mine:
        assert ln.encode() in text
    others = {c.tls.client_random.hex() for c in tls if c.id != one.id}
    assert not any(o.encode() in text for o in others)
    stream = sorted(c.id for c in an.connections if c.transport == "tcp").index(one.id)
    assert [nums[k - 1] for k in _tshark_numbers(out, "http")] == _tshark_numbers(cap, f"http && tcp.stream == {stream}", keys) != []
    # keys=False: no DSB, nothing decrypts
    out2 = tmp_path / "nokeys.pcapng"
    assert write_pcapng(an, nums, str(out2), keys=False).secrets == 0
    assert _tshark_numbers(out2, "http") == []


def test_existing_file_is_not_replaced_without_force(tmp_path):
    an = analyze(str(S / "http/http1-nginx.pcap"))
    out = tmp_path / "x.pcapng"
    out.write_bytes(b"keep")
    with pytest.raises(FileExistsError):
        write_pcapng(an, [1, 2], str(out))
    assert out.read_bytes() == b"keep" and os.listdir(tmp_path) == ["x.pcapng"]
    write_pcapng(an, [1, 2], str(out), force=True)
    assert len(_records(out)) == 2


def test_cli_packets_w(tmp_path):
    def run(*a):
        return subprocess.run([sys.executable, "-m", "wirefall", *a], capture_output=True, text=True, cwd=ROOT, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})

    cap, keys = S / "page/page-h2.pcapng", S / "page/page-h2.keys"
    out = tmp_path / "o.pcapng"
    r = run("packets", str(cap), "--keylog", str(keys), "-Y", "tcp.port == 443 || tcp", "-w", str(out))
    assert r.returncode == 0, r.stderr
    assert "key-log lines in a Decryption Secrets Block" in r.stderr and r.stdout == ""
    assert len(_tshark_numbers(out, "http2.type == 1")) == len(_tshark_numbers(cap, "http2.type == 1", keys)) > 0
    r = run("packets", str(cap), "-w", str(out))
    assert r.returncode == 2 and "exists" in r.stderr
