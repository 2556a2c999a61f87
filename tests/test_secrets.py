"""Secrets: key-log contents never reach an output, and HAR leaves out credentials.

Every secret of the sample key logs (and of the pcapng Decryption Secrets Block of the
ngtcp2 capture) is searched for — as lower- and upper-case hex, raw bytes and base64 — in
everything wirefall writes: the CLI's stdout/stderr (``--debug`` too) for every command,
HAR / JSON / qlog / HTML / SVG / PNG exports, the zstd analysis cache, connection notes,
warnings and error messages.  The search itself is checked to work (a planted secret is
found).  Cookie / Set-Cookie / Authorization values come from tshark on the same capture
(made with curl and nginx, ``scripts/robustness/make_secret_captures.sh``).
"""
from __future__ import annotations

import base64
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SAMPLES = ROOT / "sample_captures"
SHARED = ROOT.parent / "shared" / "captures"

from fuzz import corpus  # noqa: E402

KEYED = [
    ("secrets/cookies-h2.pcap", "secrets/cookies-h2.keys"),
    ("quic/aioquic-h3.pcap", "quic/aioquic-h3.keys"),
    ("tls/tls12_aes128gcm.pcap", "tls/tls12_aes128gcm.keys"),
    ("spdy/spdy3.1-tls.pcap", "spdy/spdy3.1-tls.keys"),
    ("tls/tls13_keyupdate.pcap", "tls/tls13_keyupdate.keys"),
]


def _secrets_of(text: str) -> list[bytes]:
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and not line.startswith("#"):
            out.append(bytes.fromhex(parts[2]))
    return out


def _forms(secret: bytes) -> list[bytes]:
    h = secret.hex()
    return [secret, h.encode(), h.upper().encode(), base64.b64encode(secret), base64.b64encode(secret).rstrip(b"=")[:40],
            h[:32].encode()]  # a half of the hex too: no partial leak either


def leaks(blob: bytes | str, secrets: list[bytes]) -> list[str]:
    if isinstance(blob, str):
        blob = blob.encode("utf-8", "surrogateescape")
    low = blob.lower()
    found = []
    for s in secrets:
        for f in _forms(s):
            if f in blob or (f.isascii() and f.lower() in low and len(f) >= 32):
                found.append(s.hex()[:16] + "…")
                break
    return found


def _keyed(rel_cap: str, rel_keys: str) -> tuple[Path, Path]:
    c, k = SAMPLES / rel_cap, SAMPLES / rel_keys
    if not c.exists() or not k.exists():
        pytest.skip(f"{rel_cap} missing")
    return c, k


def test_leak_search_finds_a_planted_secret():
    c, k = _keyed(*KEYED[0])
    secrets = _secrets_of(k.read_text())
    assert len(secrets) >= 4
    s = secrets[0]
    assert leaks(b"note: " + s.hex().encode(), secrets)
    assert leaks(b"x" + s.hex().upper().encode(), secrets)
    assert leaks(b"\x00" + s + b"\x00", secrets)
    assert leaks(base64.b64encode(s), secrets)
    assert not leaks(b"nothing here", secrets)


