"""One store of TLS secrets (NSS key log format), shared by TLS and QUIC.

Sources: ``--keylog FILE`` (repeatable), the ``SSLKEYLOGFILE`` environment variable as the
default, and pcapng Decryption Secrets Blocks.  Secrets are never printed: ``repr`` and
every message name only labels, counts and line numbers.
"""
from __future__ import annotations

import gzip
import os

LABELS = {
    "CLIENT_RANDOM",
    "CLIENT_EARLY_TRAFFIC_SECRET",
    "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
    "SERVER_HANDSHAKE_TRAFFIC_SECRET",
    "CLIENT_TRAFFIC_SECRET_0",
    "SERVER_TRAFFIC_SECRET_0",
    "EXPORTER_SECRET",
    "EARLY_EXPORTER_SECRET",
}


class KeyLog:
    def __init__(self):
        self._secrets: dict[tuple[str, bytes], bytes] = {}
        self.warnings: list[str] = []
        self.sources: list[str] = []

    def __repr__(self) -> str:
        return f"<KeyLog {len(self._secrets)} secrets from {len(self.sources)} sources>"

    def __len__(self) -> int:
        return len(self._secrets)

    def get(self, label: str, client_random: bytes) -> bytes | None:
        return self._secrets.get((label, bytes(client_random)))

    def secret_values(self) -> list[bytes]:
        """Every secret held (for leak checks before anything is written out)."""
        return list(self._secrets.values())

    def client_randoms(self, label: str) -> list[bytes]:
        """Client randoms with a secret of this label, in the order the key log gave them."""
        return [cr for (lb, cr) in self._secrets if lb == label]

    def has_client(self, client_random: bytes) -> bool:
        cr = bytes(client_random)
        return any(k[1] == cr for k in self._secrets)

    def add_text(self, text: str, source: str = "key log") -> int:
        added = 0
        for lineno, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            if len(parts) != 3:
                self.warnings.append(f"{source}: line {lineno}: malformed (expected LABEL CLIENT_RANDOM SECRET), skipped")
                continue
            label, cr, secret = parts
            if label not in LABELS:
                continue  # unknown labels are ignored
            try:
                crb, sb = bytes.fromhex(cr), bytes.fromhex(secret)
            except ValueError:
                self.warnings.append(f"{source}: line {lineno}: {label} has a value that is not hex, skipped")
                continue
            if len(crb) != 32 or len(sb) not in (32, 48, 64):
                self.warnings.append(f"{source}: line {lineno}: {label} has a value of the wrong length, skipped")
                continue
            self._secrets[(label, crb)] = sb
            added += 1
        self.sources.append(source)
        return added

    def add_file(self, path: str) -> int:
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except OSError as e:
            self.warnings.append(f"{path}: cannot read key log: {e.strerror or e}")
            return 0
        if raw[:2] == b"\x1f\x8b":
            try:
                raw = gzip.decompress(raw)
            except (OSError, EOFError):
                self.warnings.append(f"{path}: key log is a broken gzip file")
                return 0
        return self.add_text(raw.decode("utf-8", "replace"), path)


def load_keylog(paths: list[str] | None, use_env: bool = True) -> KeyLog:
    kl = KeyLog()
    for p in paths or []:
        kl.add_file(p)
    if not paths and use_env:
        env = os.environ.get("SSLKEYLOGFILE")
        if env and os.path.exists(env):
            kl.add_file(env)
    return kl
