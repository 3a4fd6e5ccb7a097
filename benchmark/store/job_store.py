"""The results store, addressed by job id: a job's folder is `results/jobs/<job-id>/`, whichever suites
expand to it, so a suite reuses the finished jobs of another (a suite that `extends:` a paper suite
reruns none of its baselines). `results/<suite>/` is the suite's view: its own files (`report/`,
`.locks/suite.lock`) and one link `<job-id> -> ../jobs/<job-id>` per job the suite ran or reused, which
is how `status` and `report` find the suite's jobs at seeds or settings it no longer expands to.

Results written before the store (job folders directly in `results/<suite>/`) move into it on the
first command that writes results (`migrate_to_job_store`): automatic, so that upgrading asks nothing
of the user and a resumed run simply finds its checkpoints; it logs what it moved. Only folders that
provably are fedbench jobs move (store/old_layout.py); commands that only read move nothing.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from benchmark.store import old_layout
from benchmark.store.job_dir import STORE, JobDir, free_name_beside
from benchmark.store.layout import Store, SuiteView
from benchmark.store.locks import FileLock

log = logging.getLogger(__name__)

# `.<job-id>.link`: a link about to be put in place in a suite's view (a kill leaves it; the next migration ends it)
PENDING = ".link"


def job_lock(store: Store, job_id: str) -> FileLock:
    """Held by the process training `job_id`, for as long as it trains it, whichever suite it runs for."""
    return FileLock(store.job_lock(job_id))


def link_into_suite(store: Store, suite: str, job_id: str) -> None:
    """`results/<suite>/<job-id>` -> the job's folder in the store (once; a link already there is kept)."""
    view = store.suite(suite).path
    if os.path.lexists(view / job_id):  # the link, or a folder an old fedbench still trains
        return
    try:
        _put_link(view, job_id)
    except (FileNotFoundError, FileExistsError):  # another process of the suite put it there meanwhile
        if not (view / job_id).is_symlink():
            raise


def _pending_link(view: Path, name: str) -> Path:
    """`.<name>.link` -> the job's folder in the store, beside where the link goes."""
    view.mkdir(parents=True, exist_ok=True)
    pending = view / f".{name}{PENDING}"
    pending.unlink(missing_ok=True)
    pending.symlink_to(Path("..") / STORE / name)
    return pending


def _put_link(view: Path, name: str) -> None:
    """Made beside, then renamed into place: a kill leaves the pending link, never half of one."""
    os.replace(_pending_link(view, name), view / name)


def open_results(store: Store, suite: str) -> Path:
    """The suite's view, with every job of the old layout under the store's root moved into the store
    first (every command that writes results calls it); what has nothing to move writes nothing."""
    view = store.suite(suite).path
    migrate_to_job_store(store)
    return view


def look_at_results(store: Store) -> None:
    """What a command that only reads (`status`, `report`) says of the results folder, moving, creating and
    locking nothing: the look-alikes it leaves alone, and old-layout jobs that a store already beside them
    will take in on the next command that writes (where there is no store yet they are read in place)."""
    jobs, foreign = old_layout.survey(store.root, STORE)
    old_layout.name_foreign(foreign)
    if jobs and store.jobs.is_dir():
        log.warning(
            "results: %d job folder(s) of the layout before the job store (%s, ...) are not shown; the next "
            "`fedbench run` or `fedbench sync` moves them into %s",
            len(jobs),
            jobs[0],
            store.jobs,
        )


def _pending_links(root: Path) -> list[Path]:
    """Links a killed migration made beside a suite's view but had not put in place."""
    return [p for v in old_layout.suite_folders(root, STORE) for p in sorted(v.glob(f".*{PENDING}"))]


def migrate_to_job_store(store: Store) -> int:
    """Move every job folder of the old layout (`results/<suite>/<name>/`, store/old_layout.py: only what
    provably is one) into the store and leave the link in its place; returns how many moved. Each move
    is one rename on one filesystem, so a kill at any moment leaves every job whole in its old or its
    new place, and running it again ends the work. Idempotent: a folder already moved is a link, and is
    left alone. Look-alikes are named once and left as they are."""
    root = store.root
    if not root.is_dir():
        return 0
    jobs, foreign = old_layout.survey(root, STORE)
    old_layout.name_foreign(foreign)  # here only: the survey under the lock says nothing
    if not jobs and not _pending_links(root):
        return 0
    moved = 0
    with FileLock(store.locks / "migrate.lock"):  # one migration at a time
        jobs, _ = old_layout.survey(root, STORE)  # again: another process may have ended it meanwhile
        for pending in _pending_links(root):  # links a killed migration had not put in place
            view, name = pending.parent, pending.name.removeprefix(".").removesuffix(PENDING)
            if (view / name).is_symlink() or not store.job(name).exists():
                pending.unlink()
            elif not (view / name).exists():
                _put_link(view, name)
        moved += sum(_move(store, folder.parent, folder) for folder in jobs)
    if moved:
        log.info("results: moved %d job folder(s) into the job store %s (one-time migration)", moved, store.jobs)
    return moved


def _move(store: Store, view: Path, folder: Path) -> bool:
    """One job folder into the store, under the lock an old fedbench and a new one would each take."""
    name = folder.name
    old_lock = FileLock(SuiteView(view).locks / f"{name}.lock")
    new_lock = job_lock(store, name)
    if not old_lock.acquire(blocking=False):
        log.warning("results: %s is being trained by another process; it moves to the store on a later run", folder)
        return False
    try:
        if not new_lock.acquire(blocking=False):
            log.warning("results: job %s is being trained from the store; %s stays until a later run", name, folder)
            return False
        try:
            target = store.job(name)
            if target.exists():  # two suites each ran it in the old layout: the store keeps a finished copy
                target = _keep_both(folder, target, view.name)
            target.parent.mkdir(parents=True, exist_ok=True)
            pending = _pending_link(view, name)  # first: a kill after the move leaves it for the next run
            os.replace(folder, target)
            os.replace(pending, folder)
            return True
        finally:
            new_lock.release()
    finally:
        old_lock.release()


def _keep_both(folder: Path, target: Path, suite: str) -> Path:
    """Where `folder` goes when the store already holds its job: in its place if only it is done (the
    store's copy is set aside), else beside it as `<id>.from-<suite>` (kept, never reused)."""
    if JobDir.at(folder).is_done() and not JobDir.at(target).is_done():
        aside = JobDir.at(target).set_aside("superseded")
        log.warning("results: job %s: %s is done, the store's unfinished copy moved to %s", target.name, folder, aside)
        return target
    aside = free_name_beside(target, f"from-{suite}")
    log.warning(
        "results: job %s is already in the store; the copy of suite %s is kept as %s", target.name, suite, aside
    )
    return aside
