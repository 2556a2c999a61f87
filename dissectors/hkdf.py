"""HKDF (RFC 5869) and HKDF-Expand-Label (RFC 8446 7.1) on ``cryptography``'s HMAC: the key
derivation TLS 1.3 (``dissectors.tls_crypto``, which re-exports these) and QUIC
(``dissectors.quic_crypto``, RFC 9001 5.1) share.  A module of its own so that QUIC does not
import the rest of tls_crypto (its frozen dataclass alone was ~1 ms of a QUIC capture's start).
"""
from __future__ import annotations

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.hmac import HMAC

HASH_LEN = {"sha256": 32, "sha384": 48, "sha1": 20, "md5": 16}
_HASHES: dict[str, hashes.HashAlgorithm] = {"sha256": hashes.SHA256(), "sha384": hashes.SHA384(), "sha1": hashes.SHA1(), "md5": hashes.MD5()}


def _hmac(key: bytes, msg: bytes, h: str) -> bytes:
    """HMAC-``h`` (a HASH_LEN name) of ``msg``."""
    m = HMAC(key, _HASHES[h])
    m.update(msg)
    return m.finalize()


def _hname(h) -> str:
    return h if isinstance(h, str) else h.name


def hkdf_extract(salt: bytes, ikm: bytes, hash="sha256") -> bytes:
    return _hmac(salt or bytes(HASH_LEN[_hname(hash)]), ikm, _hname(hash))


def hkdf_expand(prk: bytes, info: bytes, length: int, hash="sha256") -> bytes:
    h = _hname(hash)
    out = b""
    t = b""
    i = 1
    while len(out) < length:
        t = _hmac(prk, t + info + bytes((i,)), h)
        out += t
        i += 1
    return out[:length]


def hkdf_expand_label(secret: bytes, label, context: bytes, length: int, hash="sha256") -> bytes:
    """HKDF-Expand-Label (RFC 8446 7.1).  ``label`` without the "tls13 " prefix (str or bytes);
    ``hash`` a name ("sha256") or a ``cryptography`` hash object."""
    if isinstance(label, str):
        label = label.encode()
    full = b"tls13 " + label
    info = length.to_bytes(2, "big") + bytes((len(full),)) + full + bytes((len(context),)) + context
    return hkdf_expand(secret, info, length, hash)
