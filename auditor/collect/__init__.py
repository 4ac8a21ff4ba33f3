"""Collectors: I/O only. They run read-only commands and hand back raw text."""

from __future__ import annotations

import logging

# paramiko's transport thread logs what a host sent before its SSH banner (raw bytes, escapes
# included) with a traceback. A command that configures no logging (`auditor sweep`) would
# have Python's last-resort handler print that to stderr; with a handler here the records
# only reach handlers a command installs itself (`auditor nightly` escapes each record).
for _name in ("paramiko", "netmiko"):
    logging.getLogger(_name).addHandler(logging.NullHandler())
