"""Running kubectl against the cluster under test."""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

KUBECTL = shutil.which("kubectl")


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    def check(self) -> Result:
        assert self.code == 0, f"kubectl failed ({self.code}): {self.stderr or self.stdout}"
        return self


def normalized(line: str) -> str:
    """A table line with runs of spaces collapsed, so column widths do not matter."""
    return " ".join(line.split())


class Kubectl:
    def __init__(self, kubeconfig: Path, cache_dir: Path | None = None) -> None:
        """cache_dir: kubectl's discovery cache (default: next to the kubeconfig)."""
        assert KUBECTL is not None
        self.binary = KUBECTL
        cache = cache_dir or kubeconfig.parent / "cache"
        self.env = {**os.environ, "KUBECONFIG": str(kubeconfig), "KUBECACHEDIR": str(cache)}

    async def __call__(self, *args: str, stdin: str | None = None, within: float = 60) -> Result:
        process = await asyncio.create_subprocess_exec(
            self.binary,
            *args,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env,
        )
        try:
            async with asyncio.timeout(within):
                out, err = await process.communicate(stdin.encode() if stdin is not None else None)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        return Result(process.returncode or 0, out.decode(), err.decode())

    async def start(self, *args: str) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            self.binary,
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env,
        )
