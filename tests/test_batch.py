"""`wirefall batch` (analyzer/batch, ui/cli_batch.py, ui/batch_report.py; docs/BATCH.md).

- on a real Dask cluster (a `dask scheduler` and two `dask worker` processes on loopback): a
  batch of 58 inputs — folders, a glob, files, a lab run folder, a pcapng with its keys in a
  DSB, folder key logs, a bad file and a cut capture — gives every capture's requests exactly as
  the serial `wirefall requests CAP --json` gives them (field by field), although one worker is
  killed mid-batch; the bad file is an errors row with the CLI's own message; a rerun analyses
  only what is new;
- the datasets read by DuckDB and pyarrow agree with `wirefall stats --json`/`requests --json`,
  and the report's medians and quartiles with DuckDB's `quantile_cont`;
- a lab run folder's manifest gives the conditions; a flush cut short leaves nothing behind;
  without dask the command says what to install (exit 2).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES, SHARED

pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

sys.path.insert(0, str(ROOT / "scripts" / "hostile"))
import batch_inputs  # noqa: E402

from wirefall.analyzer.batch.rows import JSON_TEXT_FIELDS, REQUEST_JSON_FIELDS  # noqa: E402
from wirefall.analyzer.batch.store import read_dataset  # noqa: E402

PY = sys.executable
ENV = {**{k: v for k, v in os.environ.items() if k != "SSLKEYLOGFILE"}, "PYTHONPATH": str(ROOT)}


def _keys_of(cap: Path) -> list[str]:
    """The key log of a capture as the captures' READMEs pair them (not the batch's lookup)."""
    for k in (cap.with_suffix(".keys"), cap.parent / "keylog.txt", cap.parent / "amazon1.key_log.txt.gz"):
        if k.is_file() and (k.name != "amazon1.key_log.txt.gz" or cap.name.startswith("amazon1")):
            return [str(k)]
    return []


def cli(*args: str) -> tuple[int, str, str]:
    """``wirefall ARGS`` in this process (the same ``main`` the console command runs)."""
    from wirefall.ui.cli import main

    out, err = io.StringIO(), io.StringIO()
    env = os.environ.pop("SSLKEYLOGFILE", None)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(list(args))
    finally:
        if env is not None:
            os.environ["SSLKEYLOGFILE"] = env
    return rc, out.getvalue(), err.getvalue()


def serial_requests(cap: str, keys: list[str]) -> list[dict]:
    args = ["requests", cap, "--json"]
    for k in keys:
        args += ["--keylog", k]
    rc, out, err = cli(*args)
    assert rc == 0, err
    return json.loads(out)


def as_json(row: dict) -> dict:
    """A requests.parquet row in the shape of the JSON element (JSON text fields parsed)."""
    d = {}
    for name, _ in REQUEST_JSON_FIELDS:
        v = row[name]
        d[name] = json.loads(v) if name in JSON_TEXT_FIELDS and v is not None else v
    return d


def check_requests_match_serial(out: Path, captures: dict[str, list[str]]) -> int:
    """Every capture's rows equal ``wirefall requests CAP --json``, field by field; returns the
    number of rows compared."""
    rows: dict[str, list[dict]] = {}
    for r in read_dataset(out, "requests").to_pylist():
        rows.setdefault(r["capture"], []).append(r)
    n = 0
    for cap, keys in captures.items():
        mine = sorted(rows.get(cap, []), key=lambda r: r["row"])
        ref = serial_requests(cap, keys)
        assert [r["row"] for r in mine] == list(range(len(ref))), cap
        for i, (a, b) in enumerate(zip(ref, mine)):
            b = as_json(b)
            for name, _ in REQUEST_JSON_FIELDS:
                assert b[name] == a.get(name), f"{cap} request {i} field {name}: {b[name]!r} != {a.get(name)!r}"
            assert set(a) <= set(b), set(a) - set(b)
        n += len(ref)
    return n


def _pick_inputs(tmp: Path) -> tuple[list[str], dict[str, list[str]], list[Path]]:
    """(command-line inputs, capture -> its key logs as the READMEs pair them, bad files)."""
    inputs = [str(SAMPLES / "tls"), str(SAMPLES / "spdy" / "*.pcap"), str(SAMPLES / "http"), str(SAMPLES / "lossy"),
              str(SAMPLES / "secrets"), str(SAMPLES / "link-raw.pcap"), str(SAMPLES / "link-sll.pcap"), str(SAMPLES / "link-sll2.pcap"),
              str(SAMPLES / "tcp-port-reuse.pcap")]
    caps = sorted((SAMPLES / "tls").glob("*.pcap")) + sorted((SAMPLES / "spdy").glob("*.pcap")) + sorted((SAMPLES / "http").glob("*.pcap")) \
        + sorted((SAMPLES / "lossy").glob("*.pcapng")) + sorted((SAMPLES / "secrets").glob("*.pcap")) \
        + [SAMPLES / n for n in ("link-raw.pcap", "link-sll.pcap", "link-sll2.pcap", "tcp-port-reuse.pcap")]
    for rel in ("tls12", "tls13", "quic-illustrated", "retina/quic.pcap", "pcap2qlog/ngtcp2-29-dsb.pcapng"):
        p = SHARED / rel
        if p.exists():
            inputs.append(str(p))
            caps += sorted(p.glob("*.pcap*")) if p.is_dir() else [p]
    bad = tmp / "bad"
    bad.mkdir()
    (bad / "not-a-capture.pcap").write_bytes(batch_inputs.not_a_capture())
    (bad / "cut-http1.pcap").write_bytes(batch_inputs.cut_capture())
    inputs.append(str(bad))
    caps.append(bad / "cut-http1.pcap")
    return inputs, {os.path.abspath(c): _keys_of(c) for c in caps}, [bad / "not-a-capture.pcap"]


def _limit_memory():
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    os.setsid()


def _start(args: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(args, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=ENV, preexec_fn=_limit_memory)


def _stop(p: subprocess.Popen) -> None:
    if p.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        p.wait(timeout=10)


def _wait_for(pred, timeout: float, what: str):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
def test_batch_on_a_real_cluster_matches_serial_survives_a_killed_worker_and_reruns(tmp_path):
    bindir = Path(PY).parent
    dask = str(bindir / "dask") if (bindir / "dask").exists() else shutil.which("dask")
    if not dask:
        pytest.skip("the dask command is not installed")
    inputs, captures, bad = _pick_inputs(tmp_path)
    assert len(captures) + len(bad) >= 50
    sched_file = tmp_path / "scheduler.json"
    procs: list[subprocess.Popen] = []
    watcher = None
    try:
        procs.append(_start([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", "127.0.0.1:0",
                             "--scheduler-file", str(sched_file)], tmp_path / "scheduler.log"))
        _wait_for(lambda: sched_file.exists() and sched_file.stat().st_size, 60, "the scheduler")
        address = json.loads(sched_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        workers = []
        for i in range(2):
            w = _start([dask, "worker", "--scheduler-file", str(sched_file), "--host", "127.0.0.1", "--nthreads", "1", "--no-nanny",
                        "--no-dashboard", "--memory-limit", "1GB", "--name", f"w{i}"], tmp_path / f"worker{i}.log")
            procs.append(w)
            workers.append(w)
        from distributed import Client

        watcher = Client(address, timeout="30s")  # the test's own view of the scheduler
        watcher.wait_for_workers(2, timeout=60)
        addrs = {info["name"]: a for a, info in watcher.scheduler_info()["workers"].items()}

        out = tmp_path / "out"
        batch = subprocess.Popen([PY, "-m", "wirefall", "batch", *inputs, "-o", str(out), "--scheduler", address, "-v", "--no-report"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, text=True, preexec_fn=os.setsid)
        procs.append(batch)
        done_at_kill = None
        lines = []
        assert batch.stderr is not None
        for line in batch.stderr:
            lines.append(line)
            if done_at_kill is None and line.startswith("wirefall: batch: ") and " ok " in line:
                n = int(line.split()[2].split("/")[0])
                if n >= 6:  # some captures done, most not: a worker that holds tasks dies now
                    busy = watcher.processing(workers=[addrs["w0"], addrs["w1"]])
                    victim = max(("w0", "w1"), key=lambda w: len(busy[addrs[w]]))  # the scheduler chose who works
                    survivor = "w1" if victim == "w0" else "w0"
                    lost = busy[addrs[victim]]
                    workers[int(victim[1])].send_signal(signal.SIGKILL)
                    workers[int(victim[1])].wait(timeout=10)
                    done_at_kill = n
        assert batch.wait(timeout=600) == 0, "".join(lines)
        total = len(captures) + len(bad)
        assert done_at_kill is not None and done_at_kill < total - 10, "".join(lines)
        assert f"{len(captures)} analysed, {len(bad)} error(s), 0 already" in "".join(lines)
        counts = [ln.split()[2] for ln in lines if ln.startswith("wirefall: batch: ") and "/" in ln.split()[2] and ln.split()[2][0].isdigit()]
        assert len(counts) == total and counts[-1] == f"{total}/{total}", counts[-3:]  # (-v counts to what it analyses)

        pages = read_dataset(out, "pages").to_pylist()
        assert sorted(p["capture"] for p in pages) == sorted(captures)  # every capture, once
        # what the killed worker was analysing when it died was analysed again on the other (keys end with the sha256's start)
        assert lost, f"{victim} had no task when it was killed"
        redone = [p["worker"] for p in pages for k in lost if p["sha256"].startswith(k.rsplit("-", 1)[1])]
        assert redone and set(redone) == {addrs[survivor]}, (lost, redone)
        n = check_requests_match_serial(out, captures)
        assert n > 250

        # the bad file: an errors row with the message `wirefall requests` gives it
        errors = read_dataset(out, "errors").to_pylist()
        assert [(e["capture"], e["kind"]) for e in errors] == [(str(bad[0]), "not_a_capture")]
        rc, _, err = cli("requests", str(bad[0]))
        assert rc == 2 and err.strip() == f"wirefall: {errors[0]['error']}"
        # the cut capture: its pages row carries the CLI's truncation warning
        cut = next(p for p in pages if p["capture"].endswith("cut-http1.pcap"))
        rc, _, err = cli("summary", cut["capture"])
        assert [f"wirefall: warning: {w}" for w in cut["warnings"]] == [ln for ln in err.splitlines() if ln.startswith("wirefall: warning:")]
        assert cut["warnings"] and "truncated" in cut["warnings"][0]
        # the lab folder's conditions (sample_captures/lossy/manifest.json)
        lossy = [p for p in pages if "/lossy/" in p["capture"]]
        assert len(lossy) == 4 and {(p["condition"], p["rtt_ms"], p["loss_pct"], p["run"]) for p in lossy} == {("rtt30ms-loss3pct", 30.0, 3.0, 1)}
        assert sorted(p["lab_protocol"] for p in lossy) == ["h1", "h2", "h3", "spdy"]

        # a rerun with one capture more: only that one is analysed (on the worker left)
        extra = SAMPLES / "page" / "page-h2.pcapng"
        before = read_dataset(out, "requests").num_rows
        r = subprocess.run([PY, "-m", "wirefall", "batch", *inputs, str(extra), "-o", str(out), "--scheduler", address, "--no-report"],
                           capture_output=True, text=True, env=ENV, timeout=300)
        assert r.returncode == 0, r.stderr
        assert f"1 analysed, 0 error(s), {total} already in {out}" in r.stderr
        pages2 = read_dataset(out, "pages").to_pylist()
        assert len(pages2) == len(pages) + 1 and len({(p["sha256"], p["keylog_sha256"]) for p in pages2}) == len(pages2)
        new = check_requests_match_serial(out, {str(extra): [str(extra.with_suffix(".keys"))]})
        assert read_dataset(out, "requests").num_rows == before + new
    finally:
        if watcher is not None:
            watcher.close()
        for p in reversed(procs):
            _stop(p)


# ---------------------------------------------------------------------- in-process cluster

SMALL = ["tls/tls13_aes128gcm.pcap", "spdy/spdy3-plain.pcap", "http/http1-nginx.pcap", "page/page-h2.pcapng", "page/page-h1.pcapng"]


@pytest.fixture(scope="module")
def small_out(tmp_path_factory):
    """A batch of five captures on an in-process cluster (threads)."""
    from distributed import Client, LocalCluster

    from wirefall.analyzer.batch.inputs import collect
    from wirefall.analyzer.batch.run import run_batch

    out = tmp_path_factory.mktemp("batch") / "out"
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, Client(cluster) as client:
        res = run_batch(collect([str(SAMPLES / s) for s in SMALL], use_env=False), str(out), client=client)
    assert (res.analysed, res.errors) == (len(SMALL), 0)
    return out


@pytest.mark.slow
def test_parquet_reads_with_duckdb_and_pyarrow_as_the_cli_prints(small_out):
    duckdb = pytest.importorskip("duckdb")
    import pyarrow.dataset as ds

    out = small_out
    q = lambda sql: duckdb.sql(sql.replace("REQ", f"read_parquet('{out}/requests.parquet/*.parquet')")
                               .replace("PAGES", f"read_parquet('{out}/pages.parquet/*.parquet')")).fetchall()
    t = ds.dataset(str(out / "requests.parquet"), format="parquet").to_table()
    for rel in SMALL:
        cap = str(SAMPLES / rel)
        keys = [str((SAMPLES / rel).with_suffix(".keys"))] if (SAMPLES / rel).with_suffix(".keys").exists() else []
        ref = serial_requests(cap, keys)
        got = q(f"SELECT row, url, status, response_body_bytes, phases.total, request_headers, priority FROM REQ WHERE capture = '{cap}' ORDER BY row")
        assert [(g[0], g[1], g[2], g[3], g[4]) for g in got] == \
            [(i, e["url"], e["status"], e["response_body_bytes"], (e["phases"] or {}).get("total")) for i, e in enumerate(ref)]
        assert [[list(h) for h in g[5]] for g in got] == [e["request_headers"] for e in ref]
        assert [None if g[6] is None else json.loads(g[6]) for g in got] == [e["priority"] for e in ref]
        mine = t.filter(ds.field("capture") == cap).sort_by("row").to_pylist()
        assert [as_json(r) for r in mine] == [{n: e.get(n) for n, _ in REQUEST_JSON_FIELDS} for e in ref]
        # the pages row against `wirefall stats --json` (the page's TTFB and load time)
        rc, so, err = cli("stats", cap, "--json", *sum((["--keylog", k] for k in keys), []))
        st = json.loads(so)["capture"]
        (plt, ttfb, reqs, hw, hd), = q(f"SELECT page_load_time, ttfb, requests, request_header_bytes_wire, request_header_bytes_decoded "
                                        f"FROM PAGES WHERE capture = '{cap}'")
        assert (plt, ttfb, reqs) == (st["page_load_time"], st["ttfb"], st["requests"])
        assert (hw, hd) == (st["headers"]["request"]["wire"], st["headers"]["request"]["decoded"])
    # HTTP/2 priority is JSON DuckDB reads
    (w,), = q(f"SELECT count(*) FROM REQ WHERE capture = '{SAMPLES / 'page/page-h2.pcapng'}' AND priority->>'weight' = '256'")
    assert w >= 1


@pytest.mark.slow
def test_report_numbers_are_duckdbs_quantiles_and_images_are_written(small_out):
    duckdb = pytest.importorskip("duckdb")
    from wirefall.ui.batch_report import write_report

    out = small_out
    files = write_report(out, group_by=["protocol"], images=True)
    assert set(files) >= {"report.json", "report.html", "report-page_load_time.png", "report-ttfb.png", "report-bytes.png"}
    rep = json.loads((out / "report.json").read_text())
    assert rep["group_by"] == ["protocol"] and rep["captures"] == len(SMALL)
    rows = duckdb.sql(f"SELECT protocol, count(*), quantile_cont(page_load_time, 0.5), quantile_cont(page_load_time, 0.25), "
                      f"quantile_cont(page_load_time, 0.75), quantile_cont(packets_c2s + packets_s2c, 0.5) "
                      f"FROM read_parquet('{out}/pages.parquet/*.parquet') GROUP BY protocol ORDER BY protocol").fetchall()
    groups = {g["series"]: g for g in rep["groups"]}
    assert sorted(groups) == [r[0] for r in rows]
    for proto, n, med, q1, q3, pk in rows:
        m = groups[proto]["metrics"]
        assert groups[proto]["captures"] == n
        assert m["page_load_time"]["median"] == pytest.approx(med, rel=1e-12)
        assert (m["page_load_time"]["q1"], m["page_load_time"]["q3"]) == (pytest.approx(q1, rel=1e-12), pytest.approx(q3, rel=1e-12))
        assert m["packets"]["median"] == pytest.approx(pk)
    html = (out / "report.html").read_text()
    assert "<h2>page load time</h2>" in html and html.count("<table>") >= 6
    for f in files:
        if f.endswith(".png"):
            data = (out / f).read_bytes()
            assert data[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", data[16:24]) == (1000, 480)  # IHDR width, height


def test_lab_run_folder_gives_conditions_and_keys(tmp_path):
    """A lab run folder laid out as lab/run.py writes it: <condition>/run<k>/page-<p>.pcapng."""
    from wirefall.analyzer.batch.inputs import collect

    runs = tmp_path / "RUNS"
    m = json.loads((SAMPLES / "lossy" / "manifest.json").read_text())
    for r in m["runs"]:
        d = runs / r["dir"]
        d.mkdir(parents=True, exist_ok=True)
        for k in ("capture", "keys"):
            (d / r["files"][k]).symlink_to(SAMPLES / "lossy" / r["files"][k])
    (runs / "manifest.json").write_text(json.dumps(m))
    jobs = collect([str(runs)], use_env=False)
    assert len(jobs) == len(m["runs"]) == 4
    for j, r in zip(sorted(jobs, key=lambda j: j.conditions["lab_protocol"]), sorted(m["runs"], key=lambda r: r["protocol"])):
        assert j.path == str(runs / r["dir"] / r["files"]["capture"])
        assert j.keylogs == [str(runs / r["dir"] / r["files"]["keys"])]
        assert j.conditions == {"condition": r["condition"], "lab_protocol": r["protocol"], "rtt_ms": r["rtt_ms"],
                                "loss_pct": r["loss_pct"], "rate_mbit": r["rate_mbit"], "run": r["run"]}
    # a capture in the folder that the manifest does not list: found, no conditions, keys by name
    (runs / "extra.pcap").symlink_to(SAMPLES / "tls" / "tls13_hrr.pcap")
    (runs / "extra.keys").symlink_to(SAMPLES / "tls" / "tls13_hrr.keys")
    extra = [j for j in collect([str(runs)], use_env=False) if j.path.endswith("extra.pcap")]
    assert extra[0].keylogs == [str(runs / "extra.keys")] and extra[0].conditions["condition"] is None


def test_a_flush_cut_short_leaves_no_rows_and_the_capture_is_redone(tmp_path):
    import pyarrow.parquet as pq

    from wirefall.analyzer.batch.rows import SCHEMAS
    from wirefall.analyzer.batch.store import Store

    s = Store(tmp_path / "out")
    row = {"capture": "/x.pcap", "sha256": "ab", "keylog_sha256": None, "kind": "not_a_capture", "error": "e"}
    s.add({"errors": __import__("pyarrow").Table.from_pylist([row], schema=SCHEMAS["errors"])})
    s.close()
    assert s.done()[1] == {("ab", None)}
    # a part written without its commit (the batch was killed between the two)
    pq.write_table(SCHEMAS["pages"].empty_table(), tmp_path / "out" / "pages.parquet" / "part-20990101T000000-1-00001.parquet")
    s2 = Store(tmp_path / "out")
    assert s2.removed_orphans == 1 and s2.done() == (set(), {("ab", None)})
    with pytest.raises(Exception, match="another wirefall batch"):
        Store(tmp_path / "out")
    s2.close()


def test_without_dask_batch_says_what_to_install(tmp_path):
    code = ("import sys; sys.modules['distributed'] = None; sys.modules['dask'] = None\n"
            "from wirefall.ui.cli import main; sys.exit(main(sys.argv[1:]))")
    r = subprocess.run([PY, "-c", code, "batch", str(SAMPLES / "tls"), "-o", str(tmp_path / "o")], capture_output=True, text=True, env=ENV, timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip() == "wirefall: batch needs dask, distributed (the cluster extra): pip install 'wirefall[cluster]'"
    assert not (tmp_path / "o").exists()


def test_inputs_that_name_nothing_are_usage_errors(tmp_path):
    rc, _, err = cli("batch", str(tmp_path / "nope.pcap"), "-o", str(tmp_path / "o"))
    assert rc == 2 and "no such file or folder" in err
    rc, _, err = cli("batch", str(tmp_path / "*.pcapng"), "-o", str(tmp_path / "o"))
    assert rc == 2 and "no file matches" in err
    rc, _, err = cli("batch", str(SAMPLES / "tls"), "-o", str(tmp_path / "o"), "--group-by", "colour")
    assert rc == 2 and "unknown column(s) colour" in err


@pytest.mark.slow
def test_batch_outputs_hold_no_key_material(small_out):
    """Every value of every dataset (decoded: the part files are zstd-compressed) and every file
    of OUT is searched for every secret of the captures' key logs, in every form test_secrets checks."""
    from test_secrets import _secrets_of, leaks

    out = small_out
    secrets = [s for rel in SMALL if (SAMPLES / rel).with_suffix(".keys").exists()
               for s in _secrets_of((SAMPLES / rel).with_suffix(".keys").read_text())]
    assert len(secrets) >= 8
    for name in ("requests", "connections", "pages", "errors"):
        text = json.dumps(read_dataset(out, name).to_pylist(), default=str, ensure_ascii=False)
        assert not leaks(text, secrets), f"key material in {name}.parquet"
    for p in out.rglob("*"):
        if p.is_file():
            assert not leaks(p.read_bytes(), secrets), f"key material in {p.name}"


