"""Behaviours of the kinds a real control plane gives meaning to (Services, Namespaces, ...)."""
