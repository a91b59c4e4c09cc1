"""Generate the Python protobuf and gRPC code (with mypy stubs) for proto/.

Usage: python hack/gen_proto.py [OUT_DIR]

The code lands in OUT_DIR (default: the repository root) as
mcapi/mchub/v1/*; imports are rewritten from the proto package path
(`mchub.v1`) to the Python package path (`mcapi.mchub.v1`). The stale-code test
runs this into a temporary directory and compares.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from grpc_tools import protoc  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
PACKAGE_PREFIX = "mcapi"


def generate(out_root: Path) -> list[Path]:
    out = out_root / PACKAGE_PREFIX
    out.mkdir(parents=True, exist_ok=True)
    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in PROTO_ROOT.rglob("*.proto"))
    include = Path(protoc.__file__).parent / "_proto"
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"-I{include}",
        f"--python_out={out}",
        f"--mypy_out={out}",
        f"--grpc_python_out={out}",
        f"--mypy_grpc_out={out}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    written: list[Path] = []
    for path in sorted(out.joinpath("mchub").rglob("*")):
        if path.suffix not in (".py", ".pyi"):
            continue
        text = path.read_text()
        text = re.sub(r"^from mchub\.", f"from {PACKAGE_PREFIX}.mchub.", text, flags=re.M)
        text = re.sub(r"^import mchub\.", f"import {PACKAGE_PREFIX}.mchub.", text, flags=re.M)
        path.write_text(text)
        written.append(path)
    for pkg in [out / "mchub", *[p for p in (out / "mchub").rglob("*") if p.is_dir()]]:
        init = pkg / "__init__.py"
        if not init.exists():
            init.write_text("")
        written.append(init)
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT
    for p in generate(target):
        print(p.relative_to(target))