@pytest.mark.parametrize("rel_cap,rel_keys", KEYED)
def test_analysis_and_exports_hold_no_key_material(rel_cap, rel_keys, tmp_path):
    from wirefall.analyzer import cache
    from wirefall.analyzer.export import har, model_json, qlog
    from wirefall.analyzer.jsonout import dumps

    c, k = _keyed(rel_cap, rel_keys)
    secrets = _secrets_of(k.read_text())
    an = corpus.analyze_bytes(c.read_bytes(), k.read_text(), keep=True)
    # decryption really happened (the test would be empty otherwise)
    assert any(f.protocol not in ("tls", "quic") for f in an.frames) or rel_cap.startswith("tls/"), "nothing decrypted"
    if rel_cap.startswith("tls/"):
        assert any((f.fields or {}).get("decrypted") for f in an.frames), "nothing decrypted"
    texts = {
        "notes": "\n".join(n for conn in an.connections for n in conn.notes),
        "warnings": "\n".join(an.warnings),
        "model_json": dumps(model_json(an)),
        "har": json.dumps(har(an)),
        "har_sensitive": json.dumps(har(an, include_sensitive=True)),
        "qlog": json.dumps(qlog(an)),
        "frames_repr": repr(an.frames),
        "connections_repr": repr(an.connections),
    }
    for name, blob in texts.items():
        assert not leaks(blob, secrets), f"{rel_cap}: key material in {name}"
    # the cache: stored blob decompressed holds none; the pickled analysis without the key log neither
    blob = cache.dumps(an)
    raws = cache.unpack(blob)  # the summary part, then the body's parts (the frames first)
    assert len(raws[0]) > 100 and len(raws[1]) > 100 and len(raws) == 1 + len(cache.BODY_PARTS)
    for raw in raws:
        assert not leaks(raw, secrets), f"{rel_cap}: key material in the cache entry"
    kl, an.keylog = an.keylog, None
    try:
        assert not leaks(pickle.dumps(an), secrets)
    finally:
        an.keylog = kl


def test_cache_refuses_an_analysis_carrying_a_secret():
    from wirefall.analyzer import cache

    c, k = _keyed(*KEYED[0])
    an = corpus.analyze_bytes(c.read_bytes(), k.read_text())
    secret = an.keylog.secret_values()[0]
    an.connections[0].notes.append(f"packet 1: debug {bytes(secret).hex()}")
    with pytest.raises(ValueError):
        cache.dumps(an)
    assert cache.store("0" * 64, an) is False


def test_cache_secret_search_finds_every_form():
    """The cache's key-material check: a secret raw, in lower-, upper- or mixed-case hex, in a
    bytes blob or a view of one; not a secret cut short, nor one shorter than 16 bytes."""
    import os

    from wirefall.analyzer.cache import _contains_secret

    secrets = [bytes(range(i, i + 48)) for i in (0, 60, 120)] + [bytes(range(200, 232))]
    base = b"".join(b"GET /x/%s %d\n" % (os.urandom(20).hex().encode(), i) for i in range(20000))
    assert not _contains_secret(base, secrets)
    s, short = secrets[1], secrets[3]
    mixed = "".join(c.upper() if i % 3 else c for i, c in enumerate(s.hex())).encode()
    for form in (s, s.hex().encode(), s.hex().upper().encode(), mixed, short.hex().encode()):
        blob = base[:5000] + form + base[5000:]
        assert _contains_secret(blob, secrets) and _contains_secret(memoryview(blob), secrets), form
    assert not _contains_secret(base + s.hex().encode()[:-2], secrets)
    assert not _contains_secret(base + bytes(8), [bytes(8)])  # (too short to tell from data)
    # the hex forms are looked for a window at a time: one that straddles two windows is found
    from wirefall.analyzer import cache

    old = cache._SECRET_WINDOW
    cache._SECRET_WINDOW = 256
    try:
        for at in range(200, 300, 7):
            assert _contains_secret(b"." * at + s.hex().upper().encode() + b"." * 50, secrets), at
        assert not _contains_secret(b"." * 250 + s.hex().encode()[:-1] + b"." * 50, secrets)
    finally:
        cache._SECRET_WINDOW = old


def test_cache_refuses_a_secret_in_frames_stored_in_chunks():
    """From 2 × FRAME_CHUNK frames the frames are stored in chunks, each compressed on its own:
    the key-material check must read each chunk before it is compressed (it was made on the
    frames part only, after its chunks were compressed, where no secret can be seen)."""
    import copy

    from wirefall.analyzer import cache

    c, k = _keyed(*KEYED[0])
    an = corpus.analyze_bytes(c.read_bytes(), k.read_text())
    secret = bytes(an.keylog.secret_values()[0])
    base = list(an.frames)
    frames = [copy.copy(base[i % len(base)]) for i in range(2 * cache.FRAME_CHUNK + 5)]
    an.frames = frames
    cache.dumps(an)  # (without the secret: stored)
    frames[-1].headers = [("x-debug", secret.hex())]
    with pytest.raises(ValueError):
        cache.dumps(an)
    assert cache.store("0" * 64, an) is False


