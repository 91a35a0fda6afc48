"""Untrusted text (catalog fields, URIs, error messages made of them) as it may be shown to a person.

A title such as "\\x1b[2K\\rFAKE done" printed as it is erases the terminal's line and writes one of its own; a
newline in a URI starts a fake log record. Every character that is not printable (control characters, the ESC
that starts an ANSI sequence, bidirectional overrides, lone surrogates) is written as its Python escape instead,
so what is shown is one line, in the order it was written.
"""

from __future__ import annotations


def printable(text: str) -> str:
    """text with each non-printable character replaced by its escape (\\x1b, \\r, \\n, \\u202e, ...)."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)
