"""The Parquet format of real catalogs (docs/catalog.md, "Real catalogs"): its tables and
columns, and reading them with validation.

Every problem raises a `CatalogError` naming the table, column and row (rows count from 0), so a
data holder can fix a file without reading code. Arrays stay in Arrow until a column is needed,
so a year of long-format demand (tens of millions of rows) is checked without Python loops.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

# Defined apart so that catching it does not import pyarrow.compute; raised here.
from merchantbench.catalog.errors import CatalogError as CatalogError

RISK_COLUMNS = ("risk_cancel", "risk_return", "risk_refund_only", "risk_bad_review")


@dataclass(frozen=True)
class Column:
    """One column of the format: kind `id` (text or integer), `text`, `int`, `float` or `bool`;
    inclusive bounds `lo`/`hi`, or a strict lower bound `above`."""

    name: str
    kind: str
    required: bool = True
    lo: float | None = None
    hi: float | None = None
    above: float | None = None


PRODUCTS = (
    Column("product_id", "id"),
    Column("title", "text"),
    Column("category", "text"),
    Column("supplier_id", "id"),
    Column("price", "float", lo=0.01),
    Column("ship_hours", "int", lo=0, hi=24 * 365),
    Column("logistics_hours", "int", lo=0, hi=24 * 365),
    Column("historical_avg_rating", "float", lo=1.0, hi=5.0),
    Column("launch_day", "int", lo=-(2**31), hi=2**31 - 1),  # bounds: it is kept as int32
    Column("p_ref", "float", required=False, lo=0.01),
    Column("elasticity", "float", required=False, above=1.0, hi=100.0),
    Column("quantity", "int", required=False, lo=0, hi=2**31 - 1),
    Column("stock_refill", "int", required=False, lo=0, hi=2**31 - 1),
    *(Column(name, "float", required=False, lo=0.0, hi=1.0) for name in RISK_COLUMNS),
    Column("type", "text", required=False),
    Column("is_trap", "bool", required=False),
)
SUPPLIERS = (
    Column("supplier_id", "id"),
    Column("supplier_name", "text"),
    Column("shop_rating", "float", lo=0.0, hi=5.0),
    Column("return_buyer_rate", "float", lo=0.0, hi=1.0),
    Column("supplier_age_years", "float", lo=0.0, hi=200.0),
)
DEMAND = (Column("product_id", "id"), Column("day", "int"), Column("demand", "float", lo=0.0))
SALES = (Column("product_id", "id"), Column("day", "int"), Column("orders", "int", lo=0))
TYPES = (Column("type", "id"),)  # the product types in id order (optional table)
TABLES = {"products": PRODUCTS, "suppliers": SUPPLIERS, "demand": DEMAND, "sales": SALES,
          "types": TYPES}  # fmt: skip
# Other names accepted for a column: products.parquet may say stock_capacity for quantity.
ALIASES = {"products": {"stock_capacity": "quantity"}}


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _plain(array: pa.Array) -> pa.Array:
    return array.dictionary_decode() if pa.types.is_dictionary(array.type) else array


class Table:
    """A validated table: every column of its schema that is present, as Arrow arrays."""

    def __init__(self, name: str, data: pa.Table, schema: tuple[Column, ...]) -> None:
        self.name, self.rows = name, data.num_rows
        self.columns: dict[str, pa.Array] = {}
        for alias, canonical in ALIASES.get(name, {}).items():
            if alias in data.column_names:
                if canonical in data.column_names:
                    raise CatalogError(name, f"give only one of {canonical!r}, {alias!r}", alias)
                data = data.rename_columns(
                    [canonical if c == alias else c for c in data.column_names]
                )
        for column in schema:
            if column.name in data.column_names:
                self.columns[column.name] = self._checked(column, data.column(column.name))
            elif column.required:
                raise CatalogError(name, "required column is missing", column.name)

    def _checked(self, column: Column, chunked: pa.ChunkedArray) -> pa.Array:
        array = chunked.combine_chunks()
        if array.null_count and column.required:
            raise CatalogError(self.name, "null value", column.name, _first(_nulls(array)))
        array = self._typed(column, array)
        if column.kind in ("int", "float"):
            self._check_range(column, array)
        return array

    def _typed(self, column: Column, array: pa.Array) -> pa.Array:
        kind, t = column.kind, array.type
        value_type = t.value_type if pa.types.is_dictionary(t) else t
        is_text = pa.types.is_string(value_type) or pa.types.is_large_string(value_type)
        if kind == "id" and pa.types.is_integer(t):
            return pc.cast(array, pa.string())
        if kind in ("id", "text") and is_text:
            return array
        if kind == "bool" and pa.types.is_boolean(t):
            return array
        if kind == "float" and (pa.types.is_integer(t) or pa.types.is_floating(t)):
            return pc.cast(array, pa.float64())
        if kind == "int" and pa.types.is_integer(t):
            return pc.cast(array, pa.int64())
        if kind == "int" and pa.types.is_floating(t):
            values = array.to_numpy(zero_copy_only=False)
            fractional = ~_nulls(array) & (np.mod(values, 1) != 0)
            if not fractional.any():
                return pc.cast(array, pa.int64())
            row = _first(fractional)
            raise CatalogError(self.name, f"{values[row]} is not a whole number", column.name, row)
        expected = {"id": "text or integer", "text": "text"}.get(kind, kind)
        raise CatalogError(self.name, f"type {t} where {expected} is expected", column.name)

    def _check_range(self, column: Column, array: pa.Array) -> None:
        values = array.to_numpy(zero_copy_only=False).astype(np.float64)
        ok = np.ones(len(values), dtype=bool)
        if column.lo is not None:
            ok &= values >= column.lo
        if column.hi is not None:
            ok &= values <= column.hi
        if column.above is not None:
            ok &= values > column.above
        bad = ~ok & ~_nulls(array)
        if bad.any():
            row = _first(bad)
            low = f"> {column.above}" if column.above is not None else f">= {column.lo}"
            bound = low + (f" and <= {column.hi}" if column.hi is not None else "")
            raise CatalogError(self.name, f"{values[row]} out of range ({bound})", column.name, row)

    def reject_rows(self, bad: np.ndarray, column: str, message: str) -> None:
        """Raise a CatalogError at the first row where `bad` holds, if any."""
        if bad.any():
            raise CatalogError(self.name, message, column, _first(bad))

    def has(self, name: str) -> bool:
        return name in self.columns

    def numbers(self, name: str, fill: float = 0.0) -> np.ndarray:
        """A numeric or bool column as numpy, nulls replaced by `fill`."""
        array = self.columns[name]
        value = bool(fill) if pa.types.is_boolean(array.type) else fill
        return pc.fill_null(array, value).to_numpy(zero_copy_only=False)

    def given(self, name: str) -> np.ndarray:
        """Rows where an optional column holds a value (all False if the column is absent)."""
        if name not in self.columns:
            return np.zeros(self.rows, dtype=bool)
        return ~_nulls(self.columns[name])

    def texts(self, name: str) -> np.ndarray:
        """A text column as numpy strings, nulls as ""."""
        return np.array(pc.fill_null(_plain(self.columns[name]), "").to_pylist(), dtype=str)

    def ids(self, name: str) -> pa.Array:
        """An id column, checked unique."""
        ids = _plain(self.columns[name])
        first = pc.index_in(ids, value_set=ids).to_numpy(zero_copy_only=False)
        repeated = first != np.arange(len(ids))
        if repeated.any():
            row = _first(repeated)
            message = f"duplicate id {ids[row].as_py()!r} (first in row {first[row]})"
            raise CatalogError(self.name, message, name, row)
        return ids

    def index_in(self, name: str, known: pa.Array, known_where: str) -> np.ndarray:
        """Position of each row's value in `known`; a value not there is an error."""
        array = self.columns[name]
        if pa.types.is_dictionary(array.type):  # map the small dictionary, then take
            position = pc.index_in(array.dictionary, value_set=known).take(array.indices)
        else:
            position = pc.index_in(array, value_set=known)
        if position.null_count:
            row = _first(_nulls(position))
            value = _plain(array)[row].as_py()
            raise CatalogError(self.name, f"{value!r} not in {known_where}", name, row)
        return position.to_numpy(zero_copy_only=False).astype(np.int64)


