"""Worker processes that never outlive their driver (`merchantbench sweep`, `calibrate`).

`worker_pool(jobs)` is a `ProcessPoolExecutor` whose workers end with the process that made
them, however it ends:

- killed outright (SIGKILL, the OOM killer): on Linux each worker asks the kernel for SIGKILL
  when its parent dies (`prctl(PR_SET_PDEATHSIG)`, for a pool used from the main thread, as the
  CLI's are); everywhere, a watchdog thread in each worker checks once a second that its parent
  is still the one it started under and that the driver is alive, and exits otherwise;
- SIGTERM or Ctrl-C: while the pool is open, SIGTERM in the driver does what Ctrl-C does
  there: under `asyncio.run` the runner cancels its main task (an exception raised at whatever
  line the signal lands on could land inside the event loop's own machinery and leave it
  waiting), elsewhere it raises `KeyboardInterrupt`; leaving the pool by any exception
  terminates the workers (SIGTERM, then SIGKILL after `GRACE_SECONDS`) instead of waiting for
  their runs to finish.

A run cut off this way is an ordinary killed run: its record resumes from its last checkpoint.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from types import FrameType
from typing import Any

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
WATCH_SECONDS = 1.0
GRACE_SECONDS = 5.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by another user (a reused pid: the parent check covers it)
    return True


def _die_with_parent() -> None:
    """Ask Linux for SIGKILL when the parent (the thread that forked us) ends."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # no prctl: the watchdog alone


def _watch(parent: int, driver: int) -> None:
    while True:
        if os.getppid() != parent or not _alive(driver):
            os._exit(1)  # the driver is gone: so is this worker, mid-run or not
        time.sleep(WATCH_SECONDS)


def tie_to_driver(driver: int, from_main_thread: bool) -> None:
    """A pool worker's initializer: end this process when `driver` (or its parent) ends.

    Linux sends the parent-death signal when the *thread* that forked the worker ends, so it is
    asked for only when the pool lives in the driver's main thread; the watchdog always runs.
    """
    parent = os.getppid()
    if from_main_thread:
        _die_with_parent()
    if parent == 1 or not _alive(driver):  # the driver died before prctl took effect
        os._exit(1)
    threading.Thread(target=_watch, args=(parent, driver), name="driver-watch", daemon=True).start()


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """Stop as Ctrl-C stops here: hand the signal to the SIGINT handler in place (asyncio's
    runner installs one that cancels its main task), or raise `KeyboardInterrupt`."""
    on_ctrl_c = signal.getsignal(signal.SIGINT)
    if callable(on_ctrl_c) and on_ctrl_c is not signal.default_int_handler:
        on_ctrl_c(signal.SIGINT, frame)
        return
    raise KeyboardInterrupt(f"signal {signum}")


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM in this (main) thread stops the block as Ctrl-C would (`_interrupt`)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _terminate(pool: ProcessPoolExecutor) -> None:
    """Stop the workers now: SIGTERM, then SIGKILL for any still there after the grace."""
    processes: list[Any] = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        if process.is_alive():
            process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + GRACE_SECONDS
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join(1.0)


@contextmanager
def worker_pool(jobs: int) -> Iterator[ProcessPoolExecutor]:
    """A process pool of `jobs` workers tied to this process (module docstring)."""
    pool = ProcessPoolExecutor(
        max_workers=max(jobs, 1),
        initializer=tie_to_driver,
        initargs=(os.getpid(), threading.current_thread() is threading.main_thread()),
    )
    with _sigterm_interrupts():
        try:
            yield pool
        except BaseException:
            _terminate(pool)
            raise
        pool.shutdown(wait=True)
