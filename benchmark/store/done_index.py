"""results/jobs/.done-index: the verdicts of earlier no-op runs, so that a run over 10^5 finished jobs
need not read 10^5 summaries again (run/triage.py).

A line per job found done: its status, the stamp of the code that produced it (run/code_parts.py), the
fingerprint of the data it ran on, and the stat signature (inode, size, mtime and ctime in ns) of its
folder, summary.json and metrics.jsonl when that verdict was reached. An entry counts only while all
three signatures are unchanged: fedbench writes every file by a rename in the folder (which changes the
folder's), an edit in place changes the file's, so any change sends the job back to the full check
(`JobDir.done_summary`), as does an entry whose code or data differ from now. The verdict is a function
of the files alone, so the index is a cache, never a source of truth: it needs no lock, a lost, cut,
garbled or foreign line costs a full check of its job, and a missing index is rebuilt by the next run.

Two rules keep a signature honest: it is taken before and after the full check and the entry kept only
if both agree, and a job whose files changed in the last RACY_NS is not indexed (a file written again
within the clock's granularity could keep its mtime; git's "racy" rule, benchmark/racy.py).
"""

from __future__ import annotations

import logging
import os
import time
import zlib
from pathlib import Path
from typing import NamedTuple

from benchmark.racy import racy
from benchmark.store.job_dir import TEMP_NAME, atomic_write_bytes
from benchmark.store.layout import Store
from benchmark.store.records import JobSummary

log = logging.getLogger(__name__)

INDEX = ".done-index"
VERSION = "v1"
NONE = "-"  # a file that is not there, a summary without code_parts or data fingerprint


class Entry(NamedTuple):
    status: str
    code: str
    data: str
    signature: str


def signature(folder: str) -> tuple[str, int]:
    """The stat signature of a job folder, its summary.json and metrics.jsonl, and the latest time among them."""
    parts, latest = [], 0
    for path in (folder, folder + "/summary.json", folder + "/metrics.jsonl"):
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            parts.append(NONE)
            continue
        parts.append(f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}")
        latest = max(latest, st.st_mtime_ns, st.st_ctime_ns)
    return ",".join(parts), latest


def _line(job_id: str, entry: Entry) -> str:
    body = " ".join((VERSION, job_id, *entry))
    return f"{body} {zlib.crc32(body.encode()):08x}\n"


def _parsed(line: str) -> tuple[str, Entry] | None:
    fields = line.split(" ")
    if len(fields) != 7 or fields[0] != VERSION:
        return None
    body = line[: line.rfind(" ")]
    if f"{zlib.crc32(body.encode()):08x}" != fields[6]:  # cut or garbled (two writers, a full disk, an edit)
        return None
    return fields[1], Entry(*fields[2:6])


class DoneIndex:
    """The index of one results folder as a run reads it once, looks jobs up, and appends what it verified."""

    def __init__(self, store: Store):
        self.store = str(store.jobs)  # joined as strings: 10^5 jobs are looked up (job_dir's paths cost more)
        self.path = os.path.join(self.store, INDEX)
        self.entries: dict[str, Entry] = {}
        self.lines = 0
        self.new: dict[str, Entry] = {}
        self.hits: set[str] = set()  # looked up and unchanged: nothing to tidy in their folders
        try:
            with open(self.path, "rb") as f:
                text = f.read().decode("utf-8", "replace")
        except OSError:  # none yet (or unreadable): every job gets the full check
            return
        for line in text.splitlines():
            self.lines += 1
            if (parsed := _parsed(line)) is not None:
                self.entries[parsed[0]] = parsed[1]

    def folder(self, job_id: str) -> str:
        return os.path.join(self.store, job_id)

    def lookup(self, job_id: str, code: str, data: str | None) -> str | None:
        """The status of a job done with code stamp `code` on data `data` (as `JobDir.skipped_summary` judges
        it), where its entry's files are unchanged; None: the full check must say."""
        entry = self.entries.get(job_id)
        if entry is None or entry.code != code or (data and entry.data != NONE and entry.data != data):
            return None
        if signature(self.folder(job_id))[0] != entry.signature:
            return None
        self.hits.add(job_id)
        return entry.status

    def verified(self, job_id: str, before: str, summary: JobSummary, code: str) -> None:
        """Index a job the full check found done (`summary`, its files' signature `before` the check), if
        its files stayed as they were, are not racy, and no temp file of a killed write lies beside them."""
        after, latest = signature(self.folder(job_id))
        if after != before or racy(latest, time.time_ns()) or code == NONE:
            return
        try:
            if any(TEMP_NAME.match(name) for name in os.listdir(self.folder(job_id))):
                return
        except OSError:
            return
        data = summary.data_fingerprint
        self.new[job_id] = Entry(summary.status, code, data if isinstance(data, str) and data else NONE, after)

    def save(self) -> None:
        """Append the new entries (one write); rewrite the whole index when over half its lines are outdated.
        A store that cannot be written only costs the next run full checks."""
        if not self.new:
            return
        try:
            if self.lines + len(self.new) > 2 * len({**self.entries, **self.new}) + 1000:
                every = {**self.entries, **self.new}
                atomic_write_bytes(Path(self.path), "".join(_line(i, e) for i, e in every.items()).encode(), False)
            else:
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
                try:
                    os.write(fd, "".join(_line(i, e) for i, e in self.new.items()).encode())
                finally:
                    os.close(fd)
        except OSError as err:
            log.debug("cannot write the index of done jobs %s: %s", self.path, err)
        self.entries.update(self.new)
        self.new = {}
