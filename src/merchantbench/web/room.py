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

from merchantbench.record.files import atomic_write_bytes
from merchantbench.scenario import Scenario
from merchantbench.web.store import PlayStore

PARTICIPANTS_FILE = "participants.json"


class RoomError(ValueError):
    """A playground directory that cannot be used; the message says why in one line."""


@dataclass(frozen=True)
class Seat:
    """One participant: their name, run directory (relative to the room) and token."""

    participant: str
    run: str
    token: str


class PlayRoom:
    """The stores of one directory, by token."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.seats: dict[str, Seat] = {}
        self._stores: dict[str, PlayStore] = {}
        self._opening = threading.Lock()  # two first requests must not open a store twice
        path = root / PARTICIPANTS_FILE
        if path.is_file():
            for token, seat in json.loads(path.read_text()).items():
                self.seats[token] = Seat(seat["participant"], seat["run"], token)

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
        """The store a token opens (reopened from disk the first time), or None."""
        seat = self.seats.get(token)
        if seat is None:
            return None
        with self._opening:
            if token not in self._stores:
                self._stores[token] = PlayStore.reopen(self.root / seat.run)
            return self._stores[token]

    def close(self) -> None:
        """Save every open store where it stands (server shutdown)."""
        for store in self._stores.values():
            store.pause()


def _free_name(taken: set[str]) -> str:
    n = 1
    while f"p{n}" in taken:
        n += 1
    return f"p{n}"
