"""The layering contract: every import in the product points down, never back up or across.

    kube       generic Kubernetes machinery; imports no other package of mchub
    mcapi      mchub's API (wire messages, CRD models, names, resources); may import kube
    hub, member, agent, sandbox, ctl
               the programs; each may import kube and mcapi, none another
    mchub_cli  the composition root: may import all

Within the hub, the merge is kept pure: hub.merge imports nothing of the hub but itself,
its errors and the store's records. Every import counts, also one inside a function or
under TYPE_CHECKING, so a cycle cannot hide there.

Run alone: .venv/bin/pytest tests/unit/test_layering.py
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ("hub", "member", "agent", "sandbox", "ctl")
PACKAGES = ("kube", "mcapi", *PROGRAMS, "mchub_cli")
# The packages each package may import (besides itself).
ALLOWED: dict[str, frozenset[str]] = {
    "kube": frozenset(),
    "mcapi": frozenset({"kube"}),
    **{program: frozenset({"kube", "mcapi"}) for program in PROGRAMS},
    "mchub_cli": frozenset(PACKAGES),
}
GENERATED = ROOT / "mcapi" / "mchub"  # protoc's output imports only protobuf
PURE_MERGE_MAY_IMPORT = ("hub.merge", "hub.errors", "hub.store.base")


def _modules(package: str) -> Iterator[tuple[str, Path]]:
    for path in sorted((ROOT / package).rglob("*.py")):
        if GENERATED in path.parents:
            continue
        parts = path.relative_to(ROOT).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def _imports(module: str, path: Path) -> Iterator[tuple[int, str]]:
    """(line, imported module) of every import in the file, relative ones resolved."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            yield node.lineno, target
            for alias in node.names:  # `from hub import merge` imports hub.merge
                yield node.lineno, f"{target}.{alias.name}"


def _all_imports() -> Iterator[tuple[str, Path, int, str]]:
    for package in PACKAGES:
        for module, path in _modules(package):
            for line, target in _imports(module, path):
                yield package, path, line, target


def test_every_import_points_down_the_layers() -> None:
    wrong = []
    for package, path, line, target in _all_imports():
        top = target.split(".")[0]
        if top in PACKAGES and top != package and top not in ALLOWED[package]:
            wrong.append(f"{path.relative_to(ROOT)}:{line}: {package} imports {target}")
    assert not wrong, "imports against the layering (see this test's docstring):\n" + "\n".join(sorted(set(wrong)))


def test_the_merge_imports_nothing_of_the_hub_but_itself_its_errors_and_the_stores_records() -> None:
    wrong = []
    for module, path in _modules("hub"):
        if not module.startswith("hub.merge"):
            continue
        for line, target in _imports(module, path):
            if target.split(".")[0] == "hub" and target != "hub" and not target.startswith(PURE_MERGE_MAY_IMPORT):
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {target}")
    assert not wrong, "the pure merge reaches into the hub:\n" + "\n".join(sorted(set(wrong)))


@pytest.mark.parametrize(
    ("package", "source", "expected"),
    [
        ("kube", "from mcapi.names import GROUP\n", "kube imports mcapi.names"),
        ("hub", "def f():\n    from member.app import MemberApp\n", "hub imports member.app"),
        ("agent", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import hub.config\n", "agent imports hub"),
    ],
)
def test_the_contract_sees_imports_anywhere_in_a_file(
    package: str, source: str, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / package).mkdir()
    (tmp_path / package / "wrong.py").write_text(source)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    with pytest.raises(AssertionError, match=expected):
        test_every_import_points_down_the_layers()
