"""`make test`: the suite in three pytest processes at once.

The suite spends about half its time waiting on other processes (API servers, kubelets, leases,
Pods), so one process leaves much of the machine idle. Here:
- tests/datapath and tests/nodes run in one. Its node ClusterSet and the upstream conformance
  suite start at once, in the background, as they do in a single process (tests/nodes/early.py).
  Its tests then wait until the other two processes have ended (tests/others_done.py), so the
  probe verdicts, failover gaps and failed requests they count are measured with the machine to
  themselves, as before.
- the other folders run in two, split about evenly by their time (FIRST; a folder not named there
  goes to the second).

Each process's output goes to test-artifacts/suite/<name>.log and is printed whole when it ends;
the exit status is non-zero when any process failed. `pytest` alone still runs everything in one
process. Arguments are passed to each pytest.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.others_done import OTHERS_DONE

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
LOGS = ROOT / "test-artifacts" / "suite"
NODES = "nodes"
# The folders whose tests measure time (probes of 50 ms, gaps, failed requests): the third process,
# once the other two have ended (tests/others_done.py). tests/datapath waits in its conftest.
AFTER_THE_OTHERS = ("datapath", NODES)
NOTHING_SELECTED = 5  # pytest's exit status when -k or -m left a process no test
# About half the time of the remaining folders (seconds per folder, printed by each run).
FIRST = {"browser", "compat", "contract", "ctl", "deploy", "kube", "kubeenv", "member_dns", "member_gateway"}
FIRST |= {"sandbox", "member", "member_hubclient", "member_identities", "member_imports"}


@dataclass
class Part:
    name: str
    folders: list[str]
    process: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    code: int | None = None

    @property
    def log(self) -> Path:
        return LOGS / f"{self.name}.log"


def folders_with_tests() -> list[str]:
    return sorted(p.name for p in TESTS.iterdir() if p.is_dir() and any(p.glob("test_*.py")))


def parts() -> list[Part]:
    every = folders_with_tests()
    others = [f for f in every if f not in AFTER_THE_OTHERS]
    return [
        Part(NODES, [f for f in every if f in AFTER_THE_OTHERS]),
        Part("first", [f for f in others if f in FIRST]),
        Part("second", [f for f in others if f not in FIRST]),
    ]


def start(part: Part, args: list[str], env: dict[str, str]) -> None:
    part.started = time.monotonic()
    with part.log.open("wb") as log:
        part.process = subprocess.Popen(
            [sys.executable, "-m", "pytest", *args, *(f"tests/{f}" for f in part.folders)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def report(part: Part) -> None:
    seconds = time.monotonic() - part.started
    print(f"\n==== {part.name}: {' '.join(part.folders)} (exit {part.code}, {seconds:.0f} s) ====", flush=True)
    sys.stdout.write(part.log.read_text(errors="replace"))
    sys.stdout.flush()


def main(args: list[str]) -> int:
    LOGS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mchub-suite-") as scratch:
        done = Path(scratch) / "others-done"
        env = {**os.environ, OTHERS_DONE: str(done)}
        every = parts()
        for part in every:
            start(part, args, env)
        print(f"pytest in {len(every)} processes: " + "; ".join(f"{p.name}: {' '.join(p.folders)}" for p in every))
        try:
            pending = list(every)
            while pending:
                for part in list(pending):
                    assert part.process is not None
                    part.code = part.process.poll()
                    if part.code is None:
                        continue
                    pending.remove(part)
                    report(part)
                if all(p.name == NODES for p in pending) and not done.exists():
                    done.touch()
                time.sleep(0.5)
        except KeyboardInterrupt:
            for part in every:
                if part.process is not None and part.process.poll() is None:
                    part.process.send_signal(signal.SIGINT)
            for part in every:
                if part.process is not None:
                    part.process.wait()
            return 130
    failed = [p.name for p in every if p.code not in (0, NOTHING_SELECTED)]
    print(f"\nsuite: {'failed in ' + ', '.join(failed) if failed else 'every process passed'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
