"""Fixtures for tests that run a real hub in-process (see hub_fixtures: `hub`, `connect`)."""

from tests.integration.hub_fixtures import connect, hub, hub_config

__all__ = ["connect", "hub", "hub_config"]
