"""The export side: ServiceExports (with their Services and Endpoints) become the hub session's
exports; the hub's verdicts become ServiceExport conditions."""