def test_task_results_for_a_changed_file_and_a_file_that_is_not_a_capture(tmp_path):
    """The task alone (what a worker runs): rows only for the bytes the client hashed."""
    from wirefall.analyzer.batch.inputs import collect
    from wirefall.analyzer.batch.rows import analyze_task

    cap = tmp_path / "a.pcap"
    cap.write_bytes((SAMPLES / "http" / "http1-nginx.pcap").read_bytes())
    job = collect([str(cap)], use_env=False)[0].to_dict()
    ok = analyze_task(job)
    assert ok["pages"].num_rows == 1 and ok["requests"].num_rows == len(serial_requests(str(cap), []))
    cap.write_bytes(cap.read_bytes() + b"\0" * 16)  # the file grew after the client hashed it
    r = analyze_task(job)
    assert list(r) == ["errors"] and r["errors"].column("kind").to_pylist() == ["changed"]
    cap.write_bytes(batch_inputs.not_a_capture())
    r = analyze_task(dict(job, sha256=None))
    rc, _, err = cli("requests", str(cap))
    assert r["errors"].column("kind").to_pylist() == ["not_a_capture"] and err.strip() == f"wirefall: {r['errors'].column('error')[0]}"


@pytest.mark.slow
def test_a_capture_whose_worker_dies_every_time_is_a_worker_died_row(tmp_path):
    """The worker process that reads the capture is killed (a FIFO nobody writes: the read never
    ends), with ``allowed-failures`` 0: the capture is a ``worker_died`` row, the other worker
    analyses the rest."""
    import dask
    from distributed import Client, LocalCluster

    from wirefall.analyzer.batch.inputs import Job, collect
    from wirefall.analyzer.batch.run import run_batch

    fifo = tmp_path / "stuck.pcap"
    os.mkfifo(fifo)
    good = collect([str(SAMPLES / "tls" / "tls13_aes128gcm.pcap")], use_env=False)
    jobs = [Job(path=str(fifo), sha256="f" * 64)] + good
    out = tmp_path / "out"
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        pids = client.run(os.getpid)

        def kill_the_stuck_one():
            def holder():
                return next((w for w, keys in client.processing().items() for k in keys if "ffffffffffff" in str(k)), None)

            w = _wait_for(holder, 60, "the stuck task")
            time.sleep(0.5)  # (reading the FIFO by now)
            os.kill(pids[w], signal.SIGKILL)

        import threading

        threading.Thread(target=kill_the_stuck_one, daemon=True).start()
        res = run_batch(jobs, str(out), client=client)
    assert (res.analysed, res.errors) == (1, 1)
    (e,) = read_dataset(out, "errors").to_pylist()
    assert (e["capture"], e["kind"]) == (str(fifo), "worker_died")
    assert [p["capture"] for p in read_dataset(out, "pages").to_pylist()] == [good[0].path]


