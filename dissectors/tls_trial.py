"""TLS 1.3 record keys by trial, for a TCP connection the capture joined mid-way (sans-IO).

Without the ClientHello, nothing names the key-log line of a connection, and the record
sequence number (the number of records sent before the capture, XORed into the nonce) is
unknown too.  Trying every (secret, cipher suite, sequence number) with a full AEAD check
would cost one decryption of the record per guess (65 536 guesses per secret).  For AES-GCM
the guesses are sifted first, 65 536 at a time, with two bytes of keystream (AES-GCM is
counter mode: plaintext byte i = ciphertext byte i XOR AES_k(nonce || 2 + i / 16)):

- the record's last plaintext byte is its inner content type, 0x17 (application data) when
  the sender does not pad (Chromium/BoringSSL, OpenSSL, nginx, Caddy do not), and
- its first plaintext byte is 0x00 for HTTP/2 (a frame's 24-bit length, under 2^16 in a
  record of at most 2^14 bytes) or an HTTP/1.x method's or status line's first letter;

so about 65 536 / 256 x 8 / 256 = 8 sequence numbers per secret reach the AEAD check, which
accepts only the right one.  The keystream blocks of all 65 536 sequence numbers are one
AES-ECB call over a 1 MiB buffer built by strided slice assignment (no Python loop per
guess).  ChaCha20-Poly1305 has no such shortcut in ``cryptography``: its sequence numbers are
tried one by one up to ``CHACHA_SEQ``.  Records sent after a KeyUpdate before the capture
(generation > 0) are not found.  Hand-written because no library decrypts a TLS record of
unknown sequence number; the primitives are ``cryptography``'s.

The caller bounds the work with a ``dissectors.budget.Budget`` charged in AES blocks
computed (an AEAD check counts as the blocks of its record).
"""
from __future__ import annotations

from collections.abc import Iterable

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from .tls_crypto import DecryptError, Tls13RecordDecryptor, suite_params, tls13_traffic_keys

GCM_SEQ = 1 << 16  # sequence numbers sifted per secret (records sent before the capture)
CHACHA_SEQ = 1 << 10
# first plaintext bytes of a record of HTTP/2 (0x00) or HTTP/1.x (GET, POST, PUT, PATCH, HEAD,
# DELETE, OPTIONS, CONNECT, TRACE, HTTP/1.1 ...)
FIRST_BYTES = frozenset(b"\x00GPHDOCT")
APP_DATA = 0x17
_U16_HI = b"".join(bytes((v,)) * 256 for v in range(256))  # high byte of every 16-bit value, in order (256 steps at import, not 65 536)
_U16_LO = bytes(range(256)) * 256  # low byte of every 16-bit value, in order


def suites_for(secret: bytes) -> tuple[int, ...]:
    """TLS 1.3 suites whose hash has this secret's length (SHA-256: AES-128-GCM first)."""
    return (0x1301, 0x1303) if len(secret) == 32 else (0x1302,) if len(secret) == 48 else ()


def _gcm_keystream(key: bytes, iv: bytes, counter: int) -> bytes:
    """AES_k(iv[0:10] || (iv[10:12] XOR u) || counter) for u = 0 .. 65535, concatenated:
    the keystream block ``counter`` of sequence number s sits at u = s XOR iv[10:12]."""
    n = 1 << 16
    buf = bytearray(16 * n)
    for j in range(10):
        if iv[j]:
            buf[j::16] = bytes([iv[j]]) * n
    buf[10::16] = _U16_HI
    buf[11::16] = _U16_LO
    for j, b in enumerate(counter.to_bytes(4, "big")):
        if b:
            buf[12 + j::16] = bytes([b]) * n
    enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return enc.update(bytes(buf)) + enc.finalize()


def _gcm_candidates(key: bytes, iv: bytes, ct: bytes) -> list[int]:
    """Sequence numbers (< GCM_SEQ) whose keystream makes the record's first byte plausible and
    its last byte the application-data content type."""
    last = len(ct) - 1
    stream = _gcm_keystream(key, iv, 2 + last // 16)
    ks_last = stream[last % 16::16]
    ks_first = (stream if last < 16 else _gcm_keystream(key, iv, 2))[0::16]
    low = int.from_bytes(iv[10:12], "big")
    want, first = ct[last] ^ APP_DATA, ct[0]
    out = []
    pos = ks_last.find(want)
    while pos >= 0:
        if first ^ ks_first[pos] in FIRST_BYTES:
            out.append(pos ^ low)
        pos = ks_last.find(want, pos + 1)
    return sorted(out)


def find(header: bytes, body: bytes, candidates: Iterable[tuple[object, bytes]], budget=None):
    """The key of one protected TLS 1.3 application-data record ``header`` (5 bytes) + ``body``:
    ``(name, suite, decryptor)`` with ``decryptor.seq`` at the record's sequence number (the
    next ``decrypt`` opens it), ``name`` being the candidate's, or None.  ``candidates``: (name,
    traffic secret) pairs.  ``budget``: charged in AES blocks; refused work stops the search."""
    if len(body) < 18:
        return None
    ct = bytes(body[:-16])
    blocks = (len(body) + 15) // 16 + 1
    for name, secret in candidates:
        for suite in suites_for(secret):
            params = suite_params(suite)
            if params is None:
                continue
            dec = Tls13RecordDecryptor(params, secret)
            iv = dec.iv.to_bytes(12, "big")
            if params.cipher == "AES-GCM":
                if budget is not None and not budget.take(2 * GCM_SEQ):
                    return None
                key, _ = tls13_traffic_keys(secret, params)
                seqs: Iterable[int] = _gcm_candidates(key, iv, ct)
            else:
                seqs = range(CHACHA_SEQ)
            for s in seqs:
                if budget is not None and not budget.take(blocks):
                    return None
                dec.seq = s
                try:
                    ctype, _ = dec.decrypt(header, body)
                except DecryptError:
                    continue
                if ctype != APP_DATA and params.cipher == "AES-GCM":
                    continue
                dec.seq = s
                return name, suite, dec
    return None