def test_pcapng_dsb_secrets_stay_out_of_outputs():
    from wirefall.analyzer.capture import DSB_TLS_KEYLOG, CaptureInfo, read_capture
    from wirefall.analyzer.export import har, model_json, qlog
    from wirefall.analyzer.jsonout import dumps
    from wirefall.analyzer.pipeline import analyze

    p = SHARED / "pcap2qlog" / "ngtcp2-29-dsb.pcapng"
    if not p.exists():
        pytest.skip("ngtcp2 DSB capture not present")
    info = CaptureInfo()
    for _ in read_capture(str(p), info):
        pass
    secrets = [s for t, d in info.secrets if t == DSB_TLS_KEYLOG for s in _secrets_of(d.decode())]
    assert len(secrets) >= 4
    an = analyze(str(p), keylogs=[])
    assert any(f.protocol.startswith("h3") for f in an.frames), "the DSB keys were not used"
    for name, blob in {"json": dumps(model_json(an)), "har": json.dumps(har(an, include_sensitive=True)),
                       "qlog": json.dumps(qlog(an)), "notes": repr([c.notes for c in an.connections]),
                       "warnings": repr(an.warnings)}.items():
        assert not leaks(blob, secrets), f"DSB secret in {name}"


def test_malformed_key_log_lines_are_not_echoed():
    from wirefall.analyzer.keylog import KeyLog

    secret = bytes(range(48))
    cr = bytes(range(100, 132))
    bad = "\n".join([
        f"CLIENT_RANDOM {cr.hex()} {secret.hex()} extra",  # too many fields
        f"CLIENT_RANDOM {cr.hex()[:-1]}Z {secret.hex()}",  # not hex
        f"CLIENT_RANDOM {cr.hex()} {secret.hex()}00",  # wrong length
        f"CLIENT_TRAFFIC_SECRET_0 {cr.hex()}",  # too few
    ])
    kl = KeyLog()
    kl.add_text(bad, "test.keys")
    assert kl.warnings == ["test.keys: 4 lines not understood, the first at line 1 (2 malformed: not LABEL CLIENT_RANDOM "
                           "SECRET, 1 with a value that is not hex, 1 with a value of the wrong length); skipped"]
    assert not leaks("\n".join(kl.warnings), [secret])
    assert all(cr.hex() not in w for w in kl.warnings)


# ------------------------------------------------------------------ the CLI, every command

def _cli(args, env, cwd):
    return subprocess.run([sys.executable, "-m", "wirefall", *args], capture_output=True, env=env, cwd=cwd, timeout=300)


@pytest.mark.parametrize("rel_cap,rel_keys", [KEYED[0], KEYED[1]])
def test_cli_outputs_hold_no_key_material(rel_cap, rel_keys, tmp_path):
    c, k = _keyed(rel_cap, rel_keys)
    secrets = _secrets_of(k.read_text())
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), SSLKEYLOGFILE="", PYTHONPATH=str(ROOT))
    kargs = ["--keylog", str(k), "--debug", "--cache"]
    runs = {}
    for cmd in (["summary", "--json"], ["summary"], ["packets"], ["frames", "--json"], ["frames"], ["requests", "--json"],
                ["requests"], ["stats", "--json"], ["stats"]):
        r = _cli([cmd[0], *kargs, *cmd[1:], str(c)], env, ROOT)
        assert r.returncode == 0, (cmd, r.stderr[-500:])
        runs[" ".join(cmd)] = r.stdout + r.stderr
    assert b"GET" in runs["requests"] or b"/" in runs["requests"]
    outs = []
    for fmt in ("har", "json", "qlog", "html", "svg") + (("png",) if rel_cap == KEYED[0][0] else ()):
        o = tmp_path / f"out.{fmt}"
        r = _cli(["export", *kargs, "-o", str(o), "--include-sensitive", str(c)], env, ROOT)
        assert r.returncode == 0 and o.exists(), (fmt, r.stderr[-500:])
        runs[f"export {fmt} (stdout/stderr)"] = r.stdout + r.stderr
        outs.append(o)
    for name, blob in runs.items():
        assert not leaks(blob, secrets), f"key material in `wirefall {name}` output"
    for o in outs:
        assert not leaks(o.read_bytes(), secrets), f"key material in {o.name}"
    # cache files: entries with their two pickles decompressed, and every other file as it is
    from wirefall.analyzer import cache

    cached = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert any(p.name.endswith(cache.SUFFIX) for p in cached), "--cache stored nothing"
    for p in cached:
        data = p.read_bytes()
        if p.name.endswith(cache.SUFFIX):
            data = b"".join(cache.unpack(data)) + data
        assert not leaks(data, secrets), f"key material in cache file {p.name}"


