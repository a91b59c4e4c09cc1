"""The previous release of mchub, run beside this one: its source from git, its processes.

The project has no release tags, so the previous release is the commit named in
tests/compat/PREVIOUS (one line, the commit's full hash): the last commit before the wire
(proto/) last changed. Move it forward when a release is cut or the wire changes again, with
tests/compat/previous_proto (that commit's proto/), which `make lint` checks the wire against
(buf breaking) without needing git history.

Its tree comes from this clone's history (``git archive``) into a temporary directory, and its
hub and member run as subprocesses of this venv's interpreter with that directory first on
``sys.path`` (the working directory of ``python -m``), so they import the old packages and
the dependencies installed here. Without that commit in the history (a shallow clone, a
source tarball) the tests skip, saying so: no package brings history back, so CI skips too.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import tarfile
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PREVIOUS_COMMIT = (Path(__file__).with_name("PREVIOUS")).read_text().strip()
START_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0
_HUB_GRPC = re.compile(r"hub: gRPC on (\S+)")


def _git(*argv: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(REPO), *argv], capture_output=True, check=False)


def previous_tree(dest: Path) -> Path:
    """The previous release's source in ``dest`` (skipped, or failed in CI, without it in git)."""
    if _git("cat-file", "-e", f"{PREVIOUS_COMMIT}^{{commit}}").returncode != 0:
        shallow = _git("rev-parse", "--is-shallow-repository").stdout.decode().strip() == "true"
        why = "this clone is shallow" if shallow else "no git history here"
        pytest.skip(f"the previous release {PREVIOUS_COMMIT[:12]} (tests/compat/PREVIOUS) is not in git: {why}")
    archive = dest.with_suffix(".tar")
    made = _git("archive", "--format=tar", "-o", str(archive), PREVIOUS_COMMIT)
    assert made.returncode == 0, made.stderr.decode()
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    archive.unlink()
    # What its processes import must be its own code, not this checkout's (installed editable).
    where = subprocess.run(
        [sys.executable, "-c", "import hub, member; print(hub.__file__); print(member.__file__)"],
        cwd=dest, env=_env(dest), capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert all(Path(line).is_relative_to(dest) for line in where.stdout.split()), where.stdout
    return dest


def _env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree)}


@asynccontextmanager
async def previous_mchub(tree: Path, log: Path, *argv: str, ready: re.Pattern[str]) -> AsyncIterator[re.Match[str]]:
    """Run ``mchub argv...`` of the previous release until the context ends (SIGTERM, then
    SIGKILL); yields the first line of its output that matches ``ready``."""
    with log.open("ab") as log_file:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "mchub_cli.main", *argv,
            cwd=tree, env=_env(tree), stdout=asyncio.subprocess.PIPE, stderr=log_file,
        )  # fmt: skip
    try:
        assert process.stdout is not None
        async with asyncio.timeout(START_TIMEOUT):
            while not (match := ready.search(line := (await process.stdout.readline()).decode())):
                assert line, f"the previous release's `mchub {argv[0]}` exited: {log.read_text(errors='replace')}"
        yield match
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                async with asyncio.timeout(STOP_TIMEOUT):
                    await process.wait()
            except TimeoutError:
                process.kill()
        await process.wait()


async def previous_token(tree: Path, data_dir: Path, cluster_id: str) -> str:
    """A member token issued by the previous release's hub CLI (before that hub starts)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "mchub_cli.main", "hub", "token", "create", "--data-dir", str(data_dir),
        "--cluster-id", cluster_id,
        cwd=tree, env=_env(tree), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode().strip()


def previous_hub(
    tree: Path, data_dir: Path, clusterset_id: str, leader_cluster_id: str
) -> AbstractAsyncContextManager[re.Match[str]]:
    """The previous release's hub (SQLite store, TLS from its data dir) on a free port; the
    match's group 1 is its gRPC target."""
    argv = (
        "hub", "--data-dir", str(data_dir), "--grpc-address", "127.0.0.1:0", "--rest-address", "127.0.0.1:0",
        "--clusterset-id", clusterset_id, "--leader-cluster-id", leader_cluster_id,
    )  # fmt: skip
    return previous_mchub(tree, data_dir.with_suffix(".log"), *argv, ready=_HUB_GRPC)
