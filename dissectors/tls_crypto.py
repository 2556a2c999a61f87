"""TLS key schedules and record decryption (sans-IO: keys in, plaintext out).

- ``hkdf_extract``, ``hkdf_expand_label`` (RFC 8446 7.1; also what QUIC uses, RFC 9001 5.1;
  defined in ``dissectors.hkdf``),
  ``tls13_traffic_keys(secret, suite)``, ``tls13_next_secret`` (KeyUpdate).
- ``prf`` (TLS 1.0/1.1 MD5+SHA-1 and TLS 1.2 P_hash), ``tls12_key_block``.
- ``suite_params(cs)``: what decryption needs to know about a cipher suite, or None.
- ``Tls13RecordDecryptor`` / ``Tls12RecordDecryptor``: one direction's read state; ``decrypt``
  makes one AEAD (or one CBC + one HMAC) call per record and raises ``DecryptError`` on a
  bad tag/padding/MAC.

The AEAD/CBC primitives, HMAC and hashes are ``cryptography``'s: the standard library's
``hashlib``/``hmac`` would load the system's OpenSSL beside the one ``cryptography`` carries
(~2.5 ms of every start that decrypts; measured as fast per call, ~1.8 us per HMAC).
Secrets are never put into exceptions or messages.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.hmac import HMAC
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESCCM, AESGCM, ChaCha20Poly1305

from .dataclass_repr import dataclass_repr
from .hkdf import _HASHES, HASH_LEN, _hmac, _hname, hkdf_expand, hkdf_expand_label, hkdf_extract  # noqa: F401  (re-exported)
from .tls_suites import CIPHER_SUITES


def _hmac_ok(key: bytes, msg: bytes, h: str, tag: bytes) -> bool:
    """Whether ``tag`` is the HMAC-``h`` of ``msg`` (compared in constant time by HMAC.verify;
    not primitives.constant_time, which imports the standard library's hmac)."""
    m = HMAC(key, _HASHES[h])
    m.update(msg)
    try:
        m.verify(tag)
    except InvalidSignature:
        return False
    return True


def digest(h: str, data: bytes) -> bytes:
    """The ``h`` hash (a HASH_LEN name) of ``data``."""
    m = hashes.Hash(_HASHES[h])
    m.update(data)
    return m.finalize()


class DecryptError(Exception):
    """A record did not decrypt (bad tag, padding or MAC); carries no key material."""


AEAD_ERRORS = (InvalidTag, ValueError)  # what an AEAD's decrypt raises on a record that does not open


def derive_secret(secret: bytes, label, messages: bytes, hash="sha256") -> bytes:
    h = _hname(hash)
    return hkdf_expand_label(secret, label, digest(h, messages), HASH_LEN[h], h)


def _p_hash(secret: bytes, seed: bytes, length: int, h: str) -> bytes:
    out = b""
    a = seed
    while len(out) < length:
        a = _hmac(secret, a, h)
        out += _hmac(secret, a + seed, h)
    return out[:length]


def prf(secret: bytes, label: bytes, seed: bytes, length: int, version: int = 0x0303, hash="sha256") -> bytes:
    """TLS PRF: TLS 1.2 P_<hash>; TLS 1.0/1.1 P_MD5 XOR P_SHA1 over the halves of the secret."""
    if version >= 0x0303:
        return _p_hash(secret, label + seed, length, _hname(hash))
    half = (len(secret) + 1) // 2
    a = _p_hash(secret[:half], label + seed, length, "md5")
    b = _p_hash(secret[-half:], label + seed, length, "sha1")
    return bytes(x ^ y for x, y in zip(a, b))


_set = object.__setattr__  # (a frozen dataclass's __init__ sets its fields through object's)


@dataclass(init=False, frozen=True, repr=False)
class SuiteParams:
    """A cipher suite's record protection: cipher, key/IV/tag lengths, MAC and PRF hashes."""

    __repr__ = dataclass_repr  # (@dataclass's own text, not compiled at import: dissectors/dataclass_repr.py)

    id: int
    name: str
    cipher: str  # AES-GCM | CHACHA20-POLY1305 | AES-CCM | AES-CBC | CAMELLIA-CBC | NULL
    key_len: int
    iv_len: int  # fixed (implicit) IV length in the key block
    tag_len: int  # AEAD tag length (0 for CBC/NULL)
    mac: str | None  # HMAC hash for CBC/NULL suites
    prf: str  # PRF / HKDF hash
    tls13: bool = False

    # (@dataclass(init=False): written out, not compiled at every start; tests/test_dataclass_init.py)
    def __init__(self, id: int, name: str, cipher: str, key_len: int, iv_len: int, tag_len: int, mac: str | None, prf: str,
                 tls13: bool = False) -> None:
        _set(self, "id", id)
        _set(self, "name", name)
        _set(self, "cipher", cipher)
        _set(self, "key_len", key_len)
        _set(self, "iv_len", iv_len)
        _set(self, "tag_len", tag_len)
        _set(self, "mac", mac)
        _set(self, "prf", prf)
        _set(self, "tls13", tls13)

    @property
    def mac_len(self) -> int:
        return HASH_LEN[self.mac] if self.mac else 0

    @property
    def block(self) -> int:
        return 16 if self.cipher.endswith("CBC") else 0


TLS13_SUITES = {
    0x1301: ("AES-GCM", 16, 16, "sha256"),
    0x1302: ("AES-GCM", 32, 16, "sha384"),
    0x1303: ("CHACHA20-POLY1305", 32, 16, "sha256"),
    0x1304: ("AES-CCM", 16, 16, "sha256"),
    0x1305: ("AES-CCM", 16, 8, "sha256"),
}

_SUITE_PATTERN = r"_WITH_(AES_128|AES_256|CAMELLIA_128|CAMELLIA_256|CHACHA20|NULL)(?:_(GCM|CBC|CCM|CCM_8|POLY1305))?(?:_(SHA|SHA256|SHA384|MD5))?$"
_SUITE_RE: re.Pattern[str] | None = None  # compiled on first use (a suite before TLS 1.3): ~0.25 ms of every start else
_MACS = {"SHA": "sha1", "SHA256": "sha256", "SHA384": "sha384", "MD5": "md5", None: None}


def suite_params(cs: int | None) -> SuiteParams | None:
    """Parameters for a suite wirefall can decrypt, else None."""
    if cs is None:
        return None
    name = CIPHER_SUITES.get(cs, "")
    if cs in TLS13_SUITES:
        c, kl, tl, h = TLS13_SUITES[cs]
        return SuiteParams(cs, name, c, kl, 12, tl, None, h, True)
    global _SUITE_RE
    if _SUITE_RE is None:  # (two threads at once both compile it; each gets a whole pattern)
        _SUITE_RE = re.compile(_SUITE_PATTERN)
    m = _SUITE_RE.search(name)
    if not m or "EXPORT" in name or "KRB5" in name or name.startswith("SSL_"):
        return None
    algo, mode, mac = m.group(1), m.group(2), m.group(3)
    prf_hash = "sha384" if mac == "SHA384" else "sha256"
    if algo == "CHACHA20":
        if mode != "POLY1305":
            return None
        return SuiteParams(cs, name, "CHACHA20-POLY1305", 32, 12, 16, None, prf_hash)
    if algo == "NULL":
        if mode or mac is None:
            return None
        return SuiteParams(cs, name, "NULL", 0, 0, 0, _MACS[mac], prf_hash)
    kl = 16 if algo.endswith("128") else 32
    fam = "AES" if algo.startswith("AES") else "CAMELLIA"
    if mode == "GCM" and fam == "AES":
        return SuiteParams(cs, name, "AES-GCM", kl, 4, 16, None, prf_hash)
    if mode in ("CCM", "CCM_8") and fam == "AES":
        return SuiteParams(cs, name, "AES-CCM", kl, 4, 8 if mode == "CCM_8" else 16, None, prf_hash)
    if mode == "CBC" and mac:
        return SuiteParams(cs, name, fam + "-CBC", kl, 16, 0, _MACS[mac], prf_hash)
    return None


def _camellia():
    try:
        from cryptography.hazmat.decrepit.ciphers.algorithms import Camellia
    except ImportError:  # older cryptography
        Camellia = algorithms.Camellia
    return Camellia


def _aead(params: SuiteParams, key: bytes):
    if params.cipher == "AES-GCM":
        return AESGCM(key)
    if params.cipher == "CHACHA20-POLY1305":
        return ChaCha20Poly1305(key)
    if params.cipher == "AES-CCM":
        return AESCCM(key, tag_length=params.tag_len)
    raise ValueError("not an AEAD suite")


# ---------------------------------------------------------------- TLS 1.3


def tls13_traffic_keys(secret: bytes, params: SuiteParams) -> tuple[bytes, bytes]:
    h = params.prf
    return hkdf_expand_label(secret, b"key", b"", params.key_len, h), hkdf_expand_label(secret, b"iv", b"", 12, h)


def tls13_next_secret(secret: bytes, params: SuiteParams) -> bytes:
    """application_traffic_secret_N+1 (RFC 8446 7.2, KeyUpdate)."""
    return hkdf_expand_label(secret, b"traffic upd", b"", HASH_LEN[params.prf], params.prf)


class Tls13RecordDecryptor:
    """Read state of one direction under one traffic secret.  ``decrypt(header5, body)``
    returns ``(inner content type, plaintext)``; the sequence number advances only on success."""

    __slots__ = ("params", "secret", "aead", "iv", "seq", "tag_len")

    def __init__(self, params: SuiteParams, secret: bytes):
        self.params = params
        self.secret = secret
        key, iv = tls13_traffic_keys(secret, params)
        self.aead = _aead(params, key)
        self.iv = int.from_bytes(iv, "big")
        self.seq = 0
        self.tag_len = params.tag_len

    def next_generation(self) -> Tls13RecordDecryptor:
        return Tls13RecordDecryptor(self.params, tls13_next_secret(self.secret, self.params))

    def decrypt(self, header: bytes, body) -> tuple[int, bytes]:
        nonce = (self.iv ^ self.seq).to_bytes(12, "big")
        try:
            pt = self.aead.decrypt(nonce, body, header)  # bytes or a view: no copy of the record
        except (InvalidTag, ValueError):
            raise DecryptError("bad record tag") from None
        self.seq += 1
        # TLSInnerPlaintext: content || type || zeros
        i = len(pt) - 1
        while i >= 0 and pt[i] == 0:
            i -= 1
        if i < 0:
            raise DecryptError("record has no inner content type")
        return pt[i], pt[:i]


# ---------------------------------------------------------------- TLS 1.0 - 1.2


def tls12_key_block(master: bytes, client_random: bytes, server_random: bytes, params: SuiteParams, version: int) -> dict:
    """Split the key block: client/server MAC keys, write keys, IVs (RFC 5246 6.3)."""
    ml, kl = params.mac_len if params.tag_len == 0 else 0, params.key_len
    il = params.iv_len
    if params.cipher.endswith("CBC") and version >= 0x0302:
        il = 0  # TLS 1.1+: explicit per-record IVs, none in the key block
    n = 2 * (ml + kl + il)
    kb = prf(master, b"key expansion", server_random + client_random, n, version, params.prf)
    p = 0
    out = {}
    for name, ln in (("client_mac", ml), ("server_mac", ml), ("client_key", kl), ("server_key", kl), ("client_iv", il), ("server_iv", il)):
        out[name] = kb[p : p + ln]
        p += ln
    return out


class Tls12RecordDecryptor:
    """Read state of one direction, TLS 1.0-1.2.  ``decrypt(type, version, body)`` returns the
    plaintext; CBC suites check padding and the MAC (MAC-then-encrypt, or encrypt-then-MAC
    when the extension was negotiated)."""

    __slots__ = ("params", "version", "seq", "aead", "key", "iv", "iv_int", "mac_key", "etm", "mac", "mac_len", "tag_len", "algo")

    def __init__(self, params: SuiteParams, version: int, key: bytes, iv: bytes, mac_key: bytes, etm: bool = False):
        self.params = params
        self.version = version
        self.seq = 0
        self.key = key
        self.iv = iv
        self.mac_key = mac_key
        self.etm = etm
        # HMAC hash of the CBC/NULL paths; suite_params names one for every such suite, and
        # AEAD suites (the only ones without) never reach an HMAC
        self.mac: str = params.mac or ""
        self.mac_len = params.mac_len
        self.tag_len = params.tag_len
        self.aead = _aead(params, key) if params.tag_len else None
        self.iv_int = int.from_bytes(iv, "big") if params.cipher == "CHACHA20-POLY1305" else 0
        self.algo = algorithms.AES if params.cipher == "AES-CBC" else _camellia() if params.cipher == "CAMELLIA-CBC" else None

    def _ad(self, ctype: int, version: int, length: int) -> bytes:
        return self.seq.to_bytes(8, "big") + bytes((ctype, version >> 8, version & 0xFF)) + length.to_bytes(2, "big")

    def decrypt(self, ctype: int, version: int, body) -> bytes:
        c = self.params.cipher
        body = bytes(body)
        if self.aead is not None:
            if c == "CHACHA20-POLY1305":
                nonce = (self.iv_int ^ self.seq).to_bytes(12, "big")
                ct = body
            else:
                if len(body) < 8 + self.tag_len:
                    raise DecryptError("record shorter than nonce and tag")
                nonce = self.iv + body[:8]
                ct = body[8:]
            if len(ct) < self.tag_len:
                raise DecryptError("record shorter than the tag")
            try:
                pt = self.aead.decrypt(nonce, ct, self._ad(ctype, version, len(ct) - self.tag_len))
            except (InvalidTag, ValueError):
                raise DecryptError("bad record tag") from None
            self.seq += 1
            return pt
        ml = self.mac_len
        if c == "NULL":
            if len(body) < ml:
                raise DecryptError("record shorter than its MAC")
            pt = body[: len(body) - ml]
            if not _hmac_ok(self.mac_key, self._ad(ctype, version, len(pt)) + pt, self.mac, body[len(pt) :]):
                raise DecryptError("bad record MAC")
            self.seq += 1
            return pt
        bs = 16
        explicit = self.version >= 0x0302
        if self.etm:
            if len(body) < ml + bs or (len(body) - ml) % bs:
                raise DecryptError("bad CBC record length")
            enc = body[: len(body) - ml]
            if not _hmac_ok(self.mac_key, self._ad(ctype, version, len(enc)) + enc, self.mac, body[len(enc) :]):
                raise DecryptError("bad record MAC")
        else:
            enc = body
            if len(enc) % bs or len(enc) < (bs if explicit else 0) + bs:
                raise DecryptError("bad CBC record length")
        if explicit:
            iv, ct = enc[:bs], enc[bs:]
        else:
            iv, ct = self.iv, enc
            self.iv = enc[-bs:]  # TLS 1.0: the last ciphertext block chains into the next record
        algo = self.algo
        assert algo is not None  # a CBC suite: AES or Camellia (suite_params), set in __init__
        d = Cipher(algo(self.key), modes.CBC(iv)).decryptor()
        pt = d.update(ct) + d.finalize()
        pad = pt[-1]
        if pad + 1 > len(pt) or pt[-1 - pad : -1].count(pad) != pad:
            raise DecryptError("bad CBC padding")
        pt = pt[: len(pt) - pad - 1]
        if not self.etm:
            if len(pt) < ml:
                raise DecryptError("record shorter than its MAC")
            data = pt[: len(pt) - ml]
            if not _hmac_ok(self.mac_key, self._ad(ctype, version, len(data)) + data, self.mac, pt[len(data) :]):
                raise DecryptError("bad record MAC")
            pt = data
        self.seq += 1
        return pt


def tls12_decryptors(master: bytes, client_random: bytes, server_random: bytes, params: SuiteParams, version: int, etm: bool = False):
    """(client→server, server→client) read states for a TLS 1.0-1.2 session."""
    kb = tls12_key_block(master, client_random, server_random, params, version)
    etm = etm and params.cipher.endswith("CBC")
    return (
        Tls12RecordDecryptor(params, version, kb["client_key"], kb["client_iv"], kb["client_mac"], etm),
        Tls12RecordDecryptor(params, version, kb["server_key"], kb["server_iv"], kb["server_mac"], etm),
    )
