"""The stores of a playground directory and their private links.

A playground (or study) directory holds one run directory per participant and
`participants.json` (mode 0600), which maps each private token to its participant and run
directory. The token is the whole credential: a link `/play/<token>` opens that store only.
Nothing in a run directory holds a token.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from merchantbench.record.files import atomic_write_bytes, read_json
from merchantbench.record.manifest import read_manifest
from merchantbench.record.schema import METRICS_FILE
from merchantbench.scenario import Scenario
from merchantbench.web.records import read_json_or_empty
from merchantbench.web.store import HISTORY_FILE, PlayStore

PARTICIPANTS_FILE = "participants.json"
OPERATOR_FILE = "operator.json"  # the study view's token (mode 0600)


class RoomError(ValueError):
    """A playground directory that cannot be used; the message says why in one line."""


MAX_REASON_CHARS = 300  # a damaged store's reason, as the page shows it


class StoreDamaged(RoomError):
    """A store whose record cannot be opened (a damaged or foreign file); the message says why
    in one line, with paths given from the playground directory."""

    def __init__(self, exc: BaseException, root: Path) -> None:
        text = " ".join(str(exc).split()) or type(exc).__name__
        for prefix in (f"{root.resolve()}/", f"{root}/"):
            text = text.replace(prefix, "")
        super().__init__(f"this store's record cannot be opened: {text}"[:MAX_REASON_CHARS])


@dataclass(frozen=True)
class Seat:
    """One participant: their name, run directory (relative to the room) and token."""

    participant: str
    run: str
    token: str


def _read_seats(path: Path) -> dict[str, Seat]:
    """The seats `participants.json` lists (a one-line `RoomError` if it is damaged)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RoomError(f"{path} cannot be read: {exc.strerror}") from exc
    except ValueError as exc:  # not UTF-8, or not JSON
        raise RoomError(f"{path} is damaged: not a JSON file") from exc
    shape = "expected {token: {participant, run}} with run a directory name in the playground"
    if not isinstance(data, dict):
        raise RoomError(f"{path} is damaged: {shape}")
    seats = {}
    for token, seat in data.items():
        fields = seat if isinstance(seat, dict) else {}
        participant, run = fields.get("participant"), fields.get("run")
        if not (isinstance(participant, str) and isinstance(run, str) and _plain_name(run)):
            raise RoomError(f"{path} is damaged: {shape}")
        seats[token] = Seat(participant, run, token)
    return seats


def _plain_name(name: str) -> bool:
    """A single directory name (no separator, not `.` or `..`)."""
    return name not in ("", ".", "..") and Path(name).name == name and "\\" not in name


