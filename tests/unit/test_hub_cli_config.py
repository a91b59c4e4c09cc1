"""`mchub hub` flags mapped onto HubConfig: the store they choose, typed, and the flags that do not go together."""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.config import HubConfig, HubConfigError, KubeStoreConfig, MirrorConfig, SqliteStoreConfig
from kube.leader import LeaseTiming
from mchub_cli.hub_cmd import _config
from mchub_cli.main import build_parser


def _hub_config(*flags: str) -> HubConfig:
    return _config(build_parser().parse_args(["hub", *flags])).validate()


def test_the_default_is_a_sqlite_store_this_process_writes() -> None:
    assert _hub_config().store == SqliteStoreConfig()


def test_the_sqlite_flags_choose_a_mirror_or_following() -> None:
    mirrored = _hub_config("--mirror-kubeconfig", "/k", "--mirror-qps", "5")
    assert mirrored.store == SqliteStoreConfig(mirror=MirrorConfig(Path("/k"), 5.0))
    assert mirrored.mirror == MirrorConfig(Path("/k"), 5.0) and mirrored.kube_store is None
    following = _hub_config("--follow", "--leader-address", "hub.example:50051")
    assert following.store == SqliteStoreConfig(follow=True) and following.follows
    assert following.leader_address == "hub.example:50051"


def test_the_kube_flags_choose_the_kube_store_with_its_lease_and_replica() -> None:
    config = _hub_config(
        "--store", "kube", "--kubeconfig", "/k", "--lease-duration", "6", "--renew-deadline", "4",
        "--retry-period", "1", "--replica-id", "hub-1", "--pod-name", "mchub-hub-1",
    )  # fmt: skip
    assert config.store == KubeStoreConfig(Path("/k"), LeaseTiming(6.0, 4.0, 1.0), "hub-1", "mchub-hub-1")
    assert config.kube_store is config.store and config.mirror is None and not config.follows


@pytest.mark.parametrize(
    ("flags", "refusal"),
    [
        (["--store", "kube", "--mirror-kubeconfig", "/k"], "--mirror-kubeconfig mirrors the sqlite store"),
        (["--follow", "--mirror-kubeconfig", "/k"], "--mirror-kubeconfig mirrors the sqlite store"),
        (["--store", "kube", "--follow"], "--follow is for the sqlite store"),
        (["--mirror-qps", "0"], "the mirror's QPS must be positive"),
        (["--renew-deadline", "20"], "lease timing needs 0 < retry period < renew deadline < lease duration"),
    ],
)
def test_flags_that_do_not_go_together_are_refused_with_the_hub_config_error(flags: list[str], refusal: str) -> None:
    with pytest.raises(HubConfigError, match=refusal.replace("(", r"\(")):
        _hub_config(*flags)


def test_the_global_cidr_comes_from_its_flags_or_the_environment_the_manifest_fills(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _hub_config().global_addressing is None
    config = _hub_config("--global-cidr", "242.0.0.0/8", "--global-block-prefix", "/22")
    assert str(config.global_addressing) == "242.0.0.0/8" and config.global_block_prefix == 22
    monkeypatch.setenv("MCHUB_GLOBAL_CIDR", "242.0.0.0/16")
    monkeypatch.setenv("MCHUB_GLOBAL_BLOCK_PREFIX", "24")
    config = _hub_config()
    assert config.global_cidr == "242.0.0.0/16" and config.global_block_prefix == 24
    with pytest.raises(HubConfigError, match="not a prefix length"):
        _hub_config("--global-block-prefix", "big")
    with pytest.raises(HubConfigError, match="not a network address"):
        _hub_config("--global-cidr", "242.0.0.0/33")