def test_cli_error_on_bad_key_log_names_no_secret(tmp_path):
    c, k = _keyed(*KEYED[0])
    lines = k.read_text().splitlines()
    secrets = _secrets_of(k.read_text())
    bad = tmp_path / "bad.keys"
    bad.write_text("\n".join(ln + " trailing" for ln in lines) + "\n" + "\n".join(ln[:-3] + "zzz" for ln in lines))
    env = dict(os.environ, SSLKEYLOGFILE="", PYTHONPATH=str(ROOT))
    r = _cli(["requests", "--keylog", str(bad), "--debug", str(c)], env, ROOT)
    assert not leaks(r.stdout + r.stderr, secrets)
    # wrong keys: decryption fails, the notes say so without the key
    wrong = tmp_path / "wrong.keys"
    wrong.write_text("\n".join(f"{ln.split()[0]} {ln.split()[1]} {'ab' * (len(ln.split()[2]) // 2)}" for ln in lines if len(ln.split()) == 3))
    r = _cli(["summary", "--json", "--keylog", str(wrong), "--debug", str(c)], env, ROOT)
    assert r.returncode == 0
    assert not leaks(r.stdout + r.stderr, secrets + [bytes([0xAB]) * 32, bytes([0xAB]) * 48])


# ------------------------------------------------------------------ HAR and credentials

def _tshark_fields(cap: Path, keys: Path | None, *fields) -> list[list[str]]:
    if not shutil.which("tshark"):
        pytest.skip("tshark not installed")
    args = ["tshark", "-r", str(cap), "-T", "fields"] + (["-o", f"tls.keylog_file:{keys}"] if keys else [])
    for f in fields:
        args += ["-e", f]
    out = subprocess.run(args, capture_output=True, text=True, timeout=120).stdout
    return [ln.split("\t") for ln in out.splitlines() if ln.strip("\t")]


def _credentials(cap: Path, keys: Path | None) -> dict[str, str]:
    """Cookie, Authorization and Set-Cookie values as tshark decodes them."""
    pre = "http" if keys is None else "http2.headers"
    rows = _tshark_fields(cap, keys, f"{pre}.cookie", f"{pre}.authorization", f"{pre}.set_cookie")
    got = {}
    for r in rows:
        for name, v in zip(("cookie", "authorization", "set-cookie"), r):
            if v:
                got[name] = v
    return got


