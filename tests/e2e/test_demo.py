"""`mchub demo` (what `make demo` runs) brings the ClusterSet up and cleans up after itself."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


async def test_the_demo_imports_nginx_into_east_and_leaves_nothing_behind(tmp_path: Path) -> None:
    work_dir = tmp_path / "demo"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "mchub_cli.main", "--log-level", "WARNING",
        "demo", "--exit-when-ready", "--rest-port", "0", "--work-dir", str(work_dir),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await asyncio.wait_for(process.communicate(), 120)
    text = output.decode()
    assert process.returncode == 0, text
    assert "east imported it" in text
    assert f"--kubeconfig {work_dir}/test-cluster-east/kubeconfig get serviceimport -n default" in text
    assert "Dashboard:  http://127.0.0.1:" in text
    assert "demo stopped and cleaned up" in text
