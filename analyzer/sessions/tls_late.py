"""TLS 1.3 over TCP on a connection the capture joined mid-way: keys by trial.

A browser keeps its HTTP/2 connections open across page loads, so a capture started after the
first load joins them mid-way: no ClientHello names the key-log line, no ServerHello the cipher
suite, no ALPN the protocol inside.  ``TlsSession`` calls ``trial(session, direction, record)``
for the first protected application-data records of each direction of such a connection
(``TRIAL_RECORDS``); each TLS 1.3 traffic secret of a client random no ClientHello of the
capture claimed (``ctx.shared["claimed_client_randoms"]``, which QUIC shares) is tried with
``dissectors.tls_trial.find``, which also finds the record's sequence number.  The record that
opens sets the connection's TLS 1.3 state (suite, client random, the direction's decryptor),
claims its client random, and says so in a note (``NoteKind.KEYS_BY_TRIAL``); the other
direction then needs only its sequence number.  The plaintext, with no ALPN, goes to the
sniffer, which recognises HTTP/2 frames seen mid-stream (``LenientHpack``) or HTTP/1.x.

Work is bounded by the budget ``tls_trial`` (AES blocks computed, per connection and per
capture, in ``DEFAULT_LIMITS``).
"""
from __future__ import annotations

from wirefall.dissectors import tls as T
from wirefall.dissectors import tls_trial
from wirefall.dissectors.tls_crypto import suite_params

from ..model import Note, NoteKind

TRIAL_RECORDS = 3  # protected records per direction tried before giving up
LABELS = ("CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0")
KEY_APP = 3  # sessions.tls.KEY_APP (TLS 1.3 traffic secret 0)


def trial(s, d: int, rec: T.Record):
    """The decryptor for ``rec`` (direction ``d``) of TlsSession ``s`` found by trial, or None."""
    ctx, conn = s.ctx, s.conn
    kl = ctx.keylog
    tries = getattr(s, "late_tries", None)
    if tries is None:
        tries = s.late_tries = [0, 0]
    if kl is None or len(kl) == 0 or tries[d] >= TRIAL_RECORDS or len(rec.body) < 18:
        return None
    tries[d] += 1
    label = LABELS[d]
    cr = s.info.client_random
    claimed = ctx.shared.setdefault("claimed_client_randoms", set())
    crs = [cr] if cr is not None else [c for c in kl.client_randoms(label) if c not in claimed]
    cands = ((c, sec) for c in crs for sec in (kl.get(label, c),) if sec)
    hdr = bytes([rec.type]) + rec.version.to_bytes(2, "big") + len(rec.body).to_bytes(2, "big")
    hit = tls_trial.find(hdr, bytes(rec.body), cands, ctx.budget("tls_trial", conn))
    if hit is None:
        return None
    found_cr, suite, dec = hit
    info = s.info
    if cr is None:
        claimed.add(bytes(found_cr))
        info.client_random = bytes(found_cr)
        info.version = "TLS 1.3"
        info.cipher_suite_id = suite
        info.cipher_suite = T.suite_name(suite)
        info.reason = None
        s.tls13 = True
        s.version = 0x0304
        s.params = suite_params(suite)
        ref = s.ref
        ref.tls13, ref.version, ref.cipher_suite, ref.client_random = True, 0x0304, suite, bytes(found_cr)
        ctx.note(conn, Note(NoteKind.KEYS_BY_TRIAL, rec.packet, d))
    s.dec[d] = s._tag(dec, KEY_APP)
    return dec
