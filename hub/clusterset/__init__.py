"""The ClusterSet the hub serves: which one (identity), its status, and its end (pure, and the
SQLite data dir's record of the end)."""
