"""Hypothesis profiles of the fuzz tests.

``--hypothesis-profile=long`` needs the profile registered before pytest configures
hypothesis: load this module as a plugin (``pytest -p fuzz.profiles
--hypothesis-profile=long tests/test_fuzz.py``) or import it from ``tests/conftest.py``.
``WIREFALL_FUZZ_PROFILE=long`` works without either.
"""
from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

COMMON = dict(deadline=None, derandomize=False, print_blob=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
settings.register_profile("long", max_examples=3000, **COMMON)


def is_long() -> bool:
    return os.environ.get("WIREFALL_FUZZ_PROFILE") == "long" or settings.get_current_profile_name() == "long"


def fuzz_settings(default_examples: int):
    """Settings for one fuzz test: a modest budget by default, the long profile's when asked."""
    if is_long():
        return settings(max_examples=settings.get_profile("long").max_examples, **COMMON)
    return settings(max_examples=default_examples, **COMMON)
