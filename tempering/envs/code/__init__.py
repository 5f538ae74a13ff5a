"""The code domain: sandboxed verification of Python functions against hidden tests."""

from .verify import CodeTask, verify_code

__all__ = ["CodeTask", "verify_code"]