class PlayRoom:
    """The stores of one directory, by token."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.seats: dict[str, Seat] = {}
        self._stores: dict[str, PlayStore] = {}
        self._opening = threading.Lock()  # two first requests must not open a store twice
        if root.exists() and not root.is_dir():
            raise RoomError(f"{root} is a file, not a playground directory")
        path = root / PARTICIPANTS_FILE
        if path.is_file():
            self.seats = _read_seats(path)

    def _save(self) -> None:
        body = {t: {"participant": s.participant, "run": s.run} for t, s in self.seats.items()}
        path = self.root / PARTICIPANTS_FILE
        atomic_write_bytes(path, json.dumps(body, indent=1, sort_keys=True).encode())
        os.chmod(path, 0o600)

    def create(
        self, scenario: Scenario, seeds: list[int | None], names: list[str] | None = None
    ) -> list[Seat]:
        """One new store per seed (one participant each; None: a sealed run of its own);
        returns their seats."""
        self.root.mkdir(parents=True, exist_ok=True)
        taken = {s.participant for s in self.seats.values()}
        created = []
        for i, seed in enumerate(seeds):
            name = names[i] if names else _free_name(taken)
            if name in taken or (self.root / name).exists():
                raise RoomError(f"participant {name!r} already has a store in {self.root}")
            taken.add(name)
            seat = Seat(name, name, secrets.token_urlsafe(18))
            self._stores[seat.token] = PlayStore.create(scenario, seed, self.root / name, name)
            self.seats[seat.token] = seat
            created.append(seat)
        self._save()
        return created

    def store(self, token: str) -> PlayStore | None:
        """The store a token opens (reopened from disk the first time), or None.

        Raises:
            StoreDamaged: its record cannot be opened (asked again at the next request).
        """
        seat = self.seats.get(token)
        if seat is None:
            return None
        with self._opening:
            if token not in self._stores:
                try:
                    self._stores[token] = PlayStore.reopen(self.root / seat.run)
                except Exception as exc:  # whatever is damaged, only this store is refused
                    raise StoreDamaged(exc, self.root) from exc
            return self._stores[token]

    def operator_token(self) -> str:
        """The study view's token (made once, kept in `operator.json`)."""
        path = self.root / OPERATOR_FILE
        if path.is_file():
            try:
                token = json.loads(path.read_text(encoding="utf-8")).get("token")
            except (OSError, ValueError, AttributeError):
                token = None
            if isinstance(token, str) and len(token) >= 16:
                return token
        token = secrets.token_urlsafe(18)
        self.root.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, json.dumps({"token": token}).encode())
        os.chmod(path, 0o600)
        return token

    def is_operator(self, token: str) -> bool:
        path = self.root / OPERATOR_FILE
        return path.is_file() and secrets.compare_digest(
            token.encode(), self.operator_token().encode()
        )  # bytes: compare_digest refuses non-ASCII strings

    def overview(self) -> list[dict[str, Any]]:
        """One row per participant for the study view (`web.study`), by participant name."""
        return [
            self._row(seat) for seat in sorted(self.seats.values(), key=lambda s: s.participant)
        ]

    def _row(self, seat: Seat) -> dict[str, Any]:
        run_dir = self.root / seat.run
        store = self._stores.get(seat.token)
        row: dict[str, Any] = {"participant": seat.participant, "run": seat.run}
        try:
            meta = read_manifest(run_dir)
            saved = read_json(run_dir / HISTORY_FILE) if (run_dir / HISTORY_FILE).is_file() else {}
        except (OSError, ValueError) as exc:
            return {**row, "state": f"unreadable: {exc}", "window": None, "windows_total": None,
                    "day": None, "net_assets": None, "rating": None, "stars": None,
                    "last_activity": None, "active_seconds": 0.0}  # fmt: skip
        points = saved.get("history") or [{}]
        last = points[-1]
        finished = meta.ended is not None and not meta.resumable
        if store is not None:
            status = store.surface.status()
            window, day, net, rating, stars = (status.window, status.day, status.net_assets,
                                               status.rating, status.stars)  # fmt: skip
            activity = store.activity()
            paused = store.paused
        else:
            window, day = last.get("window"), last.get("day")
            net, rating, stars = last.get("net_assets"), last.get("rating"), last.get("stars")
            activity = {"active_seconds": saved.get("active_seconds", 0.0),
                        "last_activity": saved.get("last_activity")}  # fmt: skip
            paused = bool(saved.get("paused"))
        if finished:
            net = read_json_or_empty(run_dir / METRICS_FILE).get("final_net_assets", net)
        state = ("finished" if finished else "paused" if paused
                 else "playing" if store is not None and activity["last_activity"]
                 else "not opened" if not activity["last_activity"] else "away")  # fmt: skip
        total = meta.scenario_model().clock.windows
        return {**row, "state": state, "window": min((window or 0) + 1, total),
                "windows_total": total, "day": day, "net_assets": net, "rating": rating,
                "stars": stars, **activity}  # fmt: skip

    def close(self) -> None:
        """Save every open store where it stands (server shutdown)."""
        for store in self._stores.values():
            store.pause()


def _free_name(taken: set[str]) -> str:
    n = 1
    while f"p{n}" in taken:
        n += 1
    return f"p{n}"
