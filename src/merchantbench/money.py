"""The one conversion between integer fen (how money is held and recorded) and RMB (how it is
shown). Run records, metrics and reports convert through here and nowhere else."""

from __future__ import annotations

from typing import overload

import numpy as np

FEN_PER_RMB = 100


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
    if isinstance(fen, int | np.integer):
        return round(int(fen) / FEN_PER_RMB, 2)
    return np.asarray(fen, dtype=np.int64) / float(FEN_PER_RMB)
