"""Structured logs: a constant message plus lowerCamel keys from `extra=`."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from pathlib import Path

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime", "taskName"}


def _fields(record: logging.LogRecord) -> dict[str, object]:
    return {k: v for k, v in record.__dict__.items() if k not in _STANDARD}


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, UTC).strftime("%H:%M:%S.%f")[:-3]
        extra = " ".join(f"{k}={v}" for k, v in _fields(record).items())
        line = f"{stamp} {record.levelname[0]} {record.name}: {record.getMessage()}"
        if extra:
            line += f" {extra}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        body.update({k: v if isinstance(v, int | float | bool) else str(v) for k, v in _fields(record).items()})
        if record.exc_info:
            body["error"] = self.formatException(record.exc_info)
        return json.dumps(body)


def configure_logging(level: str, fmt: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


def log_to_file(path: Path, *, keep_terminal: bool) -> None:
    """Send the logs (and Python's warnings) to `path`, in the format chosen for the terminal;
    the terminal keeps getting them only when `keep_terminal`."""
    root = logging.getLogger()
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(next((h.formatter for h in root.handlers if h.formatter), None) or TextFormatter())
    root.handlers[:] = [*(root.handlers if keep_terminal else []), handler]
    logging.captureWarnings(True)
