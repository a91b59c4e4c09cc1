"""Where the hub keeps its state: the Store contract (base), SQLite and kube backends, and what they share."""
