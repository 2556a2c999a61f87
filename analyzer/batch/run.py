"""The batch on Dask: one task per capture on a ``distributed.LocalCluster`` (default) or on the
scheduler given, results written to OUT as they come (``analyzer.batch.store``).

Faults:
- a bad capture is an errors row (``rows.analyze_task``), the batch goes on;
- a worker that dies (killed, out of memory, its machine gone) loses the tasks it was running
  and the results it held: the scheduler runs them again on the other workers (the tasks are
  pure).  A capture whose task was on ``distributed.scheduler.allowed-failures`` + 1 workers
  that died (default 3 + 1: a capture that kills every worker it meets) comes back as
  ``KilledWorker`` and is an errors row of kind ``worker_died``;
- an ``OSError`` in a task (a file that could not be read) is tried ``RETRIES`` more times,
  then is an errors row of kind ``failed``;
- Ctrl-C: what was finished is flushed to OUT, the rest is analysed by the next run.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from wirefall.analyzer.batch.inputs import Job
from wirefall.analyzer.batch.rows import ERRORS, analyze_task, error_row
from wirefall.analyzer.batch.store import Store

RETRIES = 2
TASK_PREFIX = "wirefall-capture"


@dataclass
class BatchResult:
    total: int = 0  # inputs
    analysed: int = 0  # pages rows written in this run
    errors: int = 0  # errors rows written in this run
    skipped_done: int = 0  # already in OUT
    skipped_same: int = 0  # same content and keys as another input of this run
    # already in OUT, whose lab manifest now gives other conditions than its rows were written
    # with (a rerun keeps the first analysis: the new conditions are not applied)
    conditions_not_applied: list[str] = field(default_factory=list)
    retried_errors: int = 0
    seconds: float = 0.0
    dashboard: str | None = None
    scheduler: str | None = None
    workers: int = 0
    messages: list[str] = field(default_factory=list)


def _stderr_bar_class():
    from distributed.diagnostics.progressbar import TextProgressBar

    class StderrProgressBar(TextProgressBar):
        """Dask's own text progress bar, on stderr (stdout stays for the summary)."""

        def _draw_bar(self, remaining, all, **kwargs):
            from dask.utils import format_time

            frac = (1 - remaining / all) if all else 1.0
            sys.stderr.write("\r[{0:<{1}}] | {2}% Completed | {3}".format("#" * int(self.width * frac), self.width, int(100 * frac),
                                                                           format_time(self.elapsed)))
            sys.stderr.flush()

        def _draw_stop(self, **kwargs):
            sys.stderr.write("\33[2K\r")
            sys.stderr.flush()

    return StderrProgressBar


def _start_bar(futures, scheduler: str) -> threading.Thread:
    cls = _stderr_bar_class()

    def run():
        try:
            cls(futures, scheduler=scheduler, complete=True)
        except Exception:  # noqa: BLE001 - the bar is a view: the batch goes on without it
            pass

    t = threading.Thread(target=run, name="wirefall-progress", daemon=True)
    t.start()
    return t


def open_client(scheduler: str | None, workers: int | None, memory_limit: str | None = None, log=None):
    """A ``distributed.Client`` on the scheduler given, or on a new LocalCluster of ``workers``
    single-threaded worker processes (default: one per core), its dashboard on a free loopback
    port.  Returns (client, cluster or None)."""
    from distributed import Client, LocalCluster

    if scheduler:
        return Client(scheduler, timeout="15s"), None
    n = workers or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address="127.0.0.1:0", memory_limit=memory_limit or "auto", silence_logs=40)
    return Client(cluster), cluster


