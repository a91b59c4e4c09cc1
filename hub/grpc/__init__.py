"""The hub's gRPC face: CommonAreaService behind one gate (calls), its streams, reflection and the server."""
