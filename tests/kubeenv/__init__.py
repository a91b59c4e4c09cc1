"""Shared helpers for tests that need a Kubernetes API: a sandbox with mchub's CRDs."""
