#!/usr/bin/env python3
"""Capture an aioquic HTTP/3 page load together with the client's own qlog.

The same load as scripts/quic/aioquic_capture.py (its client and scripts/lab/h3_server.py
serving the lab page, tcpdump on lo), with the client's QuicConfiguration given a
``QuicFileLogger`` (aioquic's qlog writer: qlog 0.3, JSON, the QUIC and HTTP/3 event
schemas, client vantage point).  Each process is stopped by its PID.

    .venv/bin/python scripts/browser/aioquic_qlog.py OUTDIR [--count 6] [--name aioquic-qlog]
Writes OUTDIR/NAME.pcap, NAME.keys, NAME.qlog (the client's qlog), NAME.client.json
"""
from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "scripts" / "quic"))
import aioquic_capture as cap  # noqa: E402  (the client and helpers of the aioquic sample)
from aioquic.asyncio import connect  # noqa: E402
from aioquic.h3.connection import H3_ALPN  # noqa: E402
from aioquic.quic.configuration import QuicConfiguration  # noqa: E402
from aioquic.quic.logger import QuicFileLogger  # noqa: E402


async def run_client(port: int, paths: list[str], keys: Path, qlog_dir: Path) -> list[dict]:
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, verify_mode=0, server_name="localhost")
    cfg.quic_logger = QuicFileLogger(str(qlog_dir))
    with open(keys, "a") as kf:
        cfg.secrets_log_file = kf
        async with connect("127.0.0.1", port, configuration=cfg, create_protocol=cap.Client) as c:
            first = await c.get(f"localhost:{port}", paths[0])
            rest = await asyncio.gather(*(c.get(f"localhost:{port}", p) for p in paths[1:]))
            c.close()
            await asyncio.sleep(0.2)
    return [first, *rest]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--count", type=int, default=6)
    ap.add_argument("--name", default="aioquic-qlog")
    a = ap.parse_args()
    a.outdir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="wf-aioquic-qlog-"))
    site = work / "site"
    subprocess.run([sys.executable, str(cap.LAB / "page" / "generate.py"), str(site), "--count", str(a.count)], check=True)
    cert, key = work / "cert.pem", work / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost"], check=True, capture_output=True)
    sys.path.insert(0, str(cap.LAB / "page"))
    import generate  # noqa: E402

    paths = ["/"] + [r["path"] if isinstance(r, dict) else getattr(r, "path", r) for r in generate.resources(a.count)]
    port = cap.free_port()
    out = a.outdir / a.name
    pcap, keys, log = Path(f"{out}.pcap"), Path(f"{out}.keys"), Path(f"{out}.client.json")
    qdir = work / "qlog"
    qdir.mkdir()
    keys.unlink(missing_ok=True)
    with cap.captured(pcap, port, [sys.executable, str(cap.LAB / "h3_server.py"), "--root", str(site), "--cert", str(cert),
                                   "--key", str(key), "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
        results = asyncio.run(run_client(port, paths, keys, qdir))
        time.sleep(0.5)
    qlogs = sorted(qdir.glob("*.qlog"))
    if len(qlogs) != 1:
        raise SystemExit(f"aioquic_qlog: expected one qlog, found {len(qlogs)}")
    shutil.copy(qlogs[0], f"{out}.qlog")
    import aioquic

    log.write_text(json.dumps({"aioquic": aioquic.__version__, "port": port, "responses": results}, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    print(f"{pcap} {pcap.stat().st_size} bytes, {out}.qlog {Path(f'{out}.qlog').stat().st_size} bytes, {len(results)} responses")
    return 0


if __name__ == "__main__":
    sys.exit(main())
