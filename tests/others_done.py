"""Tests that measure time run after the rest of `make test` (tests/run_suite.py).

run_suite.py runs most folders in two processes at once and the timing ones (tests/datapath,
tests/nodes) in a third; it sets OTHERS_DONE to a file it creates once the two have ended.
Probes of 50 ms, failover gaps in seconds and failed requests are then measured with the machine
to themselves, as in one process; under plain `pytest` nothing waits."""

from __future__ import annotations

import os
import time
from pathlib import Path

OTHERS_DONE = "MCHUB_SUITE_OTHERS_DONE"


def wait_for_the_other_tests() -> None:
    """Return once the other processes of the suite have ended (at once outside run_suite)."""
    done = os.environ.get(OTHERS_DONE)
    while done and not Path(done).exists():
        time.sleep(1)
