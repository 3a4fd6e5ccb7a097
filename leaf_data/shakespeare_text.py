"""Parsing the 1994 Project Gutenberg complete works (the text LEAF downloads) into speeches.

The text is a header, then works, each opening with a year line, a title and "by William
Shakespeare", and closing with "THE END"; copyright notices `<<THIS ELECTRONIC ...>>` are
interleaved. In plays a speech starts with an upper-case speaker name and a full stop
("  HAMLET. To be, ...") at the play's speaker indentation (2 spaces, or 0 in The Comedy of
Errors, whose lines are laid out differently), and continues on lines indented a little further;
far-right lines are stage directions ("Exeunt"), left out. A blank or unindented line ends it.
Works without speakers (the sonnets and poems) yield no users.
"""

from __future__ import annotations

import re
from collections import Counter

YEAR = re.compile(r"^\d{4}$")
NOTICE_START, NOTICE_END = "<<THIS ELECTRONIC VERSION", ">>"
# "KING HENRY. text", "FIRST LORD. text", "LADY MACBETH. text"; ACT/SCENE headings excluded below
SPEAKER = re.compile(r"^( *)([A-Z][A-Z' &-]*[A-Z])\. (\S.*)$")
HEADINGS = ("ACT ", "SCENE", "EPILOGUE", "PROLOGUE", "INDUCTION")
# speech continues 2-4 spaces deeper than its speaker; stage directions sit much further right
MAX_CONTINUATION_INDENT = 8


def strip_notices(lines: list[str]) -> list[str]:
    out, inside = [], False
    for line in lines:
        if line.startswith(NOTICE_START):
            inside = True
        if not inside:
            out.append(line)
        elif line.rstrip().endswith(NOTICE_END):
            inside = False
    return out


def split_works(text: str) -> list[tuple[str, list[str]]]:
    """(title, lines) of every work: from a year line to the next "THE END"."""
    lines = strip_notices(text.splitlines())
    works, i = [], 0
    while i < len(lines):
        if YEAR.match(lines[i].strip()):
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            title, body = lines[j].strip() if j < len(lines) else "", []
            k = j + 1
            while k < len(lines) and lines[k].strip() != "THE END":
                body.append(lines[k])
                k += 1
            works.append((title, body))
            i = k
        i += 1
    return works


def _speaker(line: str, indent: int) -> tuple[str, str] | None:
    m = SPEAKER.match(line)
    if not m or len(m.group(1)) != indent or m.group(2).startswith(HEADINGS):
        return None
    return m.group(2), m.group(3)


def speeches(body: list[str]) -> list[tuple[str, str]]:
    """(speaker, speech text with its lines joined by spaces) in order of appearance."""
    indents = Counter(len(m.group(1)) for line in body if (m := SPEAKER.match(line)))
    if not indents:
        return []
    indent = indents.most_common(1)[0][0]
    out: list[tuple[str, list[str]]] = []
    current: list[str] | None = None
    for line in body:
        hit = _speaker(line, indent)
        if hit:
            current = [hit[1].strip()]
            out.append((hit[0], current))
        elif current is not None and line.strip() and len(line) - len(line.lstrip(" ")) > indent:
            if len(line) - len(line.lstrip(" ")) <= indent + MAX_CONTINUATION_INDENT:
                current.append(line.strip())  # else a stage direction inside the speech: skipped
        else:
            current = None  # a blank line or a stage direction ends the speech
    return [(who, " ".join(parts)) for who, parts in out]


def users_text(text: str, keep: set[str] | None = None) -> dict[str, str]:
    """"<TITLE>_<SPEAKER>" (spaces as underscores, as LEAF names users) -> all their speeches
    joined by spaces, with symbols outside `keep` dropped and runs of spaces collapsed."""
    users: dict[str, list[str]] = {}
    for title, body in split_works(text):
        for who, speech in speeches(body):
            users.setdefault(f"{title}_{who}".replace(" ", "_"), []).append(speech)
    out = {}
    for user, parts in users.items():
        joined = " ".join(parts)
        if keep is not None:
            joined = "".join(c for c in joined if c in keep)
        out[user] = re.sub(r" {2,}", " ", joined)
    return out
