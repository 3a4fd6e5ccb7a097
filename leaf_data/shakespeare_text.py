"""Parsing the 1994 Project Gutenberg complete works (the text LEAF downloads) into users.

The rules are LEAF's (data/shakespeare/preprocess), so the user counts match its pipeline
(1,129 play/character users; 660 after its sample split with train fraction 0.8):
- a work starts at a "by William Shakespeare" line; its title is the nearest non-blank line 2 to
  7 lines above; the first work (the sonnets) is skipped;
- a speech starts with exactly two spaces, a name of letters and spaces, ". " and the text
  ("  HAMLET. To be, ..."); names are upper-cased, so "Ham." and "HAM." are one user;
- every later line indented by four or more spaces belongs to the current speaker (stage
  directions included), until the next speaker or work; other lines are skipped and do not end
  the speech;
- The Comedy of Errors is laid out without indentation: a speaker line is "NAME. text", every
  other line belongs to the current speaker (a line opening with "<" ends it; "ACT ..." is a
  heading, not a speaker);
- works with fewer than two speakers, and speakers with at most two lines, are dropped;
- the user's text is their lines joined by spaces, runs of spaces collapsed to one.
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
    """(title, speaker -> lines) per play, in order of appearance."""
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


def users_text(text: str, keep: set[str] | None = None) -> dict[str, str]:
    """user -> all their lines joined by spaces, runs of spaces collapsed; symbols outside
    `keep` become spaces (before collapsing), so window counts stay LEAF's."""
    out: dict[str, str] = {}
    for title, speakers in plays(text):
        for speaker, lines in speakers.items():
            if len(lines) < MIN_LINES:
                continue
            joined = " ".join(lines)
            if keep is not None:
                joined = "".join(c if c in keep else " " for c in joined)
            out[user_name(title, speaker)] = re.sub(r" {2,}", " ", joined)
    return out
