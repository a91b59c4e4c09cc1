"""The real kubectl binary, driven as a user would drive it against a sandbox cluster."""

from __future__ import annotations

import pytest

from tests.sandbox.kubectl_runner import KUBECTL, Kubectl, Result

__all__ = ["KUBECTL", "Kubectl", "Result", "needs_kubectl"]

needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="the kubectl binary is not installed (not on PATH)")
