"""A hub run as its own process (`mchub hub ...`), for kill and restart tests."""

from __future__ import annotations

import asyncio
import re
import ssl
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp

_LISTENING = re.compile(r"hub: gRPC on (\S+)")
_REST = re.compile(r"hub: REST on (\S+)")


@dataclass
class HubProcess:
    process: asyncio.subprocess.Process
    target: str
    rest_url: str
    ca: bytes
    # What the hub logged (its stderr), for tests that check what it says.
    log: Path

    def logged(self, text: str) -> bool:
        return text in self.log.read_text(errors="replace")

    def rest_session(self) -> aiohttp.ClientSession:
        """A session on the hub's REST URL that verifies its certificate against the data dir's CA."""
        trust = ssl.create_default_context(cadata=self.ca.decode())
        return aiohttp.ClientSession(base_url=self.rest_url, connector=aiohttp.TCPConnector(ssl=trust))


@asynccontextmanager
async def hub_process(data_dir: Path, *extra: str) -> AsyncIterator[HubProcess]:
    """Start `mchub hub` on free ports, its log in `<data_dir>.log`; SIGKILL it at exit if it still runs."""
    log = data_dir.with_name(f"{data_dir.name}.log")
    with log.open("ab") as log_file:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "mchub_cli.main", "hub",
            "--data-dir", str(data_dir), "--grpc-address", "127.0.0.1:0", "--rest-address", "127.0.0.1:0", *extra,
            stdout=asyncio.subprocess.PIPE, stderr=log_file,
        )  # fmt: skip
    try:
        assert process.stdout is not None
        target = rest = ""
        while not (target and rest):
            line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
            assert line, "the hub exited before listening"
            if match := _LISTENING.search(line):
                target = match.group(1)
            if match := _REST.search(line):
                rest = match.group(1)
        yield HubProcess(process, target, rest, (data_dir / "tls" / "ca.crt").read_bytes(), log)
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()