def _nulls(array: pa.Array) -> np.ndarray:
    return pc.is_null(array).to_numpy(zero_copy_only=False)


def read_table(path: Path, name: str) -> Table:
    """Read and validate `<name>.parquet` in `path`."""
    file = path / f"{name}.parquet"
    if not file.is_file():
        raise CatalogError(name, f"file not found in {path}")
    try:
        data = pq.read_table(file)
    except (pa.ArrowException, OSError) as exc:
        raise CatalogError(name, f"not a readable Parquet file ({exc})") from exc
    return Table(name, data, TABLES[name])


def daily_matrix(
    table: Table, value: str, products: pa.Array, history: int, days: int, dtype: type
) -> np.ndarray:
    """A long table (product_id, day, value) as a dense [history + days, n] matrix.

    Missing cells are 0; a (product, day) pair given twice is an error.
    """
    n = len(products)
    product = table.index_in("product_id", products, "products.parquet")
    day = table.numbers("day").astype(np.int64)
    outside = (day < -history) | (day >= days)
    if outside.any():
        row = _first(outside)
        message = f"day {day[row]} outside {-history} … {days - 1}"
        raise CatalogError(table.name, message, "day", row)
    cell = (day + history) * n + product
    slot = np.full((history + days) * n, -1, dtype=np.int32)
    slot[cell] = np.arange(len(cell))
    if np.count_nonzero(slot >= 0) < len(cell):
        order = np.argsort(cell, kind="stable")
        second = int(order[1:][cell[order][1:] == cell[order][:-1]].min())
        first = _first(cell == cell[second])
        raise CatalogError(table.name, f"same product and day as row {first}", "day", second)
    matrix: np.ndarray = np.zeros((history + days) * n, dtype=dtype)
    matrix[cell] = table.numbers(value)
    return matrix.reshape(history + days, n)
