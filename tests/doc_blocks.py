"""The code blocks of README.md and docs/ as a reader sees them: each with its file, line, info string
(```yaml file=x.yaml -> "yaml file=x.yaml"; an indented block: "") and the marker of an HTML comment
just above it (`<!-- fedbench: fragment -->` -> "fragment"), and the command lines they hold."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from fedtest import REPO

FENCE = re.compile(r"^(\s*)(```|~~~)\s*(.*)$")
MARKER = re.compile(r"^\s*<!--\s*fedbench:\s*(.*?)\s*-->\s*$")
# A command line: a program a reader types, first in its line (after `$ ` if shown).
PROGRAMS = ("fedbench", "python", "pip", "ray", "tox", "mlflow")
COMMAND = re.compile(r"^(?:\$ )?(?:[A-Z_]+=\S+ )*(" + "|".join(PROGRAMS) + r")\s")


@dataclass(frozen=True)
class Block:
    file: Path
    line: int  # of the block's first line of code
    info: str
    marker: str
    text: str

    @property
    def lang(self) -> str:
        return self.info.split()[0] if self.info else ""

    @property
    def where(self) -> str:
        return f"{self.file.relative_to(REPO).as_posix()}:{self.line}"

    def commands(self) -> list[list[str]]:
        """Each command line, `\\`-continued lines joined and `A && B` split, as its words."""
        joined = re.sub(r"\\\n\s*", " ", self.text)
        found = []
        for line in joined.splitlines():
            line = line.strip().removeprefix("$ ")
            if not COMMAND.match(line):
                continue
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # FEDBENCH_DATA=/data ray start
                    words = words[1:]
                found.append(words)
        return found


def documents() -> list[Path]:
    """README.md and the manual; the reports fedbench wrote into docs/reproductions/ are outputs, not docs."""
    docs = [p for p in (REPO / "docs").rglob("*.md") if p.name != "report.md"]
    return [REPO / "README.md", *sorted(docs)]


def blocks(path: Path) -> list[Block]:
    lines = path.read_text().splitlines()
    found, n = [], 0
    while n < len(lines):
        line = lines[n]
        marker = ""
        above = n - 1
        while above >= 0 and not lines[above].strip():
            above -= 1
        if above >= 0 and (m := MARKER.match(lines[above])):
            marker = m.group(1)
        if m := FENCE.match(line):
            indent, fence, info = m.groups()
            end = next(k for k in range(n + 1, len(lines)) if lines[k].strip().startswith(fence))
            body = [x[len(indent) :] if x.startswith(indent) else x for x in lines[n + 1 : end]]
            found.append(Block(path, n + 2, info, marker, "\n".join(body) + "\n"))
            n = end + 1
        elif line.startswith("    ") and (n == 0 or not lines[n - 1].strip()) and not _in_list(lines, n):
            end = n
            while end < len(lines) and (lines[end].startswith("    ") or not lines[end].strip()):
                end += 1
            body = [x[4:] for x in lines[n:end]]
            found.append(Block(path, n + 1, "", marker, "\n".join(body).strip("\n") + "\n"))
            n = end
        else:
            n += 1
    return found


def _in_list(lines: list[str], n: int) -> bool:
    """An indented paragraph continuing a list item or a nested list is not a code block."""
    above = n - 1
    while above >= 0 and not lines[above].strip():
        above -= 1
    return above >= 0 and bool(re.match(r"\s*([-*]|\d+\.)\s", lines[above])) or lines[n].lstrip().startswith(("-", "*"))


def every_block() -> list[Block]:
    return [b for path in documents() for b in blocks(path)]
