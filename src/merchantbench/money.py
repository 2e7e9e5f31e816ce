"""The one conversion between integer fen (how money is held and recorded) and RMB (how it is
shown and how agents send prices). Run records, metrics, reports and tools convert through here:
`rmb` (fen → RMB number), `rmb_list` (fen amounts → RMB numbers), `rmb_text` (fen → "1,234.56"),
`fen` (an RMB amount → fen)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import overload

import numpy as np

FEN_PER_RMB = 100
_INTEGERS = (int, np.integer)  # built once: `int | np.integer` makes a new union per call


@overload
def rmb(fen: int | np.integer) -> float: ...
@overload
def rmb(fen: np.ndarray | list[int]) -> np.ndarray: ...
def rmb(fen: int | np.integer | np.ndarray | list[int]) -> float | np.ndarray:
    """Integer fen as RMB (a float, or a float array for an array).

    Args:
        fen: An amount or an array of amounts in fen.

    Returns:
        The same amounts in RMB. A scalar is rounded to two decimals (exact for any
        integer below 2**53 fen); an array is divided elementwise.
    """
    if type(fen) is int:  # the common case first: a plain int needs no conversion
        return round(fen / FEN_PER_RMB, 2)
    if isinstance(fen, _INTEGERS):
        return round(int(fen) / FEN_PER_RMB, 2)
    if type(fen) is not np.ndarray or fen.dtype != np.int64:
        fen = np.asarray(fen, dtype=np.int64)
    return fen / float(FEN_PER_RMB)


def rmb_list(fen: Iterable[int]) -> list[float]:
    """`rmb` of an array of fen, as plain floats: each amount / 100, the very division numpy
    does elementwise. Tools show a page of amounts at a time, and for so few a loop costs less
    than making an array and converting it back."""
    return [int(amount) / float(FEN_PER_RMB) for amount in fen]


def rmb_text(fen: int | np.integer) -> str:
    """Integer fen as RMB text with thousands separators: 123456 → "1,234.56"."""
    return f"{int(fen) / FEN_PER_RMB:,.2f}"


def fen(amount: float) -> int:
    """An RMB amount (as an agent or a catalog sends it) in integer fen; more than two
    decimals are rounded."""
    return round(amount * FEN_PER_RMB)
