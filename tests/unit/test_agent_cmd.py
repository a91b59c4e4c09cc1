"""`mchub agent`: its probe and resync flags, and its configuration and API failures as one line and exit code 2."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

import pytest

from agent.errors import ConfigError
from kube.errors import KubeError
from mchub_cli import agent_cmd
from mchub_cli.main import build_parser


class FakeClient:
    host = "https://api.example:6443"

    def __init__(self) -> None:
        self.closed = False

    async def close(self) -> None:
        self.closed = True


def _args() -> argparse.Namespace:
    return argparse.Namespace(
        config=None,
        kubeconfig=None,
        context=None,
        node="east-a",
        namespace="antrea-multicluster",
        netns=None,
        cleanup=False,
        key_path=Path("/nonexistent/key"),
        probe_address="",
        resync_interval=10.0,
    )


async def _serve_with(monkeypatch: pytest.MonkeyPatch, failure: BaseException) -> tuple[int, FakeClient]:
    client = FakeClient()

    async def connect(*_args: Any) -> FakeClient:
        return client

    async def run_agent(*_args: Any, **_kwargs: Any) -> None:
        raise failure

    monkeypatch.setattr(agent_cmd, "connect", connect)
    monkeypatch.setattr(agent_cmd, "run_agent", run_agent)
    return await agent_cmd.serve(_args()), client


@pytest.mark.parametrize(
    "failure",
    [
        ExceptionGroup("unhandled errors in a TaskGroup", [ConfigError("the WireGuard key is unreadable")]),
        ExceptionGroup("outer", [ExceptionGroup("inner", [KubeError("the WireGuard key is unreadable")])]),
        ConfigError("the WireGuard key is unreadable"),
    ],
    ids=["config-error-in-group", "kube-error-in-nested-group", "bare-config-error"],
)
async def test_agent_errors_inside_the_task_group_exit_2_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], failure: BaseException
) -> None:
    code, client = await _serve_with(monkeypatch, failure)
    assert code == 2
    assert capsys.readouterr().err == "mchub agent: the WireGuard key is unreadable\n"
    assert client.closed


async def test_a_cancelled_agent_exits_0(monkeypatch: pytest.MonkeyPatch) -> None:
    code, client = await _serve_with(monkeypatch, asyncio.CancelledError())
    assert code == 0
    assert client.closed


async def test_other_failures_still_propagate(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ExceptionGroup) as caught:
        await _serve_with(monkeypatch, ExceptionGroup("tg", [RuntimeError("bug")]))
    assert caught.group_contains(RuntimeError)


def _parse(*flags: str) -> argparse.Namespace:
    return build_parser().parse_args(["agent", "--node", "east-a", *flags])


def test_probes_are_served_on_loopback_and_the_datapath_resynced_every_10_seconds_by_default() -> None:
    args = _parse()
    assert args.probe_address == "127.0.0.1:51823"
    assert args.resync_interval == 10.0


@pytest.mark.parametrize("flag", ["--probe-address", "--metrics-address"])
def test_the_probe_address_is_set_by_its_flag_or_by_its_earlier_name(flag: str) -> None:
    assert _parse(flag, "0.0.0.0:9100").probe_address == "0.0.0.0:9100"


def test_an_empty_probe_address_serves_none() -> None:
    assert _parse("--probe-address", "").probe_address == ""


def test_the_resync_interval_is_set_in_seconds() -> None:
    assert _parse("--resync-interval", "2.5").resync_interval == 2.5


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--probe-address", "localhost"), "probe address must be HOST:PORT, got 'localhost'"),
        (("--probe-address", "127.0.0.1:70000"), "probe address must be HOST:PORT"),
        (("--resync-interval", "0"), "must be a positive number of seconds, got '0'"),
        (("--resync-interval", "soon"), "must be a positive number of seconds, got 'soon'"),
        (("--resync-interval", "nan"), "must be a positive number of seconds"),
    ],
)
def test_bad_probe_addresses_and_resync_intervals_exit_2_naming_the_problem(
    capsys: pytest.CaptureFixture[str], flags: tuple[str, ...], message: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        _parse(*flags)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


async def test_flags_reach_the_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    async def connect(*_args: Any) -> FakeClient:
        return FakeClient()

    async def run_agent(*_args: Any, **kwargs: Any) -> None:
        seen.update(kwargs)

    monkeypatch.setattr(agent_cmd, "connect", connect)
    monkeypatch.setattr(agent_cmd, "run_agent", run_agent)
    args = _parse("--metrics-address", "127.0.0.1:0", "--resync-interval", "3")
    assert await agent_cmd.serve(args) == 0
    assert seen["probe_address"] == "127.0.0.1:0"
    assert seen["resync_interval"] == 3.0