@pytest.mark.parametrize("rel_cap,rel_keys", [("secrets/cookies-h1.pcap", None), ("secrets/cookies-h2.pcap", "secrets/cookies-h2.keys")])
def test_har_leaves_out_cookie_set_cookie_authorization(rel_cap, rel_keys, tmp_path):
    from wirefall.analyzer.export import har

    cap = SAMPLES / rel_cap
    keys = SAMPLES / rel_keys if rel_keys else None
    if not cap.exists():
        pytest.skip("secrets sample missing")
    creds = _credentials(cap, keys)
    assert set(creds) == {"cookie", "authorization", "set-cookie"}, creds
    an = corpus.analyze_bytes(cap.read_bytes(), keys.read_text() if keys else None, keep=True)
    h = har(an)
    entries = h["log"]["entries"]
    assert entries, "no HAR entries"
    blob = json.dumps(h)
    for name, value in creds.items():
        assert value not in blob and value.split(";")[0] not in blob, f"{name} in default HAR"
        assert value.split("=", 1)[-1].split(";")[0] not in blob
    for e in entries:
        # kept by name, the value left out (review 31: before, dropped without a word), and named in the entry's comment
        for side in ("request", "response"):
            for x in e[side]["headers"]:
                if x["name"].lower() in {"cookie", "set-cookie", "authorization"}:
                    assert x["value"] == "<left out: sensitive>" and x["name"] in e["comment"], (side, x)
        assert e["request"]["cookies"] == [] and e["response"]["cookies"] == []
    assert {x["name"].lower() for e in entries for side in ("request", "response") for x in e[side]["headers"]
            if x["value"] == "<left out: sensitive>"} == {"cookie", "set-cookie", "authorization"}
    # the rest of the headers are there (the HAR is not just empty)
    assert any(x["name"].lower() in ("user-agent",) for e in entries for x in e["request"]["headers"])
    # asked for: all three, equal to tshark's values
    hs = har(an, include_sensitive=True)
    req = {x["name"].lower(): x["value"] for e in hs["log"]["entries"] for x in e["request"]["headers"]}
    resp = {x["name"].lower(): x["value"] for e in hs["log"]["entries"] for x in e["response"]["headers"]}
    assert req["cookie"] == creds["cookie"] and req["authorization"] == creds["authorization"]
    assert resp["set-cookie"] == creds["set-cookie"]
    ck = hs["log"]["entries"][0]["request"]["cookies"]
    assert ck == [{"name": "wf_client", "value": "COOKIE-fedcba9876543210"}]
    # and the CLI: default export leaves them out, --include-sensitive keeps them
    env = dict(os.environ, SSLKEYLOGFILE="", PYTHONPATH=str(ROOT))
    kargs = ["--keylog", str(keys)] if keys else []
    o1, o2 = tmp_path / "a.har", tmp_path / "b.har"
    assert _cli(["export", *kargs, "-o", str(o1), str(cap)], env, ROOT).returncode == 0
    assert _cli(["export", *kargs, "--include-sensitive", "-o", str(o2), str(cap)], env, ROOT).returncode == 0
    assert b"COOKIE-fedcba9876543210" not in o1.read_bytes() and b"SETCOOKIE-0123456789abcdef" not in o1.read_bytes()
    assert b"YWxpY2U6QVVUSC13b25kZXJsYW5k" not in o1.read_bytes()
    assert b"COOKIE-fedcba9876543210" in o2.read_bytes() and b"SETCOOKIE-0123456789abcdef" in o2.read_bytes()


# ------------------------------------------------------------------ web app rules

WEB_CAP = SAMPLES / "secrets" / "cookies-h2.pcap"
WEB_KEYS = SAMPLES / "secrets" / "cookies-h2.keys"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> list[str]:
    """Local addresses (hex, as /proc/net/tcp{,6} show them) listening on ``port``."""
    out = []
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        for c in Path(f).read_text().splitlines()[1:]:
            cols = c.split()
            if cols[1].endswith(f":{port:04X}") and cols[3] == "0A":
                out.append(cols[1].split(":")[0])
    return out


