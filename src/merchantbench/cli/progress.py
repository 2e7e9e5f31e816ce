"""The CLI's progress display: rich's bar on a terminal, plain lines anywhere else.

A bar is drawn for a terminal; written to a file or a pipe (CI logs, `2> log`), rich renders its
last frame cut to 80 columns ("730/7…", "0:00:…"). Without a terminal the commands print instead
one whole line at each tenth of the way and one at the end, e.g.

    rule-based: 73/730 day  36 · net ¥ 101,234.50 · 4★ 4.71 (0:00:02)

`progress_display` hands back either, with the same `add_task`, `update` and `console`.
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

STEPS = 10  # plain lines per task: one at each tenth of the total (and one at the end)


def progress_display(
    console: Console,
    label: str,
    *,
    show: bool = True,
    count: bool = True,
    elapsed: bool = True,
    transient: bool = False,
) -> Any:
    """A rich `Progress` for a terminal, else a `PlainProgress` with the same use.

    Args:
        console: Where to draw or write (the commands write progress to stderr).
        label: What runs (shown in bold before the bar, or at the start of each line).
        show: False draws and writes nothing (`--no-progress`).
        count: Show `done/total` (off for a fraction of a build).
        elapsed: Show the time since the start.
        transient: Clear the bar when done (a terminal only; plain lines stay).
    """
    if not console.is_terminal:
        return PlainProgress(console, label, show=show, count=count, elapsed=elapsed)
    from rich.markup import escape
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns: list[str | ProgressColumn] = [TextColumn(f"[bold]{escape(label)}"), BarColumn()]
    columns += [MofNCompleteColumn()] if count else []
    columns += [TextColumn("{task.description}")]
    columns += [TimeElapsedColumn()] if elapsed else []
    return Progress(*columns, console=console, disable=not show, transient=transient)


class PlainProgress:
    """Progress as whole lines: at each tenth of a task's total and when it completes."""

    def __init__(
        self, console: Console, label: str, *, show: bool, count: bool, elapsed: bool
    ) -> None:
        self.console = console
        self.label = label
        self.show, self.count, self.elapsed = show, count, elapsed
        self.tasks: list[dict[str, Any]] = []
        self.started = time.monotonic()

    def __enter__(self) -> PlainProgress:
        self.started = time.monotonic()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None

    def add_task(
        self, description: str, total: float | None = 100.0, completed: float = 0, **fields: Any
    ) -> int:
        step = self._step(completed, total)
        self.tasks.append({"description": description, "total": total, "completed": completed,
                           "step": step})  # fmt: skip
        return len(self.tasks) - 1

    def update(
        self,
        task_id: int,
        *,
        completed: float | None = None,
        advance: float | None = None,
        total: float | None = None,
        description: str | None = None,
        **fields: Any,
    ) -> None:
        task = self.tasks[task_id]
        if total is not None and total != task["total"]:
            # a total that grows (more rounds of work found on the way) counts its tenths anew
            task["step"] = min(task["step"], self._step(task["completed"], total))
            task["total"] = total
        if description is not None:
            task["description"] = description
        if completed is not None:
            task["completed"] = completed
        if advance is not None:
            task["completed"] += advance
        step = self._step(task["completed"], task["total"])
        if step > task["step"]:
            task["step"] = step
            self._write(task)

    @staticmethod
    def _step(completed: float, total: float | None) -> int:
        """How many tenths of the total are done (-1 while the total is unknown)."""
        if not total:
            return -1
        return min(int(STEPS * completed / total), STEPS)

    def _write(self, task: dict[str, Any]) -> None:
        if not self.show:
            return
        done, total = task["completed"], task["total"]
        parts = [f"{self.label}:"]
        parts += [f"{done:g}/{total:g}"] if self.count else [f"{100 * done / total:.0f}%"]
        parts += [task["description"]] if task["description"] else []
        if self.elapsed:
            seconds = int(time.monotonic() - self.started)
            parts.append(f"({seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d})")
        self.console.print(" ".join(parts), markup=False, highlight=False, soft_wrap=True)
