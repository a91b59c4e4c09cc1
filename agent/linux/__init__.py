"""The Linux programmer: reconciles one network namespace to a DesiredDatapath."""
