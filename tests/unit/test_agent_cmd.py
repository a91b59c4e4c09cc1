"""`mchub agent` turns the agent's configuration and API failures into one line and exit code 2."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

import pytest

from agent.errors import ConfigError
from kube.errors import KubeError
from mchub_cli import agent_cmd


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
        metrics_address=None,
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
