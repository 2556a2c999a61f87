import os
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

import pytest

import fuzz.profiles  # noqa: F401  (registers --hypothesis-profile=long)

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "captures"
SAMPLES = ROOT / "sample_captures"


def shared(rel: str) -> Path:
    p = SHARED / rel
    if not p.exists():
        pytest.skip(f"third-party capture {rel} not present (../shared/captures)")
    return p


def need_tool(name: str) -> str:
    path = shutil.which(name)
    if not path:
        pytest.skip(f"{name} not installed")
    return path


@lru_cache(maxsize=256)
def run_tool(*args: str) -> str:
    """Run an external tool (tshark, capinfos …) and return its stdout (cached)."""
    need_tool(args[0])
    env = dict(os.environ, LC_ALL="C")
    out = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed: {out.stderr[-500:]}")
    return out.stdout


# The fast tier: tests named in tests/slow.txt (scripts/slow_tests.py writes it from a CI run), and whole files that drive browsers or the lab,
# are marked ``slow`` (deselect with -m "not slow").
SLOW_FILES = {"test_lab.py", "test_web_browser.py"}
_SLOW = {ln.strip() for ln in (ROOT / "tests" / "slow.txt").read_text().splitlines() if ln.strip() and not ln.startswith("#")}


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath))
        name = f"tests/{path.name}::{item.originalname or item.name}"
        if path.name in SLOW_FILES or name in _SLOW or item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)


def vm_hwm_kb(pid: int | str = "self") -> int:
    """A process's own peak RSS in KiB (``VmHWM``, per address space: it starts again at exec).
    ``getrusage``/``wait4`` ``ru_maxrss`` would not do: Linux carries the pre-exec image's peak
    over an exec, so a CLI started from a large pytest worker reports the worker's size."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for ln in f:
                if ln.startswith("VmHWM:"):
                    return int(ln.split()[1])
    except OSError:
        pass
    return 0


def unpack_amazon(d: Path) -> tuple[Path, Path]:
    """The third-party amazon page load and its key log unpacked into ``d`` (once):
    (``amazon1.cap``, ``amazon1.key_log.txt``); skipped without them."""
    import gzip

    src = SHARED / "pageload-amazon"
    if not (src / "amazon1.cap.gz").exists():
        pytest.skip("../shared/captures/pageload-amazon is not present")
    out = []
    for name in ("amazon1.cap", "amazon1.key_log.txt"):
        if not (d / name).exists():
            (d / name).write_bytes(gzip.decompress((src / f"{name}.gz").read_bytes()))
        out.append(d / name)
    return out[0], out[1]


@pytest.fixture(scope="module")
def amazon(tmp_path_factory):
    """A folder with the third-party amazon page load (``amazon1.cap``) and its key log
    (``amazon1.key_log.txt``) unpacked; skipped without them or WebPageTest's HAR of it."""
    if not (SHARED / "hars" / "webpagetest-amazon.har.gz").exists():
        pytest.skip("third-party captures not present (../shared/captures)")
    d = tmp_path_factory.mktemp("amazon")
    unpack_amazon(d)
    return d


def sample_captures() -> list[tuple[Path, list[str]]]:
    """Every bundled capture (sample_captures/, .pcap and .pcapng) with its key log (FILE.keys) when it has one."""
    out = []
    for p in sorted(SAMPLES.rglob("*")):
        if p.suffix in (".pcap", ".pcapng"):
            k = p.with_suffix(".keys")
            out.append((p, [str(k)] if k.exists() else []))
    return out


_ANALYSED: dict = {}


def analysed(path: Path, keys: list[str]):
    """``analyze(path, keylogs=keys)`` once per path for the session, $SSLKEYLOGFILE not read."""
    if path not in _ANALYSED:
        import os

        from wirefall.analyzer.pipeline import analyze

        old = os.environ.pop("SSLKEYLOGFILE", None)
        try:
            _ANALYSED[path] = analyze(str(path), keylogs=keys)
        finally:
            if old is not None:
                os.environ["SSLKEYLOGFILE"] = old
    return _ANALYSED[path]


def capture_and_keys(where: str, cap: str, keys: str | None, tmp_path: Path) -> tuple[str, str | None]:
    """A capture and its key log, from sample_captures (``where`` "sample") or ../shared/captures
    ("shared"), gzipped ones unpacked into ``tmp_path`` (tshark and wirefall then read the same
    file); skipped when the capture is not there."""
    import gzip

    root = SHARED if where == "shared" else SAMPLES

    def plain(p: Path) -> str:
        if p.suffix != ".gz":
            return str(p)
        out = tmp_path / p.stem
        out.write_bytes(gzip.decompress(p.read_bytes()))
        return str(out)

    if not (root / cap).exists():
        pytest.skip(f"{cap} not present")
    return plain(root / cap), plain(root / keys) if keys else None
