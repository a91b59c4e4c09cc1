"""The error every conversion raises."""


class ConversionError(ValueError):
    """An object cannot be converted: a missing or unsupported payload, a kind
    that does not match its payload, a malformed document."""
