"""The checked-in protobuf code is what `make proto` would generate now."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_checked_in_protobuf_code_matches_a_fresh_generation(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    result = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "gen_proto.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    generated = sorted(p.relative_to(tmp_path) for p in (tmp_path / "mcapi" / "mchub").rglob("*.py*"))
    assert generated, "protoc produced nothing"
    stale = [str(rel) for rel in generated if (ROOT / rel).read_text() != (tmp_path / rel).read_text()]
    assert not stale, f"stale generated code, run `make proto`: {stale}"
    checked_in = sorted(p.relative_to(ROOT) for p in (ROOT / "mcapi" / "mchub").rglob("*.py*"))
    assert checked_in == generated, "generated files were added or removed; run `make proto`"


def test_the_wire_contract_passes_buf_lint() -> None:
    buf = Path(sys.executable).parent / "buf"
    result = subprocess.run([str(buf), "lint"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
