"""The member controller: exports what its cluster exports, applies what the hub imports."""

# The name the member signs its Events with.
COMPONENT = "mchub-member"
