"""Live capture, review 19: quitting and signals never lose a capture, a file holds only its own
connections' secrets, bad arguments say so in one line, the waterfall's axis follows the capture,
a secret written late is used.

Real things only: dumpcap on ``lo`` with a BPF filter on a port each test opens, a TLS server
(Python's http.server over TLS) and curl with SSLKEYLOGFILE; counts checked against tcpdump (a
second capture of the same port) and tshark on the written file (its DSB decrypts the requests);
the TUI through Textual's pilot, and in tmux for SIGHUP (the terminal closed).
"""
from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WIREFALL = str(Path(sys.executable).with_name("wirefall"))
TOOLS = ["dumpcap", "tcpdump", "tshark", "curl", "openssl", "editcap"]

needs_capture = pytest.mark.skipif(os.geteuid() != 0 or any(not shutil.which(t) for t in TOOLS),
                                   reason=f"needs root and {', '.join(TOOLS)}")

SERVER = r'''
import http.server, ssl, sys
port, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        body = ((self.path + " ") * 300).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(cert, key)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print("ready", flush=True)
srv.serve_forever()
'''
OTHER = "CLIENT_RANDOM " + "ab" * 32 + " " + "cd" * 48 + "\n"  # a secret of no connection of the capture


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A TLS server on a free port, curl with its key log, tcpdump capturing the same port."""

    def __init__(self, d: Path):
        self.d = d
        self.port = free_port()
        self.bpf = f"tcp port {self.port}"
        self.keys = d / "curl.keys"
        cert, key = d / "cert.pem", d / "key.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                        "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost"], check=True, capture_output=True)
        (d / "server.py").write_text(SERVER)
        self.server = subprocess.Popen([sys.executable, str(d / "server.py"), str(self.port), str(cert), str(key)],
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.server.stdout.readline().strip() == "ready"
        self.truth = d / "truth.pcap"
        self.tcpdump = subprocess.Popen(["tcpdump", "-i", "lo", "-U", "--immediate-mode", "-s", "0", "-w", str(self.truth), self.bpf],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        t0 = time.time()
        while not (self.truth.exists() and self.truth.stat().st_size >= 24):  # (pcap header: tcpdump listens)
            assert time.time() - t0 < 10 and self.tcpdump.poll() is None, "tcpdump did not start"
            time.sleep(0.05)
        time.sleep(0.2)

    def curl(self, path: str, keys: Path | None = None) -> None:
        env = dict(os.environ, SSLKEYLOGFILE=str(keys or self.keys))
        subprocess.run(["curl", "-sk", "--http1.1", "-o", "/dev/null", f"https://127.0.0.1:{self.port}{path}"],
                       env=env, check=True, timeout=30)

    def truth_packets(self) -> int:
        """Packets tcpdump captured on the port (stopped first: its last packets flushed)."""
        time.sleep(0.3)
        if self.tcpdump.poll() is None:
            self.tcpdump.send_signal(signal.SIGINT)
            self.tcpdump.wait(10)
        return count_packets(self.truth)

    def close(self) -> None:
        for p in (self.tcpdump, self.server):
            if p.poll() is None:
                p.terminate()
                p.wait(10)


@pytest.fixture
def lab(tmp_path):
    lab = Lab(tmp_path)
    try:
        yield lab
    finally:
        lab.close()


def count_packets(path: Path) -> int:
    r = subprocess.run(["tcpdump", "-r", str(path), "-nn"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return len(r.stdout.splitlines())


def tshark_requests(path: Path) -> list[str]:
    """The HTTP requests tshark decodes in ``path`` with no key log but the file's own DSB."""
    r = subprocess.run(["tshark", "-r", str(path), "-o", "tls.keylog_file:", "-Y", "http.request", "-T", "fields", "-e", "http.request.uri"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return sorted(r.stdout.split())


def dsb_text(path: Path) -> str:
    """The key log text of the pcapng's Decryption Secrets Blocks (block type 0x0A)."""
    import struct

    data, out, pos = path.read_bytes(), [], 0
    while pos + 12 <= len(data):
        btype, blen = struct.unpack_from("<II", data, pos)
        if blen < 12:
            break
        if btype == 0x0A:
            n = struct.unpack_from("<I", data, pos + 12)[0]
            out.append(data[pos + 16: pos + 16 + n].decode())
        pos += blen
    return "".join(out)


def children_with(text: str) -> list[str]:
    """Command lines of running processes that name ``text`` (a test's own path: nothing else's)."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmd and "pytest" not in cmd:
                found.append(cmd)
    return found


def start_capture(args: list[str], cwd: Path) -> subprocess.Popen:
    p = subprocess.Popen([WIREFALL, "capture", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p.before = ""  # what it said before it began
    while "capturing on" not in (line := p.stderr.readline()):
        assert line, p.before + p.stderr.read()
        p.before += line
    return p


# ------------------------------------------------------------------ wirefall capture

@needs_capture
@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_capture_signal_finishes_the_file_with_only_its_own_secrets(lab, tmp_path, sig):
    """Defects 2 and 3: kill -TERM / -HUP stops dumpcap, writes FILE (not FILE.part) with the
    secrets of its own connections only, 0600; packet count equals tcpdump's, requests tshark's."""
    kl = tmp_path / "keys.log"
    kl.write_text(OTHER)
    out = tmp_path / "t.pcapng"
    p = start_capture(["-i", "lo", "-f", lab.bpf, "--keylog", str(kl), "-w", str(out)], tmp_path)
    for i in range(3):
        lab.curl(f"/r{i}", keys=kl)
    truth = lab.truth_packets()
    time.sleep(0.3)
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert f"{sig.name}: stopping the capture" in err and f"wrote {out}" in err, err
    assert "Traceback" not in err
    assert out.exists() and not Path(str(out) + ".part").exists()
    assert not children_with(str(out)), "dumpcap left running"
    assert count_packets(out) == truth > 0
    assert tshark_requests(out) == ["/r0", "/r1", "/r2"]
    dsb = dsb_text(out)
    assert "ab" * 32 not in dsb and dsb.count("CLIENT_TRAFFIC_SECRET_0") == 3, dsb  # its 3 connections' secrets only
    assert "15 secrets, those of its connections" in err and "1 others left out" in err, err
    assert out.stat().st_mode & 0o777 == 0o600


@needs_capture
@pytest.mark.slow
def test_capture_ring_buffer_keys_are_private_and_its_own(lab, tmp_path):
    kl = tmp_path / "keys.log"
    kl.write_text(OTHER)
    out = tmp_path / "ring.pcapng"
    p = start_capture(["-i", "lo", "-f", lab.bpf, "--keylog", str(kl), "-w", str(out), "-b", "files:3", "-b", "filesize:1000"], tmp_path)
    lab.curl("/ring", keys=kl)
    truth = lab.truth_packets()
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    keys = Path(str(out) + ".keys")
    assert "1 files beside" in err or "ring buffer files:" in err, err
    assert keys.exists(), err
    assert keys.stat().st_mode & 0o777 == 0o600
    text = keys.read_text()
    assert "ab" * 32 not in text and text.count("CLIENT_TRAFFIC_SECRET_0") == 1
    files = sorted(tmp_path.glob("ring_*.pcapng"))
    assert files and sum(count_packets(f) for f in files) == truth


@needs_capture
def test_capture_bad_arguments_say_so_in_one_line(tmp_path):
    """Defects 4 and 5: --duration ≤ 0, a -w in a missing directory: one line, exit 2, nothing started."""
    for args, want in ((["--duration", "0"], "--duration must be a number of seconds above 0, not 0"),
                       (["--duration", "-1"], "--duration must be a number of seconds above 0, not -1"),
                       (["--duration", "inf"], "--duration must be a number of seconds above 0, not inf")):
        r = subprocess.run([WIREFALL, "capture", "-i", "lo", "-f", "tcp port 9", "-w", str(tmp_path / "x.pcapng"), *args],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 2 and r.stderr.strip().splitlines() == [f"wirefall: capture: {want} (leave it out to capture until Ctrl+C)"], r.stderr
    r = subprocess.run([WIREFALL, "capture", "-i", "lo", "-f", "tcp port 9", "-w", str(tmp_path / "no" / "x.pcapng")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stderr.strip() == f"wirefall: cannot write {tmp_path}/no/x.pcapng: directory {tmp_path}/no does not exist"
    assert not list(tmp_path.iterdir())
    # an interface dumpcap cannot open: its own reason, and no x.pcapng.part left behind (review 24)
    r = subprocess.run([WIREFALL, "capture", "-i", "nosuch0", "-w", str(tmp_path / "x.pcapng")], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "nosuch0" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not list(tmp_path.iterdir())


@needs_capture
def test_capture_follows_a_key_log_not_there_yet_and_says_so(lab, tmp_path):
    """Defect 5: a key log that does not exist yet is followed (with a warning); it appears, its
    secrets (those of the capture's connection) are in the file."""
    kl = tmp_path / "later" / "keys.log"
    out = tmp_path / "k.pcapng"
    p = start_capture(["-i", "lo", "-f", lab.bpf, "--keylog", str(kl), "-w", str(out), "--duration", "3"], tmp_path)
    kl.parent.mkdir()
    lab.curl("/later", keys=kl)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert p.before == f"wirefall: warning: key log {kl} is not there yet; following it (its secrets are added when it appears)\n"
    assert "5 secrets, those of its connections" in err and "never appeared" not in err, err
    assert tshark_requests(out) == ["/later"]
    r = subprocess.run([WIREFALL, "capture", "-i", "lo", "-f", lab.bpf, "--keylog", str(tmp_path / "nope"), "-w", str(tmp_path / "n.pcapng"),
                        "--duration", "1"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0
    assert f"wirefall: warning: key log {tmp_path}/nope is not there yet; following it" in r.stderr, r.stderr
    assert f"key log {tmp_path}/nope never appeared" in r.stderr


# ------------------------------------------------------------------ the TUI (Textual's pilot)

def _live_app(lab: Lab, keylogs: list[Path], save_to: Path | None):
    from wirefall.analyzer.live import LiveSession
    from wirefall.ui.tui.live import LiveApp

    session = LiveSession("lo", keylogs=[str(k) for k in keylogs], bpf=lab.bpf)
    app = LiveApp(session, save_to=str(save_to) if save_to else None)
    session.start()
    return app, session


async def _until(pilot, cond, timeout: float, what: str) -> None:
    t0 = time.monotonic()
    while not cond():
        assert time.monotonic() - t0 < timeout, what
        await pilot.pause(0.05)


def _rows(app):
    from wirefall.ui.tui.widgets import WaterfallView

    return app.query_one(WaterfallView).rows


@needs_capture
@pytest.mark.slow
def test_tui_q_with_w_writes_the_file_and_says_so(lab, tmp_path):
    """Defect 1: q with -w stops the capture and writes FILE with its DSB (also after Ctrl+E)."""
    out = tmp_path / "tui11.pcapng"
    lab.keys.write_text(OTHER)
    app, session = _live_app(lab, [lab.keys], out)

    async def drive():
        async with app.run_test(size=(160, 45)) as pilot:
            await pilot.press("2")
            for i in range(3):
                await asyncio.to_thread(lab.curl, f"/q{i}")
            await _until(pilot, lambda: len([r for r in _rows(app) if r.status]) == 3, 15, "3 requests never shown")
            await pilot.press("q")
            await _until(pilot, lambda: app.exit_message is not None, 30, "q did not write the file")

    asyncio.run(drive())
    session.close()
    assert app.exit_message.startswith(f"wrote {out} (") and "secrets of its connections" in app.exit_message, app.exit_message
    assert not os.path.exists(session.own_dir)
    assert count_packets(out) == lab.truth_packets()
    assert tshark_requests(out) == ["/q0", "/q1", "/q2"]
    assert "ab" * 32 not in dsb_text(out)


@needs_capture
@pytest.mark.slow
def test_tui_q_without_w_asks_save_discard_cancel(lab, tmp_path, monkeypatch):
    """Defect 1: without -w, q on a capture with packets asks; Esc keeps capturing, s saves (to
    the name Ctrl+S uses) and quits; a second app: d discards, the temporary capture goes."""
    from wirefall.ui.tui.live import QuitScreen

    monkeypatch.chdir(tmp_path)
    app, session = _live_app(lab, [lab.keys], None)

    async def drive(app, choice):
        async with app.run_test(size=(160, 45)) as pilot:
            await asyncio.to_thread(lab.curl, "/ask")
            await _until(pilot, lambda: app._captured() > 0, 10, "no packets")
            await pilot.press("q")
            await _until(pilot, lambda: isinstance(app.screen, QuitScreen), 5, "q did not ask")
            await pilot.press("escape")
            await pilot.pause(0.3)
            assert not isinstance(app.screen, QuitScreen) and not app.session.stopped and app.is_running
            await pilot.press("q")
            await _until(pilot, lambda: isinstance(app.screen, QuitScreen), 5, "q did not ask again")
            await pilot.press(choice)
            await _until(pilot, lambda: app.exit_message is not None, 30, "no exit")

    asyncio.run(drive(app, "s"))
    session.close()
    saved = list(tmp_path.glob("wirefall-live-*.pcapng"))
    assert len(saved) == 1 and str(saved[0]) in app.exit_message
    assert tshark_requests(saved[0]) == ["/ask"]
    assert count_packets(saved[0]) == lab.truth_packets()

    app2, session2 = _live_app(lab, [lab.keys], None)
    lab.tcpdump = subprocess.Popen(["true"])  # (the truth was counted above)
    asyncio.run(drive(app2, "d"))
    session2.close()
    assert app2.exit_message.startswith("discarded the live capture (")
    assert not os.path.exists(session2.own_dir) and len(list(tmp_path.glob("wirefall-live-*.pcapng"))) == 1


@needs_capture
@pytest.mark.slow
def test_tui_waterfall_axis_follows_the_capture_unless_zoomed(lab, tmp_path):
    """Defect 6: a request made later is on the axis (re-fitted); once zoomed in, the view stays."""
    from wirefall.ui.tui.widgets import WaterfallView

    app, session = _live_app(lab, [lab.keys], None)

    async def drive():
        async with app.run_test(size=(160, 45)) as pilot:
            await pilot.press("2")
            wv = app.query_one(WaterfallView)
            await asyncio.to_thread(lab.curl, "/first")
            await _until(pilot, lambda: any(r.status for r in wv.rows), 10, "first request not shown")
            assert not app.query_one("#progress").display  # (no "0%" load bar while capturing: review 24)
            first_end = wv.t1
            await asyncio.sleep(1.5)
            await asyncio.to_thread(lab.curl, "/second")
            await _until(pilot, lambda: len([r for r in wv.rows if r.status and r.end]) == 2, 10, "second request not shown")
            await pilot.pause(0.6)
            second = next(r for r in wv.rows if "/second" in (r.url or ""))
            assert wv.t1 > first_end + 1.0 and wv.v1 == wv.t1 and wv.v0 == wv.t0 and second.end <= wv.v1, (first_end, wv.t1, wv.v1)
            await pilot.press("plus")
            view = (wv.v0, wv.v1)
            assert view[1] - view[0] < wv.t1 - wv.t0
            await asyncio.sleep(1.0)
            await asyncio.to_thread(lab.curl, "/third")
            await _until(pilot, lambda: len([r for r in wv.rows if r.status and r.end]) == 3, 10, "third request not shown")
            await pilot.pause(0.6)
            assert (wv.v0, wv.v1) == view and wv.t1 > view[1]  # zoomed: the view stays, the axis grew
            await pilot.press("0")  # reset: following again
            await asyncio.to_thread(lab.curl, "/fourth")
            await _until(pilot, lambda: len([r for r in wv.rows if r.status and r.end]) == 4, 10, "fourth request not shown")
            await pilot.pause(0.6)
            assert wv.v1 == wv.t1 and wv.v0 == wv.t0
            app.save_to = None
            session.stop()
            await _until(pilot, lambda: app.loaded, 20, "not stopped")

    asyncio.run(drive())
    session.close()


@needs_capture
@pytest.mark.slow
def test_tui_secret_written_late_is_used_while_live(lab, tmp_path):
    """Defect 7: a key log line written 2 s after its connection (past KEY_WAIT): the connection
    reads "no key yet (waiting for the key log)" meanwhile, then the pass runs again and the
    request is shown decrypted, live; the saved file decrypts the same requests (tshark)."""
    from wirefall.analyzer.live import LIVE_NO_KEY

    late, staged = tmp_path / "late.keys", tmp_path / "staged.keys"
    out = tmp_path / "late.pcapng"
    app, session = _live_app(lab, [lab.keys, late], out)

    async def drive():
        async with app.run_test(size=(160, 45)) as pilot:
            await pilot.press("2")
            await asyncio.to_thread(lab.curl, "/early")
            await asyncio.to_thread(lab.curl, "/late", staged)
            await _until(pilot, lambda: any("/early" in (r.url or "") for r in _rows(app)), 10, "/early not shown")
            await asyncio.sleep(KEY_WAIT_PLUS)
            b = app.live_builds
            await _until(pilot, lambda: app.live_builds > b + 1, 5, "no rebuild")
            reasons = [(c.tls.reason if c.tls else None) for c in app.an.connections if c.tls and not c.tls.decrypted]
            assert reasons == [LIVE_NO_KEY] and [r.kind for r in reasons] == ["key_pending"], reasons  # (typed: JSON reason_kind)
            shutil.copy(staged, late)
            t0 = time.monotonic()
            await _until(pilot, lambda: any("/late" in (r.url or "") and r.status for r in _rows(app)), 10, "/late never decrypted")
            print("late secret used after", round(time.monotonic() - t0, 2), "s; passes run again:", session.reruns)
            assert any("/early" in (r.url or "") for r in _rows(app))
            await pilot.press("q")
            await _until(pilot, lambda: app.exit_message is not None, 30, "q did not write the file")

    asyncio.run(drive())
    session.close()
    assert session.reruns >= 1
    assert tshark_requests(out) == ["/early", "/late"]
    assert count_packets(out) == lab.truth_packets()


KEY_WAIT_PLUS = 2.0  # seconds past the connection's end (KEY_WAIT 1 s): the pass has given up waiting


# ------------------------------------------------------------------ the TUI in a terminal (tmux): SIGHUP

@needs_capture
@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("tmux"), reason="needs tmux")
@pytest.mark.parametrize("how", ["terminal closed, -w", "kill -HUP", "kill -TERM, -w"])
def test_tui_sighup_sigterm_stop_dumpcap_and_keep_the_capture(lab, tmp_path, how):
    """Defect 2: the TUI's terminal closed (tmux kill-session: SIGHUP, the tty gone) or the TUI
    sent SIGHUP/SIGTERM: dumpcap stopped, the capture written (-w FILE, else the name Ctrl+S uses:
    said on stderr), the temporary capture's directory gone."""
    write = "-w" in how
    name = f"wf19-{os.getpid()}-{how.split()[1].strip(',')}"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "hup.pcapng"
    cmd = f"exec env TMPDIR={tmp} {WIREFALL} tui -i lo -f '{lab.bpf}' --keylog {lab.keys}" + (f" -w {out}" if write else "")
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "300", "-y", "45", "-c", str(tmp_path), cmd], check=True)
    try:
        subprocess.run(["tmux", "set-option", "-t", name, "remain-on-exit", "on"], check=True)
        pid = int(subprocess.run(["tmux", "display", "-p", "-t", name, "#{pane_pid}"], capture_output=True, text=True, check=True).stdout)
        t0 = time.time()
        while not list(tmp.glob("wirefall-live-*/live.pcapng")):
            assert time.time() - t0 < 20, "the TUI did not start capturing"
            time.sleep(0.1)
        time.sleep(1.0)
        lab.curl("/hup")
        time.sleep(1.0)
        truth = lab.truth_packets()
        if how.startswith("terminal closed"):
            subprocess.run(["tmux", "kill-session", "-t", name], check=True)
        else:
            os.kill(pid, signal.SIGHUP if "HUP" in how else signal.SIGTERM)
        t0 = time.time()
        while os.path.exists(f"/proc/{pid}") and Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z":
            assert time.time() - t0 < 30, "the TUI did not end"
            time.sleep(0.1)
        assert not children_with(lab.bpf), f"left running: {children_with(lab.bpf)}"
        screen = ""
        if not how.startswith("terminal closed"):
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-J", "-t", name, "-S", "-50"], capture_output=True, text=True).stdout
            assert "Traceback" not in screen
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], check=False, capture_output=True)
    saved = out if write else next(iter(tmp_path.glob("wirefall-live-*.pcapng")), None)
    assert saved is not None and saved.exists(), screen
    if screen:
        sig = "SIGHUP" if "HUP" in how else "SIGTERM"
        assert f"wirefall: {sig}: the live capture stopped; wrote {saved}" in screen.replace("\n", ""), screen
    assert count_packets(saved) == truth and tshark_requests(saved) == ["/hup"]
    assert not list(tmp.iterdir()), list(tmp.iterdir())  # the temporary capture's directory is gone


