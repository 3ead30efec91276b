"""Fixtures of the shared harness `tests.harness.release`."""

from tests.harness.release import harness, pristine  # noqa: F401
