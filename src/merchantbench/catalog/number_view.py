"""Python-number views of numpy arrays, for code that reads a few elements at a time."""

from __future__ import annotations

from typing import Any, cast

import numpy as np


def number_view(array: np.ndarray) -> memoryview:
    """A memory view of `array` (made contiguous): indexing it gives a Python int, float or
    bool directly, several times faster than a numpy scalar, and `bisect` searches it in place.
    """
    # numpy's stubs do not declare the buffer protocol its arrays implement.
    return memoryview(cast(Any, np.ascontiguousarray(array)))
