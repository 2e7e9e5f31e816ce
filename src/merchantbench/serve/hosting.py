"""What a live run (`host.RunHost`) and a live market (`market_host.MarketHost`) share on the
server: the lock every session change takes (an asyncio condition that also wakes long-polls),
session work in a shielded worker thread, the wall clock of the open window, pause and shutdown."""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from typing import Any

from merchantbench.serve.settings import gone

__all__ = ["Hosting"]


class Hosting(ABC):
    """The shared part of a hosted run or market. `settings` has `window_seconds` and
    `paused`; a subclass says when it has `finished`, how it saves its settings, closes, and
    forces its open window closed."""

    settings: Any

    def __init__(self) -> None:
        self.cond = asyncio.Condition()
        self.window_opened = time.monotonic()
        self.on_finish: list[Any] = []  # callbacks(host) once the run or market has ended
        self._work: asyncio.Future[Any] | None = None  # session work running in a thread

    @property
    @abstractmethod
    def finished(self) -> bool: ...

    @abstractmethod
    def save_settings(self) -> None: ...

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    async def _force_window(self) -> None:
        """Close the open window for whoever still holds it (under the lock; trace: forced)."""

    async def _in_thread(self, fn: Any, *args: Any) -> Any:
        """Run session work in a worker thread. Shielded: a cancelled request (a client gone, a
        server shutting down) must not leave the session half-changed under a released lock, so
        the work always completes, and `aclose` waits for it."""
        self._work = asyncio.ensure_future(asyncio.to_thread(fn, *args))
        return await asyncio.shield(self._work)

    async def force_if_overdue(self, now: float) -> bool:
        """Close a window held longer than the wall-clock limit; True if one was closed."""
        limit = self.settings.window_seconds
        if limit is None or self.finished or self.settings.paused:
            return False
        if now - self.window_opened < limit:
            return False
        async with self.cond:
            if self.finished or self.settings.paused or now - self.window_opened < limit:
                return False
            await self._force_window()
            return True

    async def set_paused(self, paused: bool) -> None:
        async with self.cond:
            if self.finished:
                raise gone()
            self.settings.paused = paused
            self.save_settings()
            self.window_opened = time.monotonic()  # the wall clock restarts with the window
            self.cond.notify_all()

    async def aclose(self) -> None:
        """Server shutdown: let running session work end, then `close`."""
        if self._work is not None:
            await asyncio.wait([self._work])
        async with self.cond:
            self.close()
