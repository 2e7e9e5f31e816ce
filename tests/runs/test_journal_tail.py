"""A journal whose last line was torn (the process died writing it, or the disk filled up) is
read up to its last whole line, and the torn bytes are cut off: what the resumed run journals
next is read back at the following resume (runs/journal.py)."""

from __future__ import annotations

from pathlib import Path

from merchantbench.runs.journal import Journal


def test_a_line_journaled_after_a_torn_one_is_read_back(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    journal.rebase(2, '{"turn": 1}', {"window": 0, "calls": {}})
    journal.note(3, '{"turn": 2}')
    journal.close()
    with open(journal.path, "ab") as file:
        file.write(b'{"seq":4,"dri')  # never acknowledged: its request got no answer

    resumed = Journal(tmp_path)
    assert resumed.load() == (3, {"turn": 2}, {"window": 0, "calls": {}})
    resumed.note(4, '{"turn": 3}')  # the resumed run acknowledges its next call
    resumed.close()

    assert Journal(tmp_path).load() == (4, {"turn": 3}, {"window": 0, "calls": {}})
    assert journal.path.read_bytes().endswith(b'{"seq":4,"driver":{"turn":3}}\n')
