"""``wirefall batch INPUTS… -o OUT``: many captures on Dask into Parquet, and a report across
them (docs/BATCH.md).  The machinery is ``analyzer.batch``; the report's figures
``ui.batch_report``; this is the command line."""
from __future__ import annotations

import sys

from wirefall.analyzer.safetext import printable


HELP = "analyse many captures on Dask (local cluster or --scheduler) into Parquet, with a report"


def add_parser(sub, workers_type, limit_type) -> None:
    sp = sub.add_parser("batch", help=HELP,
                        description="Analyse captures, folders, globs and wirefall lab run folders on Dask: "
                                    "OUT/requests.parquet, connections.parquet, pages.parquet, errors.parquet and OUT/report.html "
                                    "(docs/BATCH.md). A rerun skips captures already in OUT.")
    sp.add_argument("inputs", nargs="+", metavar="INPUT", help="capture, folder, glob (quoted) or lab run folder")
    sp.add_argument("-o", "--output", required=True, metavar="OUT", help="output folder (created; added to on a rerun)")
    sp.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler, e.g. tcp://HOST:8786 (default: a local cluster)")
    sp.add_argument("-j", "--workers", type=workers_type, default=None, metavar="N",
                    help="worker processes of the local cluster (default auto: one per core)")
    sp.add_argument("--memory-limit", metavar="SIZE", help="memory per local worker, e.g. 2GB, at least 256MB (default auto: the machine's memory / N; 0: no limit); "
                                                           "a worker over it is restarted and its capture tried elsewhere")
    sp.add_argument("--keylog", action="append", metavar="FILE", help="key log added to every capture's (repeatable)")
    sp.add_argument("--limit", action="append", type=limit_type, metavar="NAME=N", help="raise or lower one decoding budget (as for every command)")
    sp.add_argument("--group-by", metavar="KEYS", help="pages columns the report groups by, comma-separated "
                                                       "(default: lab_protocol or protocol, and condition)")
    sp.add_argument("--retry-errors", action="store_true", help="analyse again the captures that are rows of errors.parquet")
    sp.add_argument("--no-report", action="store_true", help="write the Parquet datasets only")
    sp.add_argument("--no-images", action="store_true", help="report.html without the PNGs")
    sp.add_argument("-v", "--verbose", action="store_true", help="one line per capture as it is written")
    sp.add_argument("--debug", action="store_true", help="show tracebacks")
    sp.set_defaults(func=cmd_batch)


def cmd_batch(args) -> int:
    from wirefall.analyzer.batch import missing
    from wirefall.ui.cli import UsageError, limits_of

    lacking = missing()
    if lacking:
        raise UsageError(f"batch needs {', '.join(lacking)} (the cluster extra): pip install 'wirefall[cluster]'")
    from wirefall.analyzer.batch.inputs import InputError, collect
    from wirefall.analyzer.batch.run import run_batch
    from wirefall.analyzer.batch.store import StoreError

    workers = None if args.workers in (None, "auto") else int(args.workers)
    _check_memory_limit(args.memory_limit)
    if args.scheduler and (workers or args.memory_limit):
        raise UsageError("--workers and --memory-limit are for the local cluster; the scheduler's workers are its own")
    group_by = [k.strip() for k in (args.group_by or "").split(",") if k.strip()] or None
    if group_by:
        from wirefall.analyzer.batch.rows import PAGES

        bad = [k for k in group_by if k not in PAGES.names]
        if bad:
            raise UsageError(f"--group-by: unknown column(s) {', '.join(bad)}; pages columns: {', '.join(PAGES.names)}")
    try:
        folded: list[str] = []
        jobs = collect(args.inputs, args.keylog, folded=folded)
    except InputError as e:
        raise UsageError(str(e)) from None
    err = sys.stderr

    def log(s: str) -> None:
        print(f"wirefall: batch: {printable(s)}", file=err, flush=True)

    if folded:  # (review 24: a symbolic link to an input was folded away without a word)
        log(f"{len(folded)} input(s) name a file already given (a symbolic link or another path to it), taken once: "
            + ", ".join(folded[:3]) + (" …" if len(folded) > 3 else ""))

    n = [0]

    def on_done(job, outcome: str, total: int) -> None:
        n[0] += 1
        if args.verbose:  # (of what this run analyses: a rerun counted to every input, skipped ones too, and never reached it)
            log(f"{n[0]}/{total} {outcome} {job.path}")

    try:
        res = run_batch(jobs, args.output, scheduler=args.scheduler, workers=workers, limits=limits_of(args),
                        retry_errors=args.retry_errors, progress=err.isatty(), memory_limit=args.memory_limit,
                        log=log, on_done=on_done)
    except StoreError as e:
        raise UsageError(str(e)) from None
    except OSError as e:
        if "connect" in str(e).lower() or e.__class__.__name__ in ("CommClosedError", "TimeoutError"):
            raise UsageError(f"cannot reach the scheduler {args.scheduler}: {e}") from None
        raise
    log(f"{res.analysed} analysed, {res.errors} error(s), {res.skipped_done} already in {args.output}"
        + (f", {res.skipped_same} with the same content as another input" if res.skipped_same else "")
        + (f", {res.retried_errors} error row(s) retried" if res.retried_errors else "")
        + f" in {res.seconds:.1f} s")
    if res.conditions_not_applied:  # (review 24: a manifest written after a first batch was dropped without a word)
        k = res.conditions_not_applied
        log(f"warning: {len(k)} capture(s) already in {args.output} have other lab conditions in their manifest now than their rows "
            f"(e.g. {k[0]}): the rows keep those of their first analysis; batch into a new OUT to apply them")
    if not args.no_report:
        from wirefall.ui.batch_report import write_report

        files = write_report(args.output, group_by=group_by, images=not args.no_images)
        log("wrote " + ", ".join(files))
    return 0


# A worker process holds about 100 MB before its first capture and Dask pauses a worker at 80 %
# of its limit: below this, every worker would be paused before it starts and the batch would
# wait for ever without a word (batch review 24)
MEMORY_LIMIT_MIN = 256_000_000


def _check_memory_limit(text: str | None) -> None:
    from dask.utils import parse_bytes

    from wirefall.ui.cli import UsageError

    if text is None or text == "auto":
        return
    try:
        n = parse_bytes(text)
    except (ValueError, TypeError):
        raise UsageError(f"--memory-limit: {text!r} is not a size (e.g. 2GB, 512MiB, auto, or 0 for no limit)") from None
    if n != 0 and n < MEMORY_LIMIT_MIN:
        raise UsageError(f"--memory-limit {text} is below {MEMORY_LIMIT_MIN // 1_000_000}MB: a worker holds about 100 MB "
                         "before its first capture and Dask pauses it at 80 % of its limit, so no capture would ever run")
