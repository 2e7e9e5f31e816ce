"""`CatalogError`, apart from the real-catalog reader (`catalog.real_format`, which loads
`pyarrow.compute`): a command that only catches it does not pay for that import."""

from __future__ import annotations


class CatalogError(ValueError):
    """A real catalog that cannot be used. `table`, `column` and `row` say where (or None)."""

    def __init__(self, table: str, message: str, column: str | None = None, row: int | None = None):
        where = f"{table}.parquet" + (f", column {column!r}" if column else "")
        where += f", row {row}" if row is not None else ""
        super().__init__(f"{where}: {message}")
        self.table, self.column, self.row = table, column, row
