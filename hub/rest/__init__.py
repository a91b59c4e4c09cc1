"""The hub's REST facade and dashboard (aiohttp, same process as gRPC)."""
