"""Live capture (issue 27): ``wirefall tui -i`` as a person uses it, on real clients and servers.

Inside a network namespace the test makes (root only), real servers — nginx (HTTP/1.1 and HTTP/2
over TLS) and aioquic's HTTP/3 server — answer real clients: curl over HTTP/1.1 and HTTP/2 with
SSLKEYLOGFILE, nghttp, and headless Chromium for an HTTP/3 page. The TUI (Textual's pilot) captures
on the namespace's loopback with dumpcap; each request must appear in its waterfall, decrypted,
within a second of the client's end; then Ctrl+E stops, Ctrl+S saves, and the saved pcapng (its
keys in a Decryption Secrets Block) reopens with the same requests.
"""
from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from wirefall.analyzer.keylog import KeyLog
from wirefall.analyzer.live import FollowFile, KeyFollower, KeyWait, LiveSession, interfaces, secrets_for

ROOT = Path(__file__).resolve().parent.parent
SAC = ROOT / "scripts" / "lab" / "serve_and_capture.py"
H3_SERVER = ROOT / "scripts" / "lab" / "h3_server.py"


# ------------------------------------------------------------------ units (no capture)

def test_follow_file_waits_for_bytes_until_the_writer_is_done(tmp_path):
    p = tmp_path / "grow"
    p.write_bytes(b"ab")
    done = {"v": False}
    idles = []
    f = FollowFile(str(p), lambda: done["v"], lambda: idles.append(1))
    assert f.read(10) == b"ab"
    import threading

    def later():
        time.sleep(0.15)
        with open(p, "ab") as w:
            w.write(b"cd")
        time.sleep(0.15)
        done["v"] = True

    threading.Thread(target=later).start()
    t0 = time.monotonic()
    assert f.read(10) == b"cd" and time.monotonic() - t0 >= 0.1 and idles  # waited, polling the keys
    assert f.read(10) == b""  # the writer is done: end of file
    f.close()


def test_key_follower_adds_complete_lines_only(tmp_path):
    kl = KeyLog()
    p = tmp_path / "keys"
    fol = KeyFollower(str(p), kl)
    assert fol.poll() == 0  # not written yet
    cr, sec = "11" * 32, "22" * 32
    p.write_text(f"CLIENT_RANDOM {cr} {sec[:20]}")  # half a line: not yet
    assert fol.poll() == 0 and len(kl) == 0
    with open(p, "a") as w:
        w.write(f"{sec[20:]}\n")
    assert fol.poll() == 1 and kl.get("CLIENT_RANDOM", bytes.fromhex(cr)) == bytes.fromhex(sec)
    assert kl.sources == [str(p)]  # one source however many polls


def test_key_wait_waits_once_for_a_needed_secret_and_never_for_early_data(tmp_path):
    kl = KeyLog()
    cr = bytes(range(32))
    arrive = time.monotonic() + 0.2
    line = f"SERVER_TRAFFIC_SECRET_0 {cr.hex()} {'33' * 32}\n"

    def poll():
        if time.monotonic() >= arrive and not len(kl):
            kl.add_text(line, "k", follow=True)
        return 0

    w = KeyWait(poll, lambda: False, wait=2.0)
    kl.on_miss = w
    t0 = time.monotonic()
    assert kl.get("CLIENT_EARLY_TRAFFIC_SECRET", cr) is None and time.monotonic() - t0 < 0.05  # not waited for
    assert kl.get("SERVER_TRAFFIC_SECRET_0", cr) == bytes.fromhex("33" * 32)  # arrived while waiting
    assert 0.15 < time.monotonic() - t0 < 1.5
    t1 = time.monotonic()
    assert kl.get("CLIENT_HANDSHAKE_TRAFFIC_SECRET", cr) is None and time.monotonic() - t1 < 0.05  # waited once already


