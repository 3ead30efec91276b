"""`python -m tests.jstools check`: the JS type check of `nox -s lint`."""

from __future__ import annotations

import sys

from tests.jstools import check

if __name__ == "__main__":
    if sys.argv[1:] != ["check"]:
        sys.exit("usage: python -m tests.jstools check")
    sys.exit(check())