class _Server:
    def __init__(self, tmp_path, *extra):
        import time
        import urllib.error
        import urllib.request

        self.port = _free_port()
        env = dict(os.environ, TMPDIR=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONUNBUFFERED="1",
                   SSLKEYLOGFILE="", PYTHONPATH=str(ROOT))
        self.p = subprocess.Popen([sys.executable, "-m", "wirefall", "web", str(WEB_CAP), "--keylog", str(WEB_KEYS),
                                   "--port", str(self.port), "--upload-limit", "1", *extra],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(ROOT))
        self.base = f"http://127.0.0.1:{self.port}"
        for _ in range(200):
            try:
                urllib.request.urlopen(self.base + "/", timeout=5).read()
                return
            except urllib.error.HTTPError:  # it answers (403: not on loopback, it wants its access token)
                return
            except OSError:
                if self.p.poll() is not None:
                    raise RuntimeError(self.p.stderr.read()[-500:]) from None
                time.sleep(0.1)
        raise RuntimeError("web server did not start")

    def stop(self):
        import signal

        self.p.send_signal(signal.SIGTERM)
        try:
            out, err = self.p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            out, err = self.p.communicate()
        return out + err


def _need_web():
    if not (ROOT / "ui" / "web" / "__init__.py").exists():
        pytest.skip("web app not present")
    if not WEB_CAP.exists():
        pytest.skip("secrets sample missing")