def test_secrets_for_keeps_only_the_captured_connections_keys():
    from types import SimpleNamespace as NS

    kl = KeyLog()
    a, b = bytes([1]) * 32, bytes([2]) * 32
    kl.add_text(f"CLIENT_RANDOM {a.hex()} {'44' * 48}\nCLIENT_RANDOM {b.hex()} {'55' * 48}\n")
    an = NS(connections=[NS(tls=NS(client_random=a), quic=None)])
    assert secrets_for(kl, an) == f"CLIENT_RANDOM {a.hex()} {'44' * 48}\n"
    assert secrets_for(kl).count("\n") == 2


# ------------------------------------------------------------------ the real thing

def requests_json(an) -> list[dict]:
    """The records `wirefall requests --json` writes (ui/cli.py cmd_requests)."""
    from wirefall.analyzer.jsonout import exchange_dict, phases_dicts
    from wirefall.analyzer.waterfall import page_of

    page, ph = page_of(an), phases_dicts(an)
    exs = sorted(an.exchanges, key=lambda e: (e.request_start or e.response_start or 0.0, e.id))
    return [exchange_dict(e, shared=True, phases=ph.get(e.id), page=page) for e in exs]


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a network namespace and a live capture)")
TOOLS = ["ip", "dumpcap", "nginx", "curl", "nghttp", "nghttpd", "chromium", "openssl", "editcap"]


def _load_sac():
    spec = importlib.util.spec_from_file_location("wf_sac_live", SAC)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def netns():
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing:
        pytest.skip(f"missing tools: {missing}")
    name = f"wf-live-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        subprocess.run(["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"], check=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


def _first_bytes_done(app, path_part: str):
    """The waterfall row of the request whose URL holds ``path_part``, once it is decrypted
    (the row exists only when its request was decoded) and complete."""
    from wirefall.ui.tui.widgets import WaterfallView

    wv = app.query_one(WaterfallView)
    for r in wv.rows:
        if path_part in (r.url or "") and r.status and r.end is not None:
            return r
    return None


