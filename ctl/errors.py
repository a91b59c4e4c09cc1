"""Typed failures of mcctl, each with the exit code a script can rely on.

0  success
1  the operation failed (an API call was refused, a verification check failed)
2  usage error (bad flags or arguments, an unreadable or malformed input file)
3  not found or not connected (no such object, no ClusterSet, the cluster or hub unreachable)
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3

EXIT_CODES_HELP = """exit codes:
  0  success
  1  the operation failed (an API call was refused, a verify check failed)
  2  usage error (bad flags or arguments, an unreadable or malformed input file)
  3  not found or not connected (no such object, no ClusterSet, cluster or hub unreachable)"""


class CtlError(Exception):
    """A failure mcctl reports as one line on stderr and an exit code."""

    exit_code = EXIT_FAILED


class OperationFailed(CtlError):
    exit_code = EXIT_FAILED


class UsageError(CtlError):
    exit_code = EXIT_USAGE


class NotFoundError(CtlError):
    exit_code = EXIT_NOT_FOUND


class NotConnected(CtlError):
    exit_code = EXIT_NOT_FOUND
