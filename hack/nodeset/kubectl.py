"""kubectl, as a user drives a cluster: one kubeconfig (and context), commands, waits."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


class KubectlError(RuntimeError):
    """kubectl exited non-zero; the message holds the command and its stderr."""


@dataclass(frozen=True)
class Kubectl:
    kubeconfig: Path
    context: str | None = None

    def base(self) -> list[str]:
        args = ["kubectl", "--kubeconfig", str(self.kubeconfig)]
        if self.context:
            args += ["--context", self.context]
        return args

    def __call__(self, *args: str, stdin: str | None = None, check: bool = True, timeout: float = 120) -> str:
        done = subprocess.run(
            [*self.base(), *args], input=stdin, capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and done.returncode != 0:
            raise KubectlError(f"kubectl {' '.join(args)} exited {done.returncode}: {done.stderr.strip()[-1500:]}")
        return done.stdout

    def popen(self, *args: str) -> subprocess.Popen[str]:
        """kubectl running in the background (its stdout a pipe), e.g. an exec that holds connections."""
        return subprocess.Popen([*self.base(), *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def apply(self, manifest: str, *args: str) -> str:
        return self("apply", *args, "-f", "-", stdin=manifest)

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "-o", "json"))

    def exists(self, *args: str) -> bool:
        return self("get", *args, "--ignore-not-found", "-o", "name", check=False).strip() != ""


def until(what: str, probe: Callable[[], T | None], timeout: float = 120, interval: float = 0.5) -> T:
    """Poll ``probe`` until it returns something other than None (or False); raise with ``what``
    and the last error when ``timeout`` runs out. A probe that raises counts as not yet."""
    deadline = time.monotonic() + timeout
    last: str = "never true"
    while True:
        try:
            value = probe()
            if value is not None and value is not False:
                return value
        except (KubectlError, subprocess.TimeoutExpired, KeyError, IndexError, ValueError) as err:
            last = str(err)
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s ({last})")
        time.sleep(interval)