@needs_root
@pytest.mark.slow
def test_live_tui_shows_each_request_decrypted_within_a_second_then_saves_and_reopens(netns, tmp_path):
    sac = _load_sac()
    ns = ["ip", "netns", "exec", netns]
    work = tmp_path
    site = work / "site"
    site.mkdir()
    names = ["h1.txt", "h2.txt", "nghttp.txt", "index.html", "h3.txt"]
    for n in names[:3] + ["h3.txt"]:
        (site / n).write_text(f"{n} " * 2000)
    (site / "index.html").write_text('<html><body>wirefall live <img src="/h3.txt"></body></html>')
    cert, key, spki = sac.make_cert(work)
    procs = sac.Procs()
    keys = work / "client.keys"
    srv_keys = work / "h3-server.keys"
    late_keys, staged = work / "late.keys", work / "staged.keys"  # a key log written only after its connection ended
    env = dict(os.environ, SSLKEYLOGFILE=str(keys))
    session = None
    try:
        tport, uport, cport = 18443, 18444, 18080
        conf = sac.nginx_conf(work, site, tport, "h2", cert, key, "127.0.0.1")
        procs.start("nginx", ns + ["nginx", "-c", str(conf), "-e", str(work / "nginx.stderr")], stop_sig=signal.SIGQUIT,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.start("h3", ns + [sys.executable, str(H3_SERVER), "--root", str(site), "--cert", str(cert), "--key", str(key),
                                "--port", str(uport), "--host", "127.0.0.1", "--secrets-log", str(srv_keys),
                                "--request-log", str(work / "h3.log")],
                    stdout=open(work / "h3.out", "w"), stderr=subprocess.STDOUT)
        # nghttp has no key log: it speaks HTTP/2 in the clear (prior knowledge) to nghttpd
        procs.start("nghttpd", ns + ["nghttpd", "--no-tls", "-d", str(site), str(cport)],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for port, udp in ((tport, False), (uport, True), (cport, False)):
            t0 = time.time()
            while not subprocess.run(ns + ["ss", "-Hlun" if udp else "-Hltn", f"sport = :{port}"], capture_output=True, text=True).stdout.strip():
                assert time.time() - t0 < 15, f"server on {port} did not start"
                time.sleep(0.1)

        from wirefall.ui.tui.live import LiveApp

        save = work / "saved.pcapng"
        session = LiveSession("lo", keylogs=[str(keys), str(srv_keys), str(late_keys)], bpf=f"port {tport} or port {uport} or port {cport}", prefix=ns)
        if os.environ.get("WF_TOOL"):
            session.capture.tool = os.environ["WF_TOOL"]  # tcpdump instead of dumpcap (where dumpcap is missing)
        app = LiveApp(session, save_to=str(save))
        session.start()
        lag: dict[str, float] = {}
        model: dict[str, float] = {}

        async def drive():
            async with app.run_test(size=(200, 50)) as pilot:
                await pilot.press("2")  # the Waterfall tab

                async def client(label, cmd, part, cenv=env):
                    p = await asyncio.create_subprocess_exec(*ns, *cmd, env=cenv, stdout=asyncio.subprocess.DEVNULL,
                                                             stderr=asyncio.subprocess.DEVNULL)
                    rc = await asyncio.wait_for(p.wait(), 90)
                    assert rc == 0, f"{label} failed ({rc})"
                    done = time.monotonic()
                    while not any(part in (e.url or "") and e.status for e in list(app.an.exchanges)):
                        await pilot.pause(0.01)
                    model[label] = time.monotonic() - done
                    while _first_bytes_done(app, part) is None:
                        assert time.monotonic() - done < 10, f"{label}: {part} never appeared in the waterfall"
                        await pilot.pause(0.05)
                    lag[label] = time.monotonic() - done

                url = f"https://127.0.0.1:{tport}"
                await client("curl HTTP/1.1", ["curl", "-sk", "--http1.1", "-o", "/dev/null", f"{url}/h1.txt"], "/h1.txt")
                await client("curl HTTP/2", ["curl", "-sk", "--http2", "-o", "/dev/null", f"{url}/h2.txt"], "/h2.txt")
                # the secret arrives 0.3 s after its handshake: the connection is decrypted when it does
                async def late_copy():
                    await asyncio.sleep(0.3)
                    shutil.copy(staged, late_keys)

                copier = asyncio.get_running_loop().create_task(late_copy())
                await client("curl HTTP/2, key late", ["curl", "-sk", "--http2", "-o", "/dev/null", f"{url}/h1.txt?late"], "/h1.txt?late",
                             cenv=dict(env, SSLKEYLOGFILE=str(staged)))
                await copier
                await client("nghttp", ["nghttp", "-n", f"http://127.0.0.1:{cport}/nghttp.txt"], "/nghttp.txt")
                profile = tempfile.mkdtemp(prefix="chromium-", dir=work)
                origin = f"127.0.0.1:{uport}"
                await client("chromium HTTP/3", ["chromium", *sac.CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--enable-quic",
                                                 f"--origin-to-force-quic-on={origin}", f"--ignore-certificate-errors-spki-list={spki}",
                                                 "--dump-dom", f"https://{origin}/"], "/h3.txt")
                await pilot.press("ctrl+e")
                t0 = time.monotonic()
                while not app.loaded:
                    assert time.monotonic() - t0 < 20, "the capture did not stop"
                    await pilot.pause(0.05)
                await pilot.press("ctrl+s")
                t0 = time.monotonic()
                while not getattr(app, "saved", None):
                    assert time.monotonic() - t0 < 30, "not saved"
                    await pilot.pause(0.05)
                return app.an

        an = asyncio.run(drive())
        print("seconds from each client's end to its request in the waterfall:", {k: round(v, 3) for k, v in lag.items()},
              "in the model:", {k: round(v, 3) for k, v in model.items()}, "key waits:", round(session.wait.seconds, 3))
        assert all(v <= 1.0 for v in lag.values()), lag
        from wirefall.analyzer.pipeline import analyze

        again = analyze(str(save))  # no key log: the Decryption Secrets Block carries them
        live_rows, saved_rows = requests_json(an), requests_json(again)
        for a, b in zip(live_rows, saved_rows):
            assert a == b, {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)}
        assert len(live_rows) == len(saved_rows) >= 4
        assert {r["protocol"] for r in saved_rows} >= {"http/1.1", "h2", "h3"}
    finally:
        if session is not None:
            session.close()
        procs.stop_all()


def test_interfaces_lists_loopback():
    if not shutil.which("dumpcap") and not shutil.which("tcpdump"):
        pytest.skip("no capture tool")
    if os.geteuid() != 0:
        pytest.skip("listing needs the capture capabilities here")
    assert "lo" in [n for n, _ in interfaces()]


@needs_root
@pytest.mark.slow
def test_capture_command_writes_pcapng_with_the_secrets_tshark_decrypts(netns, tmp_path):
    """`wirefall capture -i lo -w F --duration S --keylog K`: F is pcapng whose Decryption Secrets
    Block lets tshark itself decrypt the HTTP/2 request with no key log given."""
    sac = _load_sac()
    ns = ["ip", "netns", "exec", netns]
    site = tmp_path / "site"
    site.mkdir()
    (site / "x.txt").write_text("x" * 5000)
    cert, key, _ = sac.make_cert(tmp_path)
    procs = sac.Procs()
    keys, out = tmp_path / "k.keys", tmp_path / "cap.pcapng"
    try:
        conf = sac.nginx_conf(tmp_path, site, 18443, "h2", cert, key, "127.0.0.1")
        procs.start("nginx", ns + ["nginx", "-c", str(conf), "-e", str(tmp_path / "e")], stop_sig=signal.SIGQUIT,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t0 = time.time()
        while not subprocess.run(ns + ["ss", "-Hltn", "sport = :18443"], capture_output=True, text=True).stdout.strip():
            assert time.time() - t0 < 15
            time.sleep(0.1)
        cap = subprocess.Popen(ns + [sys.executable, "-m", "wirefall", "capture", "-i", "lo", "-f", "tcp port 18443", "-w", str(out),
                                     "--duration", "3", "--keylog", str(keys)], cwd=ROOT, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        subprocess.run(ns + ["curl", "-sk", "--http2", "-o", "/dev/null", "https://127.0.0.1:18443/x.txt"], check=True,
                       env=dict(os.environ, SSLKEYLOGFILE=str(keys)), timeout=30)
        _, err = cap.communicate(timeout=30)
        assert cap.returncode == 0, err
        r = subprocess.run(["tshark", "-r", str(out), "-Y", "http2.header.name == \":path\"", "-T", "fields", "-e", "http2.headers.path"],
                           capture_output=True, text=True, timeout=60)
        assert "/x.txt" in r.stdout.split()  # decrypted by tshark from the file's own DSB
        ours = subprocess.run([sys.executable, "-m", "wirefall", "requests", str(out), "--json"], cwd=ROOT, capture_output=True,
                              text=True, timeout=60)
        import json

        rows = json.loads(ours.stdout)
        assert [(x["method"], x["url"].rsplit("/", 1)[-1], x["status"]) for x in rows] == [("GET", "x.txt", 200)]
    finally:
        procs.stop_all()


def test_a_long_tool_message_is_cut_after_a_sentence_not_in_a_word():
    """dumpcap's permission text once ended "…On Debian and Debian d)" (review 24)."""
    from wirefall.analyzer.live import NO_PERMISSION, _why

    msg = ("You don't have permission to capture on that device (socket: Operation not permitted). "
           "On Debian and Debian derivatives such as Ubuntu, if you have installed Wireshark from a package, "
           "try running sudo dpkg-reconfigure wireshark-common selecting yes. ") * 3
    got = _why("Capturing on 'nosuch0'\n" + msg)
    assert got.startswith(NO_PERMISSION + " (You don't have permission") and got.endswith("selecting yes. …)"), got
    assert _why("dumpcap: There is no device named \"nosuch0\".\n") == 'dumpcap: There is no device named "nosuch0".'
