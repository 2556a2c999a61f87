"""Regenerate tests/slow.txt from a whole-suite run's JUnit report.

    bash scripts/dev test            # writes .ci/junit.xml (ignored by git)
    python scripts/slow_tests.py .ci/junit.xml [--over 2.0] [--write]

A test function goes into the slow list when any of its parameters took more than OVER
seconds (call time as pytest measured it, setup included); files in conftest.SLOW_FILES are
slow as a whole and not listed. Without --write the list and the fast tier's expected serial
time are printed, so a change can be read before it is made.
"""
from __future__ import annotations

import argparse
import re
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEADER = """# Tests left out of the fast tier (`pytest -m "not slow"`, `bash scripts/dev fast`): each took over {over:g} s
# in a measured run of the whole suite (file::function; every parameter of a function alike).
# CI runs them all. Regenerate: `python scripts/slow_tests.py .ci/junit.xml --write` after `bash scripts/dev test`.
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("junit")
    ap.add_argument("--over", type=float, default=0.5)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tests"))
    slow_files = {"test_lab.py", "test_web_browser.py"}
    try:
        from conftest import SLOW_FILES  # type: ignore[import-not-found]
        slow_files = set(SLOW_FILES)
    except Exception:
        pass
    worst: dict[str, float] = defaultdict(float)
    total: dict[str, float] = defaultdict(float)
    for tc in ET.parse(a.junit).getroot().iter("testcase"):
        cls, name = tc.get("classname", ""), tc.get("name", "")
        fname = cls.split(".")[-1] if not cls.startswith("tests.") else cls.split(".")[1]
        if not fname.startswith("test_"):
            continue
        func = re.sub(r"\[.*\]$", "", name)
        key = f"tests/{fname}.py::{func}"
        t = float(tc.get("time") or 0.0)
        worst[key] = max(worst[key], t)
        total[key] += t
    slow = sorted(k for k, t in worst.items() if t > a.over and k.split("::")[0].split("/")[1] not in slow_files)
    fast_s = sum(t for k, t in total.items() if k not in slow and k.split("::")[0].split("/")[1] not in slow_files)
    text = HEADER.format(over=a.over) + "".join(k + "\n" for k in slow)
    if a.write:
        (ROOT / "tests" / "slow.txt").write_text(text)
    else:
        sys.stdout.write(text)
    print(f"# {len(slow)} slow functions; the fast tier's serial time in that run: {fast_s:.0f} s "
          f"(about {fast_s / 2:.0f} s on 2 workers)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
