"""deploy/Dockerfile and its pinned requirements, checked without a Docker engine."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.deploy.manifests import ROOT

DOCKERFILE = (ROOT / "deploy" / "Dockerfile").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
REQUIREMENTS = ROOT / "deploy" / "build" / "requirements.txt"


def pins() -> dict[str, str]:
    found: dict[str, str] = {}
    for raw in REQUIREMENTS.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"{line!r} is not pinned with =="
            found[canonicalize_name(name)] = version
    return found


def test_every_runtime_dependency_of_the_project_is_pinned_within_its_range() -> None:
    pinned = pins()
    for spec in PYPROJECT["project"]["dependencies"]:
        requirement = Requirement(spec)
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{requirement.name} is not pinned in {REQUIREMENTS.name}"
        assert requirement.specifier.contains(pinned[name]), f"{name}=={pinned[name]} is outside {requirement}"


def test_the_pins_include_what_the_pinned_packages_themselves_require() -> None:
    pinned = pins()
    for name, version in pinned.items():
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        if dist.version != version:
            continue  # this environment has another version; `pip check` in the image build covers it
        for spec in dist.requires or []:
            requirement = Requirement(spec)
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue
            assert canonicalize_name(requirement.name) in pinned, f"{name} needs {requirement.name}, not pinned"


def test_the_image_copies_every_package_the_project_installs() -> None:
    copied = set(re.findall(r"^COPY (\w+) \./\1$", DOCKERFILE, flags=re.MULTILINE))
    packages = {pattern.rstrip("*") for pattern in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]}
    assert packages <= copied


def test_the_image_runs_mchub_as_the_non_root_user_the_deployments_expect() -> None:
    assert 'ENTRYPOINT ["mchub"]' in DOCKERFILE
    assert re.search(r"^USER 65532:65532$", DOCKERFILE, flags=re.MULTILINE)
    assert "FROM ${PYTHON_IMAGE}" in DOCKERFILE and "python:3.11-slim" in DOCKERFILE
    for tool in ("iproute2", "nftables", "wireguard-tools", "wireguard-go"):
        assert tool in DOCKERFILE
    assert "--no-deps" in DOCKERFILE and "pip check" in DOCKERFILE
