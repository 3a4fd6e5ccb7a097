"""Job folders of the layout before the job store (`results/<suite>/<job-id>/`, store/job_store.py), recognised
only where they provably are fedbench's. A results folder may be any folder of the user's (`--results-dir
~/work`), and a `config.json` two levels down is no proof: a folder counts as a job only when its name is
its job id (or a copy of it set aside, `<job-id>.<tag>`), its config.json parses as a job whose id is the
hash of that config, and that config names the suite folder it sits in. Anything else is not fedbench's
to move, lock or read as a job."""

from __future__ import annotations

import json
import logging
import os
import re
import stat
from pathlib import Path

from pydantic import ValidationError

# a folder an older fedbench wrote holds some of these (its config.json first)
JOB_FILES = ("config.json", "summary.json", "metrics.jsonl", "checkpoint.pt")
# `<job-id>` (12 hex digits, suite/expand.job_id), or a copy set aside as `<job-id>.<tag>`
JOB_NAME = re.compile(r"^([0-9a-f]{12})(\.[^/]+)?$")
# config.json beside it (job_config_json): not settings of the job, not in its id
BOOKKEEPING = ("job_id", "suite", "grid_point")
# a job's config.json is a few KiB; a larger "config.json" is someone else's, and is not read whole
MAX_CONFIG_BYTES = 1 << 20

log = logging.getLogger(__name__)


def not_a_job(folder: Path) -> str | None:
    """Why `folder` (`results/<suite>/<name>/`) is not a job folder of the old layout; None when it is one."""
    from benchmark.job.config import JobConfig
    from benchmark.suite.expand import job_id

    name = JOB_NAME.match(folder.name)
    if name is None:
        return "its name is no job id"
    config_file = folder / "config.json"
    try:
        info = config_file.lstat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_CONFIG_BYTES:  # a FIFO would block the read
            return "its config.json is no job's file"
        config = json.loads(config_file.read_bytes())
    except FileNotFoundError:
        return "it has no config.json"
    except (OSError, ValueError) as err:  # unreadable, not UTF-8, not JSON
        return f"its config.json cannot be read as JSON ({err})"
    if not isinstance(config, dict):
        return "its config.json is no job's"
    if config.get("job_id") != name[1] or config.get("suite") != folder.parent.name:
        return f"its config.json names job {config.get('job_id')!r} of suite {config.get('suite')!r}"
    try:
        settings = JobConfig.model_validate({k: v for k, v in config.items() if k not in BOOKKEEPING})
    except ValidationError:
        return "its config.json does not parse as a job"
    if job_id(settings) != name[1]:
        return "its name is not the hash of its config.json"
    return None


def _subfolders(folder: Path) -> list[Path]:
    """Real folders (no links) directly in `folder`; none where it cannot be listed (`/proc/1/fd`, no permission)."""
    try:
        with os.scandir(folder) as entries:
            return sorted(Path(e.path) for e in entries if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def _holds_job_files(folder: Path) -> bool:
    for name in JOB_FILES:
        try:
            os.lstat(folder / name)
            return True
        except OSError:  # absent, or a folder we may not look into (/proc/1/fdinfo): not ours either way
            continue
    return False


def suite_folders(root: Path, store: str) -> list[Path]:
    """The folders directly in `root` but the store: suite views, or folders of the user's."""
    return [v for v in _subfolders(root) if v.name != store]


def survey(root: Path, store: str) -> tuple[list[Path], list[tuple[Path, str]]]:
    """(the job folders of the old layout under `root`, the look-alikes with why each is not one): every
    real folder two levels down holding a file named like a job's."""
    jobs, foreign = [], []
    for view in suite_folders(root, store):
        for folder in _subfolders(view):
            if not _holds_job_files(folder):
                continue
            if why := not_a_job(folder):
                foreign.append((folder, why))
            else:
                jobs.append(folder)
    return jobs, foreign


def name_foreign(foreign: list[tuple[Path, str]]) -> None:
    """One warning per look-alike: the user learns that fedbench saw it and left it."""
    for folder, why in foreign:
        log.warning("results: %s is not a fedbench job folder (%s); left as it is", folder, why)


def find_in_place(root: Path, store: str, job_id: str) -> Path | None:
    """The job's folder of the old layout under `root` (one with a summary first), for commands that
    read without moving anything; None when no suite folder holds it."""
    found = [v / job_id for v in suite_folders(root, store) if (v / job_id).is_dir() and not (v / job_id).is_symlink()]
    found = [f for f in found if not_a_job(f) is None]
    return next((f for f in found if (f / "summary.json").exists()), found[0] if found else None)
