"""Generate deploy/crds/<group>_<plural>.yaml from the models in mcapi/crds.

python hack/gen_crds.py           # (re)write the files
python hack/gen_crds.py --check   # exit 1 when deploy/crds is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mcapi.crds.crd import HEADER, all_crd_files

CRD_DIR = Path(__file__).resolve().parent.parent / "deploy" / "crds"


def stale_files(directory: Path, wanted: dict[str, str]) -> list[str]:
    """Names of files that differ from, are missing from, or are not in ``wanted``."""
    stale = [name for name, text in wanted.items() if _read(directory / name) != text]
    for path in sorted(directory.glob("*.yaml")):
        if path.name not in wanted and (_read(path) or "").startswith(HEADER):
            stale.append(path.name)
    return sorted(stale)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def write(directory: Path, wanted: dict[str, str]) -> list[str]:
    directory.mkdir(parents=True, exist_ok=True)
    changed = stale_files(directory, wanted)
    for name in changed:
        if name in wanted:
            (directory / name).write_text(wanted[name], encoding="utf-8")
        else:
            (directory / name).unlink()
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail when deploy/crds is not up to date")
    parser.add_argument("--dir", type=Path, default=CRD_DIR, help="output directory (default: deploy/crds)")
    args = parser.parse_args(argv)
    wanted = all_crd_files()
    if args.check:
        stale = stale_files(args.dir, wanted)
        for name in stale:
            print(f"stale: {args.dir / name}", file=sys.stderr)
        if stale:
            print("run: python hack/gen_crds.py", file=sys.stderr)
        return 1 if stale else 0
    for name in write(args.dir, wanted):
        print(f"wrote {args.dir / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
