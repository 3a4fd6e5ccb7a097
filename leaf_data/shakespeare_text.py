"""Parsing the 1994 Project Gutenberg complete works (the text LEAF downloads) into users.

The rules are those of LEAF's data/shakespeare/preprocess (preprocess_shakespeare.py,
shake_utils.py; read, not copied):
- a work starts at a "by William Shakespeare" line; its title is the nearest non-blank line 2 to
  7 lines above; the first work (the sonnets) is skipped;
- a speech starts with exactly two spaces, a name of letters and spaces, ". " and the text
  ("  HAMLET. To be, ..."); names are upper-cased, so "Ham." and "HAM." are one character;
- every later line indented by four or more spaces belongs to the current speaker (stage
  directions included), until the next speaker or work; other lines are skipped and do not end
  the speech;
- The Comedy of Errors is laid out without indentation: a speaker line is "NAME. text", every
  other line belongs to the current speaker (a line opening with "<" ends it; "ACT ..." is a
  heading, not a speaker);
- works with fewer than two characters are dropped, and so is each character with at most two
  lines (the check is per play and character, before ids are merged);
- the user id is "<TITLE>_<CHARACTER>" with non-word runs as "_"; characters whose ids coincide
  share one user, their lines in play order;
- LEAF writes each line plus a newline to the user's file and reads the file back with newlines
  as spaces, so the text ends in a space (one more window per user); then runs of two or more
  spaces become one.
"""

from __future__ import annotations

import re

WORK_MARK = "by William Shakespeare"
SPEAKER = re.compile(r"^  ([a-zA-Z][a-zA-Z ]*)\. (.*)")
CONTINUATION = re.compile(r"^    (.*)")
UNINDENTED_PLAY = "THE COMEDY OF ERRORS"
UNINDENTED_SPEAKER = re.compile(r"^([a-zA-Z][a-zA-Z ]*)\. (.*)")
MIN_LINES = 3  # LEAF skips characters with two lines or fewer


def _title(lines: list[str], i: int) -> str:
    for back in range(2, 8):
        if i - back >= 0 and lines[i - back].strip():
            return lines[i - back].strip()
    raise ValueError(f"line {i + 1}: no title above '{WORK_MARK}'")


def plays(text: str) -> list[tuple[str, dict[str, list[str]]]]:
    """(title, character -> lines) per play with two or more characters, in order of appearance."""
    lines = text.splitlines()
    out: list[tuple[str, dict[str, list[str]]]] = []
    works_seen, speaker, unindented = 0, None, False
    for i, line in enumerate(lines):
        if WORK_MARK in line:
            works_seen += 1
            speaker = None
            if works_seen >= 2:  # the first work is the sonnets
                title = _title(lines, i)
                unindented = title == UNINDENTED_PLAY
                out.append((title, {}))
            continue
        if not out:
            continue
        speakers = out[-1][1]
        hit = (UNINDENTED_SPEAKER if unindented else SPEAKER).match(line)
        if hit:
            name = hit.group(1).upper()
            speaker = None if unindented and name.startswith("ACT ") else name
            if speaker:
                speakers.setdefault(speaker, []).append(hit.group(2))
        elif speaker:
            if unindented:
                if line.startswith("<"):
                    speaker = None
                else:
                    speakers[speaker].append(line)
            elif cont := CONTINUATION.match(line):
                speakers[speaker].append(cont.group(1))
    return [(title, speakers) for title, speakers in out if len(speakers) > 1]


def user_name(title: str, speaker: str) -> str:
    """LEAF's user id: "<TITLE>_<SPEAKER>" with every run of non-word characters as one "_"."""
    return re.sub(r"\W+", "_", f"{title}_{speaker}".replace(" ", "_"))


def read_back(lines: list[str]) -> str:
    """The text LEAF reads from a user's file: every line newline-terminated, newlines as
    spaces, runs of two or more spaces as one."""
    return re.sub(r" {2,}", " ", "".join(line + " " for line in lines))


def users_lines(text: str) -> dict[str, list[str]]:
    """user id -> their lines, characters with at most two lines left out; characters that
    share an id share one user."""
    out: dict[str, list[str]] = {}
    for title, speakers in plays(text):
        for speaker, lines in speakers.items():
            if len(lines) >= MIN_LINES:
                out.setdefault(user_name(title, speaker), []).extend(lines)
    return out


def users_text(text: str) -> dict[str, str]:
    """user id -> the text LEAF cuts that user's windows from."""
    return {user: read_back(lines) for user, lines in users_lines(text).items()}