def run_batch(jobs: list[Job], out: str, client=None, scheduler: str | None = None, workers: int | None = None,
              limits: dict | None = None, retry_errors: bool = False, progress: bool = False, memory_limit: str | None = None,
              log: Callable[[str], None] | None = None, on_done: Callable[[Job, str, int], None] | None = None) -> BatchResult:
    """Analyse ``jobs`` into OUT.  ``client``: an open ``distributed.Client`` to use (tests);
    else one is opened (``open_client``) and closed at the end.  ``on_done(job, outcome, total)`` (total: the captures this run analyses or records as errors) is
    called as each capture is written ("ok" or the error kind)."""
    from distributed import as_completed
    from distributed.scheduler import KilledWorker

    say = log or (lambda s: None)
    t0 = time.perf_counter()
    res = BatchResult(total=len(jobs))
    store = Store(out)
    own = None
    try:
        if store.removed_orphans:
            say(f"removed {store.removed_orphans} part file(s) of a batch that was stopped before it committed them")
        done, errs = store.done()
        if retry_errors and errs:
            retry = {j.key for j in jobs if j.key in errs and j.key not in done}
            res.retried_errors = store.drop_errors(retry)
            errs -= retry
        todo: list[Job] = []
        bad: list[Job] = []
        relabelled: list[Job] = []
        seen: set = set()
        for j in jobs:
            if j.problem is not None:
                if j.key not in done and j.key not in errs or j.sha256 is None:
                    bad.append(j)
                else:
                    res.skipped_done += 1
                continue
            if j.key in done or j.key in errs:
                res.skipped_done += 1
                if j.key in done and any(v is not None for v in j.conditions.values()):
                    relabelled.append(j)
                continue
            if j.key in seen:
                res.skipped_same += 1
                continue
            seen.add(j.key)
            todo.append(j)
        if relabelled:
            stored = store.conditions_of({j.key for j in relabelled})
            res.conditions_not_applied = [j.path for j in relabelled if stored.get(j.key, j.conditions) != j.conditions]
        total = len(bad) + len(todo)  # (what on_done counts to: the inputs skipped are not among them)
        for j in bad:
            store.add({"errors": _errors_table(j, "unreadable", j.problem or "")})
            res.errors += 1
            if on_done:
                on_done(j, "unreadable", total)
        if not todo:
            return res
        if client is None:
            client, own = open_client(scheduler, workers, memory_limit)
        res.scheduler = client.scheduler.address
        try:
            res.dashboard = client.dashboard_link
        except Exception:  # noqa: BLE001 - no dashboard (bokeh missing): no link
            res.dashboard = None
        res.workers = len(client.scheduler_info().get("workers", {}))
        say(f"{len(todo)} capture(s) to analyse on {res.workers} worker(s), scheduler {res.scheduler}"
            + (f", dashboard {res.dashboard}" if res.dashboard else ""))
        futures = {}
        for i, j in enumerate(todo):
            key = f"{TASK_PREFIX}-{i:06d}-{j.sha256[:12] if j.sha256 else 'x'}"
            f = client.submit(analyze_task, j.to_dict(), limits, key=key, retries=RETRIES, pure=True)
            futures[f] = j
        bar = _start_bar(list(futures), res.scheduler) if progress else None
        try:
            for fut in as_completed(list(futures)):
                j = futures.pop(fut)
                try:
                    r = fut.result()
                    outcome = "ok" if "pages" in r else str(r["errors"].column("kind")[0].as_py())
                except KilledWorker as e:
                    r = {"errors": _errors_table(j, "worker_died", f"the worker analysing it died {e.args[2] + 1 if len(e.args) > 2 else ''} "
                                                                  "time(s) (killed, or out of memory): not retried again")}
                    outcome = "worker_died"
                except Exception as e:  # noqa: BLE001 - an OSError past its retries, a lost connection: this capture's row
                    r = {"errors": _errors_table(j, "failed", f"{type(e).__name__}: {e}")}
                    outcome = "failed"
                fut.release()
                store.add(r)
                if outcome == "ok":
                    res.analysed += 1
                else:
                    res.errors += 1
                if on_done:
                    on_done(j, outcome, total)
        finally:
            for f in futures:  # interrupted: nothing more to compute
                f.cancel()
            if bar is not None:
                bar.join(timeout=2)
    finally:
        try:
            store.close()
        finally:
            if own is not None:
                client.close()
                own.close()
            res.seconds = time.perf_counter() - t0
    return res


def _errors_table(job: Job, kind: str, message: str):
    import pyarrow as pa

    return pa.Table.from_pylist([error_row(job.to_dict(), kind, message)], schema=ERRORS)
