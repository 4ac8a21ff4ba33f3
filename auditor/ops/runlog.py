"""The nightly log: rotating file for cron, rich console for a person; secrets redacted,
fabric text inert."""


from __future__ import annotations

import logging
import logging.handlers
import os
import re
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

from rich.logging import RichHandler

from auditor.config import Secret
from auditor.errors import ConfigError
from auditor.ops.progress import CONSOLE
from auditor.safe_text import inert

# ---------------------------------------------------------------------------------------------
# Logging

LOG_MAX_BYTES = 5 * 1024 * 1024
LOG_BACKUPS = 5
REDACTED = "***"

# One console on stderr for log lines and the progress display: stdout stays for the report,
# and rich prints log lines above a live progress bar only when both share a console.


class RedactSecrets(logging.Filter):
    """Replaces every occurrence of the given secret values in a record by `***`.

    We never log config values on purpose; this catches the accidents (a password echoed in a
    device's error message, an exception that carries a connection string).
    """

    def __init__(self, values: Sequence[str]) -> None:
        super().__init__()
        # Longest first, so a secret that contains another is hidden whole.
        unique = sorted({v for v in values if v}, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, unique))) if unique else None

    def redact(self, text: str) -> str:
        return self._pattern.sub(REDACTED, text) if self._pattern else text

    def filter(self, record: logging.LogRecord) -> bool:
        if self._pattern is None:
            return True
        # Merge the arguments first: a secret can arrive as a %s argument.
        record.msg = self.redact(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            # Formatters reuse exc_text when set, so the redacted traceback is what they print.
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True


LOG_MESSAGE_MAX = 2000  # a log record's message; a device's error text can be anything


class InertText(logging.Filter):
    """Makes a record's message (and traceback) inert: a device's error message or a log line
    quoted in one comes from the fabric, and its escape sequences must not reach the terminal
    that shows the rich console or tails the log file. One record stays one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = inert(record.getMessage(), LOG_MESSAGE_MAX)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = "\n".join(inert(line, None)
                                        for line in record.exc_text.split("\n"))
        return True


def _secrets_in(obj: Any) -> Iterator[Secret]:
    if isinstance(obj, Secret):
        yield obj
    elif is_dataclass(obj) and not isinstance(obj, type):
        for f in fields(obj):
            yield from _secrets_in(getattr(obj, f.name))
    elif isinstance(obj, list | tuple):
        for item in obj:
            yield from _secrets_in(item)


def secret_values(settings: Any) -> list[str]:
    """The current values of every `env:NAME` secret anywhere in `settings` (unset ones are
    skipped: there is nothing to hide). Walks the dataclasses, so new secret fields count."""
    values = []
    for secret in _secrets_in(settings):
        value = os.environ.get(secret.ref.removeprefix("env:"))
        if value:
            values.append(value)
    return values


_OURS = "_auditor_nightly"


def setup_logging(log_file: Path | None, interactive: bool,
                  secrets: Sequence[str] = ()) -> list[logging.Handler]:
    """Configure the root logger for a run and return the handlers installed.

    * `log_file`: rotating file (5 MB x 5) with UTC timestamps, INFO and up, everything.
    * interactive (stdout is a TTY): rich output of INFO and up on stderr.
    * not interactive (cron): only ERROR and up, plain, on stderr; nothing on stdout, so cron
      mails nothing on a good night except what the exit code asks for.

    `secrets` are redacted from every handler. Calling it again replaces our handlers (and
    leaves anyone else's, such as pytest's, alone).
    """
    root = logging.getLogger()
    teardown_logging()
    handlers: list[logging.Handler] = []
    if log_file is not None:
        from auditor.outfiles import make_folder

        make_folder(log_file.parent, "log")
        try:
            file_handler = logging.handlers.RotatingFileHandler(
                log_file, maxBytes=LOG_MAX_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{log_file}: cannot write the log: "
                              f"{(exc.strerror or str(exc)).lower()}") from None
        stamped = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s",
                                    datefmt="%Y-%m-%dT%H:%M:%SZ")
        stamped.converter = time.gmtime  # UTC with a Z, like every other time we print
        file_handler.setFormatter(stamped)
        file_handler.setLevel(logging.INFO)
        handlers.append(file_handler)
    console: logging.Handler
    if interactive:
        console = RichHandler(console=CONSOLE, show_path=False, rich_tracebacks=False)
        console.setLevel(logging.INFO)
    else:
        console = logging.StreamHandler(sys.stderr)
        console.setFormatter(logging.Formatter("auditor: %(levelname)s: %(message)s"))
        console.setLevel(logging.ERROR)
    handlers.append(console)
    redact, plain = RedactSecrets(secrets), InertText()
    for handler in handlers:
        # On the handlers, not the logger: a logger's filters do not see records propagated
        # from child loggers (auditor.collect.onyx, paramiko), a handler's do. Secrets are
        # redacted before the text is made inert (escaping could hide a secret from the match).
        handler.addFilter(redact)
        handler.addFilter(plain)
        setattr(handler, _OURS, True)
        root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > logging.INFO:
        root.setLevel(logging.INFO)
    return handlers


def teardown_logging() -> None:
    """Remove and close the handlers `setup_logging` installed."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, _OURS, False):
            root.removeHandler(handler)
            handler.close()


