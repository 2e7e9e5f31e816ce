"""No file of the project points outside the repository: the design document is docs/design.md
(its section numbers are those every "docs/design.md §N" cites), not a file beside the clone."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
# Spelled in pieces, so that this file does not name what it looks for.
OUTSIDE = re.compile("|".join([r"\bS" r"PEC\.md", r"\.\./" r"shared\b", r"/work/" r"shared\b",
                               r"\bS" r"PEC §"]))  # fmt: skip


def _project_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "-C", str(PROJECT), "ls-files", "-z"], capture_output=True, check=False
    )
    if listed.returncode == 0:
        names = [name for name in listed.stdout.decode().split("\0") if name]
        return [PROJECT / name for name in names if (PROJECT / name).is_file()]
    return [p for p in PROJECT.rglob("*") if p.is_file() and ".venv" not in p.parts]


def test_no_file_refers_to_a_file_outside_the_repository() -> None:
    found = []
    for path in _project_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary
        found += [
            f"{path.relative_to(PROJECT)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
            for m in OUTSIDE.finditer(text)
        ]
    assert found == []


def test_the_design_document_keeps_the_section_numbers_it_is_cited_by() -> None:
    design = (PROJECT / "docs" / "design.md").read_text(encoding="utf-8")
    assert re.findall(r"^## (\d+)\. ", design, flags=re.MULTILINE) == [str(n) for n in range(1, 12)]
    cited = set()
    for path in _project_files():
        if path.suffix in (".py", ".md"):
            cited |= set(re.findall(r"docs/design\.md §(\d+)", path.read_text(encoding="utf-8")))
    assert cited and cited <= {str(n) for n in range(1, 12)}
