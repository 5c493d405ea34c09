"""The one error family of the protocol core.

Errors are raised, never returned; a failed call leaves every object as it
was. Only the edges (dealer, CLI) catch them, log them and decide.
"""

from __future__ import annotations


class ProtocolError(Exception):
    """Root of every error raised by :mod:`protocol`.

    Attributes:
        text: the offending input (a line, a token, a file name), if any.
    """

    def __init__(self, message: str, text: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.text = text

    def __str__(self) -> str:
        if self.text is None:
            return self.message
        return f"{self.message}: {self.text!r}"


class ParseError(ProtocolError):
    """Text that does not follow a grammar (MATCHSTATE, reply, log line, card)."""


class GameDefError(ProtocolError):
    """A game definition that cannot be read or is inconsistent.

    Attributes:
        line_number: 1-based line of the file where the problem is, if known.
    """

    def __init__(self, message: str, text: str | None = None, line_number: int | None = None) -> None:
        if line_number is not None:
            message = f"line {line_number}: {message}"
        super().__init__(message, text)
        self.line_number = line_number


class IllegalActionError(ProtocolError):
    """An action that the rules do not allow in the current state."""