def test_web_binds_loopback_by_default_and_refuses_big_and_stray_requests(tmp_path):
    """Default bind is 127.0.0.1 only; a POST larger than the upload limits (here 1 MB capture, 16 MB
    key log, as base64) is refused by the
    server before a callback runs (413); paths that try to leave the app's routes never
    return a file; no key material in anything the server sent or logged."""
    import urllib.error
    import urllib.request

    _need_web()
    srv = _Server(tmp_path)
    try:
        addrs = _listening(srv.port)
        assert addrs and all(a in ("0100007F", "00000000000000000000000001000000") for a in addrs), addrs
        big = b'{"output":"x","inputs":[{"id":"up-capture","property":"contents","value":"data:;base64,' + b"A" * (40 << 20) + b'"}]}'
        req = urllib.request.Request(srv.base + "/_dash-update-component", data=big, method="POST",
                                     headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as ei:
            urllib.request.urlopen(req, timeout=30)
        assert ei.value.code == 413
        secret_file = tmp_path / "not-served.txt"
        secret_file.write_text("TOP-SECRET-NOT-SERVED")
        rel = os.path.relpath(secret_file, "/")
        bodies = []
        for path in (f"/{secret_file}", f"/../../../../{rel}", f"/assets/../../../../{rel}", f"/_dash-component-suites/../../../../../{rel}",
                     f"/_dash-component-suites/dash/..%2f..%2f..%2f..%2f..%2f..%2f{rel}", "/etc/passwd", f"/_dash-layout?file={secret_file}",
                     f"/{WEB_KEYS}", "/_dash-component-suites/dash/../../../../../../etc/passwd"):
            try:
                bodies.append(urllib.request.urlopen(srv.base + path, timeout=10).read())
            except urllib.error.HTTPError as e:
                bodies.append(e.read())
        for b in bodies:
            assert b"TOP-SECRET-NOT-SERVED" not in b and b"root:x:0:0" not in b
        secrets = _secrets_of(WEB_KEYS.read_text())
        layout = urllib.request.urlopen(srv.base + "/_dash-layout", timeout=10).read()
        assert not leaks(layout + b"".join(bodies), secrets)
    finally:
        log = srv.stop()
    assert not leaks(log, _secrets_of(WEB_KEYS.read_text()))


def test_web_host_option_binds_what_was_asked(tmp_path):
    _need_web()
    srv = _Server(tmp_path, "--host", "0.0.0.0")
    try:
        assert _listening(srv.port) == ["00000000"]
    finally:
        srv.stop()


HOSTILE_NAMES = ["../../../../tmp/wf-evil-{}.pcap", "/tmp/wf-evil-{}.pcap", "..\\..\\wf-evil-{}.pcap", "wf-evil-{}\x00.pcap",
                 "C:\\Windows\\wf-evil-{}.pcap", "~/wf-evil-{}.pcap", "wf-evil-{}/" + "x" * 300, "$(touch wf-evil-{})"]


def test_web_upload_names_are_never_paths(tmp_path, monkeypatch):
    import secrets as _s

    _need_web()
    from wirefall.ui.web import WebState

    monkeypatch.chdir(tmp_path)
    st = WebState(upload_limit=1 << 20, use_cache=False)
    try:
        data = "data:application/octet-stream;base64," + base64.b64encode(WEB_CAP.read_bytes()).decode()
        for pattern in HOSTILE_NAMES:
            tag = _s.token_hex(4)
            name = pattern.format(tag)
            staged = st.stage_upload("capture", name, data)
            kind, path, shown, size = st._staged[staged["token"]]
            assert Path(path).parent == Path(st.tmpdir) and Path(path).name.startswith("upload-")
            assert "/" not in shown and "\\" not in shown and "\x00" not in shown and len(shown) <= 120
            # nothing named after the upload appeared anywhere we can look
            for d in (Path("/tmp"), tmp_path, Path.home(), Path(st.tmpdir)):
                assert not [p for p in d.glob(f"*wf-evil-{tag}*")], (name, d)
        assert {p.suffix for p in Path(st.tmpdir).iterdir()} == {".cap"}
    finally:
        st.close()


def test_web_reads_only_named_and_uploaded_files(tmp_path, monkeypatch):
    """Drive every callback with hostile ids (paths, '..', other users' files) and record every
    file the process opens: only the named capture and key log, the private upload folder,
    the cache folder and Python's own modules are touched."""
    import builtins
    import io

    _need_web()
    from wirefall.ui.web import WebState
    from wirefall.ui.web import app as A

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    opened: list[str] = []
    real_open, real_os_open = builtins.open, os.open

    def spy_open(file, *a, **kw):
        if isinstance(file, (str, bytes, os.PathLike)):
            opened.append(os.fsdecode(file))
        return real_open(file, *a, **kw)

    def spy_os_open(file, *a, **kw):
        opened.append(os.fsdecode(file))
        return real_os_open(file, *a, **kw)

    st = WebState(upload_limit=1 << 20, use_cache=True)
    try:
        e = st.add_file(str(WEB_CAP), keylogs=[str(WEB_KEYS)], name="cookies-h2.pcap")
        st.wait(e.id)
        monkeypatch.setattr(builtins, "open", spy_open)
        monkeypatch.setattr(io, "open", spy_open)
        monkeypatch.setattr(os, "open", spy_os_open)
        hostile = ["/etc/passwd", "../../etc/passwd", str(WEB_KEYS), str(tmp_path / "x.pcap"), "0", "", None, e.id]
        for cid in hostile:
            for call in (lambda: A.cb_filter_options(st, cid, 1),
                         lambda: A.cb_waterfall(st, cid, 1, None, None, None, None, ""),
                         lambda: A.cb_connections(st, cid, 1, "connections"),
                         lambda: A.cb_stats(st, cid, 1, "stats"),
                         lambda: A.cb_packet_rows(st, {"startRow": 0, "endRow": 20}, cid),
                         lambda: A.cb_packet_detail(st, cid, [{"no": 1}], None),
                         lambda: A.cb_compare(st, 1, cid, e.id),
                         lambda: A.cb_open(st, 1, {"token": cid, "name": "x"}, {"token": "/etc/passwd"})):
                try:
                    call()
                except Exception:  # noqa: BLE001 - a rejected id may raise in Dash's PreventUpdate etc.; the point is what was opened
                    pass
    finally:
        monkeypatch.undo()
        st.close()
    allowed = (str(WEB_CAP), str(WEB_KEYS), str(tmp_path / "cache"), tempfile_dir(), sys.prefix, sys.base_prefix, str(ROOT / "ui"),
               str(ROOT / "analyzer"), str(ROOT / "dissectors"), "/usr/lib/python3", "/usr/share/zoneinfo", "/dev/")
    bad = sorted({p for p in opened if not os.path.abspath(p).startswith(allowed)})
    assert not bad, bad
    assert str(WEB_CAP) in opened, "the spy saw no read of the named capture: the callbacks did not run"
    assert not [p for p in opened if "passwd" in p or p.endswith("x.pcap")]


def tempfile_dir() -> str:
    import tempfile

    return tempfile.gettempdir()
