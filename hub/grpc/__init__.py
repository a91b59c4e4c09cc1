"""The hub's gRPC face: CommonAreaService, health, TLS, authentication."""
