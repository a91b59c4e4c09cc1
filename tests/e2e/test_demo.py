"""`mchub demo` (what `make demo` runs) brings the ClusterSet up, speaks to a person in a few
lines (the logs go to a file in its work dir), and cleans up after itself."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

# A log line as mchub_cli.logs.TextFormatter writes it: "12:34:56.789 I hub.app: ..."
LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} [DIWEC] \S+: ", re.MULTILINE)
# The summary is about a dozen lines and progress a handful: well under a screen.
MOST_LINES = 25


async def run_demo(work_dir: Path, *extra: str, expect: int = 0) -> str:
    """The demo as `make demo` runs it (default log level), until the sample is imported; its terminal text."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "mchub_cli.main",
        "demo", "--exit-when-ready", "--rest-port", "0", "--work-dir", str(work_dir), *extra,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await asyncio.wait_for(process.communicate(), 120)
    text = output.decode()
    assert process.returncode == expect, text
    return text


async def test_the_demo_imports_nginx_into_east_and_leaves_nothing_behind(tmp_path: Path) -> None:
    work_dir = tmp_path / "demo"
    text = await run_demo(work_dir)
    assert "east imported it" in text
    assert f"--kubeconfig {work_dir}/test-cluster-east/kubeconfig get serviceimport -n default" in text
    assert "Dashboard:  https://127.0.0.1:" in text
    assert f"curl --cacert {work_dir}/hub/tls/ca.crt " in text
    assert "demo stopped and cleaned up" in text


async def test_the_demo_shows_the_leaders_crs_and_the_guides_policy_export_imported(tmp_path: Path) -> None:
    """north is the leader: the hub mirrors into its antrea-multicluster, where the demo applied
    the guide's ClusterNetworkPolicy ResourceExport with kubectl; the ResourceImport is shown."""
    work_dir = tmp_path / "demo"
    text = await run_demo(work_dir)
    north = f"--kubeconfig {work_dir}/test-cluster-north/kubeconfig"
    assert f"{north} get resourceexport -n antrea-multicluster" in text
    assert f"{north} get memberclusterannounce -n antrea-multicluster" in text
    assert f"{north} get resourceimport -n antrea-multicluster" in text
    row = "strict-namespace-isolation-antreaclusternetworkpolicy   AntreaClusterNetworkPolicy"
    assert row in text and "strict-namespace-isolation   " in text
    assert "kind: AntreaClusterNetworkPolicy" in (work_dir / "acnp-resourceexport.yaml").read_text()
    assert " I hub.mirror.leader: hub mirrors into the leader cluster " in (work_dir / "demo.log").read_text()


async def test_the_terminal_gets_a_few_progress_lines_and_the_summary_while_the_logs_go_to_a_file(
    tmp_path: Path,
) -> None:
    work_dir = tmp_path / "demo"
    text = await run_demo(work_dir)
    lines = text.splitlines()
    assert len(lines) <= MOST_LINES, text
    assert not LOG_LINE.search(text), text
    log_file = work_dir / "demo.log"
    assert str(log_file) in lines[0]
    log = log_file.read_text()
    assert LOG_LINE.search(log)
    assert " I hub.app: hub serving " in log
    assert log.count(" I member.app: member started ") == 3


async def test_verbose_brings_the_logs_back_to_the_terminal(tmp_path: Path) -> None:
    work_dir = tmp_path / "demo"
    text = await run_demo(work_dir, "--verbose")
    assert " I hub.app: hub serving " in text
    assert len(LOG_LINE.findall(text)) > MOST_LINES
    assert " I hub.app: hub serving " in (work_dir / "demo.log").read_text()


async def test_a_demo_that_fails_says_so_in_a_line_and_keeps_the_log_with_the_reason(tmp_path: Path) -> None:
    work_dir = tmp_path / "demo"
    work_dir.mkdir()
    (work_dir / "test-cluster-east").write_text("a file where the east cluster's directory goes")
    text = await run_demo(work_dir, expect=1)
    assert len(text.splitlines()) <= MOST_LINES, text
    assert "mchub demo failed" in text and str(work_dir / "demo.log") in text
    assert not LOG_LINE.search(text), text
    assert "Traceback" not in text
    log = (work_dir / "demo.log").read_text()
    assert " E mchub_cli.demo_cmd: demo failed" in log and "Traceback" in log
