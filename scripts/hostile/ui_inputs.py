"""Inputs for the newcomer tests of the TUI and web app (tests/test_ui_newcomer.py):
a real page load cut short mid-packet, and a key log that holds no secret for it.
Built from sample_captures/page/, never committed as blobs."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "sample_captures" / "page"


def truncated(out: str | Path, name: str = "page-h2.pcapng", fraction: float = 0.7) -> Path:
    """``name`` cut at ``fraction`` of its size plus 7 bytes (inside a block: a truncated file)."""
    data = (PAGE / name).read_bytes()
    p = Path(out) / f"truncated-{name}"
    p.write_bytes(data[: int(len(data) * fraction) + 7])
    return p


def wrong_keylog(out: str | Path) -> Path:
    """A well-formed NSS key log whose client randoms belong to no connection of the samples
    (TLS 1.2 and TLS 1.3 / QUIC lines)."""
    r = "ab" * 32
    lines = [f"CLIENT_RANDOM {r} {'cd' * 48}"]
    for label in ("CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET", "CLIENT_TRAFFIC_SECRET_0",
                  "SERVER_TRAFFIC_SECRET_0"):
        lines.append(f"{label} {r} {'ef' * 32}")
    p = Path(out) / "wrong.keys"
    p.write_text("\n".join(lines) + "\n")
    return p
