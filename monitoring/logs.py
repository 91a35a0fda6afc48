"""Log records as written lines that text from a catalog cannot forge.

A log line often quotes what an item was (its source URI, an error message naming it): a newline or an ANSI
sequence in that text would start a fake record or rewrite the terminal's line. The filter renders each record's
message with every non-printable character escaped, and an attached traceback with the exceptions' messages
escaped likewise (its own lines, frames and chain notes, stay lines), before any formatter of its handler sees it.
"""

from __future__ import annotations

import logging
import traceback

from core.text import printable


def _traceback(error: BaseException) -> str:
    lines: list[str] = []
    for chunk in traceback.TracebackException.from_exception(error).format():
        body = chunk.removesuffix("\n")
        if chunk.startswith(("Traceback ", "  File ", "\n")):
            lines.extend(printable(line) for line in body.split("\n"))  # the traceback's own lines
        else:
            lines.append(printable(body))  # an exception's message: a newline in it is part of the text
    return "\n".join(lines)


class PrintableRecords(logging.Filter):
    """A handler filter: the record's message and traceback with non-printable characters escaped."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = printable(record.getMessage()), ()
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            record.exc_text = _traceback(record.exc_info[1])
        return True


def escape_handlers(logger: logging.Logger) -> None:
    """Put the filter on every handler of a logger (once)."""
    for handler in logger.handlers:
        if not any(isinstance(f, PrintableRecords) for f in handler.filters):
            handler.addFilter(PrintableRecords())