def test_memory_limit_that_is_no_size_or_too_small_is_a_usage_error(tmp_path):
    """'lots' once ended with exit 1 and Dask's message; 100MB with every worker paused before its
    first capture and the batch waiting for ever, silently (review 24)."""
    rc, _, err = cli("batch", str(SAMPLES / "tls"), "-o", str(tmp_path / "o"), "--memory-limit", "lots")
    assert rc == 2 and "--memory-limit: 'lots' is not a size" in err, err
    rc, _, err = cli("batch", str(SAMPLES / "tls"), "-o", str(tmp_path / "o"), "--memory-limit", "100MB")
    assert rc == 2 and "--memory-limit 100MB is below 256MB" in err, err
    assert not (tmp_path / "o").exists()


def test_a_glob_leaves_key_logs_to_their_captures():
    """'page/page-h2*' matched page-h2.keys and made it an error row (review 24); its captures and
    browser logs are inputs, the key log is the capture's."""
    from wirefall.analyzer.batch.inputs import collect

    jobs = collect([str(SAMPLES / "page" / "pw-h2*")], use_env=False)
    names = sorted(os.path.basename(j.path) for j in jobs)
    assert names == ["pw-h2.har.gz", "pw-h2.netlog.json.gz", "pw-h2.pcapng"]
    (cap,) = [j for j in jobs if j.path.endswith(".pcapng")]
    assert cap.keylogs == [str(SAMPLES / "page" / "pw-h2.keys")]


