"""Reading the files users hand us (logs, query logs, results documents) within stated bounds.

A file given to ``acpc-lbr results`` or ``report`` may be cut, altered or
crafted. Whatever it holds, reading it must end in a figure or in one clear
line, with memory bounded by the limits here and not by what the file claims:

* a line longer than its format ever writes is refused when its first
  ``limit`` characters have been read (:func:`bounded_lines`), so a 50 MB
  junk line costs ``limit`` characters of memory, not 50 MB;
* a whole-file JSON document larger than its limit is refused before it is
  read (:func:`read_bounded_text`);
* JSON nested deeper than Python's recursion limit is a one-line refusal,
  not a ``RecursionError`` traceback (:func:`loads_json`);
* compressed data may not inflate past a stated size (:func:`inflate`): a
  zlib bomb stops after that many bytes.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TextIO, TypeAlias, cast

#: What ``json.loads`` returns.
JsonValue: TypeAlias = "str | int | float | bool | None | Mapping[str, JsonValue] | Sequence[JsonValue]"


def bounded_lines(file: TextIO, limit: int, where: str | Path) -> Iterator[str]:
    """The lines of ``file`` (line end kept), refusing one longer than ``limit`` characters.

    A torn last line (no line end) is yielded as it is; the callers ignore it.

    Raises:
        ValueError: ``where:N: line N is longer than limit characters``.
    """
    number = 0
    while True:
        line = file.readline(limit + 1)
        if not line:
            return
        number += 1
        if len(line) > limit:
            raise ValueError(f"{where}:{number}: a line of more than {limit:,} characters, longer than "
                             f"any this file format holds: not a file this program wrote")
        yield line


def read_bounded_text(path: str | Path, limit: int, what: str) -> str:
    """The text of a file of at most ``limit`` bytes (UTF-8).

    Raises:
        OSError: unreadable.
        ValueError: larger than ``limit`` (nothing beyond it is read), or not UTF-8.
    """
    with open(path, "rb") as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{path}: more than {limit:,} bytes, larger than any {what}: refused unread")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not a {what} (not UTF-8: {error.reason} at byte {error.start})") from None


def loads_json(text: str, where: str | Path, parse_constant: Callable[[str], object] | None = None) -> JsonValue:
    """``json.loads``, with nesting too deep for the parser refused in one line.

    Raises:
        ValueError: not JSON (``json.JSONDecodeError`` is one), or nested too deep.
    """
    try:
        return cast(JsonValue, json.loads(text, parse_constant=parse_constant))
    except RecursionError:
        raise ValueError(f"{where}: JSON nested too deep for any file of ours") from None


def inflate(data: bytes, limit: int) -> bytes:
    """zlib-decompress ``data`` to at most ``limit`` bytes.

    Raises:
        ValueError: not zlib data, or data that inflates past ``limit`` bytes
            (only ``limit + 1`` bytes are ever produced).
    """
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as error:
        raise ValueError(f"not zlib data ({error})") from None
    if len(out) > limit:
        raise ValueError(f"compressed data inflates past {limit:,} bytes")
    if not inflater.eof:
        raise ValueError("compressed data is cut short")
    return out
