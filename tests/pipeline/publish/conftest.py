"""Fixtures of the shared harness `tests.harness.tuf`."""

from tests.harness.tuf import bundles, mirror, world  # noqa: F401
