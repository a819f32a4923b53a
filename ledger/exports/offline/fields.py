"""The values an export line's fields must be, where JSON alone says too little."""

from __future__ import annotations

from typing import Any, TypeGuard

from ledger.exports.verdict import Disagreement


def is_int(value: Any) -> TypeGuard[int]:
    """A whole number, and not a boolean (which JSON keeps apart, and Python does not)."""
    return type(value) is int


def hex_hash(value: Any) -> bytes | None:
    """The 32 bytes of a hash written as 64 lowercase hex digits; None for anything else."""
    if not isinstance(value, str) or len(value) != 64:
        return None
    try:
        digest = bytes.fromhex(value)
    except ValueError:
        return None
    return digest if digest.hex() == value else None


def hashes(number: int, texts: list[Any], what: str) -> list[bytes]:
    """Each of `texts` as a hash (line `number`), or Disagreement naming the first that
    is not one: "`what` 'text' is not 64 hex digits"."""
    digests = []
    for text in texts:
        digest = hex_hash(text)
        if digest is None:
            raise Disagreement(number, f"{what} {text!r} is not 64 hex digits")
        digests.append(digest)
    return digests