@pytest.mark.slow
def test_a_rerun_says_when_a_manifest_now_gives_other_conditions(tmp_path):
    """A manifest written after a first batch: its conditions were dropped without a word for
    captures already in OUT (review 24).  Now the rerun names them; the same manifest again says
    nothing."""
    from distributed import Client, LocalCluster

    from wirefall.analyzer.batch.inputs import collect
    from wirefall.analyzer.batch.run import run_batch

    exp = tmp_path / "exp"
    exp.mkdir()
    m = json.loads((SAMPLES / "lossy" / "manifest.json").read_text())
    m["runs"] = [r for r in m["runs"] if r["protocol"] in ("h1", "h2")]
    for r in m["runs"]:
        for k in ("capture", "keys"):
            shutil.copy(SAMPLES / "lossy" / r["files"][k], exp / r["files"][k])
    (exp / "manifest.json").write_text(json.dumps(m))
    out = tmp_path / "out"
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, Client(cluster) as client:
        res = run_batch(collect([str(exp)], use_env=False), str(out), client=client)
    assert (res.analysed, res.conditions_not_applied) == (2, [])
    res = run_batch(collect([str(exp)], use_env=False), str(out))  # (nothing to analyse: no cluster)
    assert (res.skipped_done, res.conditions_not_applied) == (2, [])
    for r in m["runs"]:
        r["condition"] = "lan"
    (exp / "manifest.json").write_text(json.dumps(m))
    res = run_batch(collect([str(exp)], use_env=False), str(out))
    assert res.skipped_done == 2 and sorted(res.conditions_not_applied) == sorted(str(exp / r["files"]["capture"]) for r in m["runs"])


def test_an_input_naming_a_file_already_given_is_said(tmp_path):
    """A symbolic link to an input (or the same file by another path) is taken once, as before,
    and now named (review 24: it was folded away without a word)."""
    from wirefall.analyzer.batch.inputs import collect

    a = tmp_path / "a.pcap"
    shutil.copy(SAMPLES / "http" / "h2c-curl.pcap", a)
    (tmp_path / "c-link.pcap").symlink_to(a)
    folded: list[str] = []
    jobs = collect([str(a), str(tmp_path / "c-link.pcap"), str(tmp_path / "." / "a.pcap")], use_env=False, folded=folded)
    assert [j.path for j in jobs] == [str(a)]
    assert folded == [str(tmp_path / "c-link.pcap"), str(tmp_path / "." / "a.pcap")]
