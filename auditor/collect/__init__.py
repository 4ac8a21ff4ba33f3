"""Collectors: I/O only. They run read-only commands and hand back raw text."""