@needs_capture
@pytest.mark.slow
def test_web_live_secret_written_late_is_used_while_live(lab, tmp_path):
    """The web app's live view as the TUI's: a key log line written 2 s after its connection
    reads "no key yet (waiting for the key log)" in the meantime, then the pass runs again
    (the views' generation says so) and the request is decrypted; Save's file decrypts the
    same requests in tshark with its own secrets."""
    from wirefall.analyzer.live import LIVE_NO_KEY, LiveSession
    from wirefall.ui.web import WebState
    from wirefall.ui.web.live import add_live, live_version

    late, staged = tmp_path / "late.keys", tmp_path / "staged.keys"
    session = LiveSession("lo", keylogs=[str(lab.keys), str(late)], bpf=lab.bpf)
    st = WebState(use_cache=False)
    try:
        e = add_live(st, session)
        lab.curl("/early")
        lab.curl("/late", staged)

        def until(cond, timeout, what):
            t0 = time.monotonic()
            while not cond():
                assert time.monotonic() - t0 < timeout, what
                time.sleep(0.05)

        urls = lambda: [x.url or "" for x in (e.analysis.exchanges if e.analysis is not None else [])]  # noqa: E731
        until(lambda: any("/early" in u for u in urls()), 10, "/early not shown")
        time.sleep(KEY_WAIT_PLUS)
        e.live.status_text()  # (what the page polls: it marks the connections still waiting)
        reasons = [c.tls.reason for c in e.analysis.connections if c.tls and not c.tls.decrypted]
        assert reasons == [LIVE_NO_KEY] and [r.kind for r in reasons] == ["key_pending"], reasons  # (typed: JSON reason_kind)
        before = live_version(e)
        shutil.copy(staged, late)
        until(lambda: any("/late" in (x.url or "") and x.status for x in e.analysis.exchanges), 10, "/late never decrypted")
        assert session.reruns >= 1 and ":r" in live_version(e) and live_version(e) != before
        assert "read again" in e.live.status_text()
        out = Path(e.live.save(str(tmp_path / "web-late.pcapng")))
    finally:
        st.close()
        session.close()
    assert tshark_requests(out) == ["/early", "/late"]
