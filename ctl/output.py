"""What mcctl prints: tables (rich, antctl's column names), JSON or YAML on stdout;
progress and notes on stderr, so `-o json` output stays parseable."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from rich import box
from rich.console import Console
from rich.table import Table

from ctl.errors import UsageError

FORMATS = ("table", "json", "yaml")

Row = tuple[str, ...]


def stdout_console() -> Console:
    # Not a terminal (a pipe, a test): never wrap or truncate a column.
    terminal = sys.stdout.isatty()
    return Console(file=sys.stdout, width=None if terminal else 4096, highlight=False, soft_wrap=not terminal)


def stderr_console() -> Console:
    return Console(file=sys.stderr, highlight=False, soft_wrap=True)


def note(message: str) -> None:
    """A line for the human on stderr (never mixed into stdout)."""
    stderr_console().print(message, markup=False)


def say(message: str) -> None:
    """A line of a command's own result on stdout (create/delete/join confirmations)."""
    stdout_console().print(message, markup=False)


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=False)


def to_yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def print_table(header: Sequence[str], rows: Sequence[Row], *, sort: bool = True) -> None:
    """Rows under antctl's column names (sorted, as antctl sorts them, unless `sort` is False)."""
    console = stdout_console()
    # A terminal gets a rule under the header; a pipe gets antctl's plain layout (header, then rows).
    table = Table(
        box=box.SIMPLE_HEAD if console.is_terminal else None, show_edge=False, pad_edge=False, header_style="bold"
    )
    for name in header:
        table.add_column(name, no_wrap=True)
    for row in sorted(rows) if sort else rows:
        table.add_row(*row)
    if console.is_terminal:
        console.print(table)
        return
    with console.capture() as captured:
        console.print(table)
    sys.stdout.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))


def print_objects(
    data: Any,
    output_format: str,
    header: Sequence[str],
    rows_of: Callable[[Any], list[Row]],
    *,
    sort: bool = True,
) -> None:
    """`data` (an object or a list of objects) as a table, or dumped as JSON/YAML."""
    if output_format == "json":
        sys.stdout.write(to_json(data) + "\n")
    elif output_format == "yaml":
        sys.stdout.write(to_yaml(data))
    else:
        print_table(header, rows_of(data), sort=sort)
    sys.stdout.flush()


@contextmanager
def progress(message: str) -> Iterator[None]:
    """A spinner on stderr while a long step runs (one plain line when stderr is not a terminal)."""
    console = stderr_console()
    if console.is_terminal:
        with console.status(message):
            yield
    else:
        console.print(f"{message} ...", markup=False)
        yield


def write_private(path: Path, text: str) -> None:
    """Write a file holding a token, readable by its owner only (also when it existed already:
    opening an existing file keeps its mode, so the mode is set before anything is written)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            os.fchmod(fd, 0o600)
            out.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from exc
