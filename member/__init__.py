"""The member controller: exports what its cluster exports, applies what the hub imports."""
