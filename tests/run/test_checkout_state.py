"""The git commit (and whether tracked files differ from it) that every job's environment records, read by one
`git status` (run/environment.py): the same commit as `git rev-parse HEAD` on a branch, with packed refs, in a
worktree and on a detached HEAD; None outside git and before a first commit."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from benchmark.run.environment import checkout_state

IDENTITY = ["-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false"]


def git(where: Path, *args: str) -> str:
    done = subprocess.run(["git", *IDENTITY, *args], cwd=where, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    git(root, "init", "-q")
    (root / "pkg" / "a.py").write_text("x = 1\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "one")
    (root / "pkg" / "a.py").write_text("x = 2\n")
    git(root, "commit", "-q", "-am", "two")
    return root


def test_on_a_branch_it_is_heads_commit_and_clean(repo):
    assert checkout_state(repo / "pkg") == (git(repo, "rev-parse", "HEAD"), False)


def test_packed_refs_give_the_same_commit(repo):
    git(repo, "pack-refs", "--all")
    assert not list((repo / ".git" / "refs" / "heads").iterdir())  # the branch lives in packed-refs only
    assert checkout_state(repo / "pkg") == (git(repo, "rev-parse", "HEAD"), False)


def test_a_detached_head_is_its_commit(repo):
    first = git(repo, "rev-parse", "HEAD~1")
    git(repo, "checkout", "-q", "--detach", first)
    assert checkout_state(repo / "pkg") == (first, False)


def test_a_worktree_is_its_own_head_not_the_main_checkouts(repo, tmp_path):
    first = git(repo, "rev-parse", "HEAD~1")
    git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "wt"), first)
    assert (tmp_path / "wt" / ".git").is_file()  # a worktree's .git is a file naming its gitdir
    assert checkout_state(tmp_path / "wt" / "pkg") == (first, False)
    assert checkout_state(repo / "pkg")[0] == git(repo, "rev-parse", "HEAD") != first


def test_an_edited_tracked_file_is_dirty_an_untracked_one_is_not(repo):
    (repo / "pkg" / "new.py").write_text("y = 1\n")
    assert checkout_state(repo / "pkg") == (git(repo, "rev-parse", "HEAD"), False)
    (repo / "pkg" / "a.py").write_text("x = 3\n")
    assert checkout_state(repo / "pkg") == (git(repo, "rev-parse", "HEAD"), True)


def test_outside_git_and_before_a_first_commit_there_is_none(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / ".git").mkdir()  # not a repository: git finds none here and must not look above tmp_path
    assert checkout_state(plain) is None
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q")
    assert checkout_state(fresh) is None


def test_a_branch_ahead_of_its_upstream_is_its_own_commit(repo, tmp_path):
    git(tmp_path, "clone", "-q", str(repo), "clone")
    clone = tmp_path / "clone"
    (clone / "pkg" / "a.py").write_text("x = 4\n")
    git(clone, "commit", "-q", "-am", "ahead of origin")
    assert git(clone, "rev-parse", "--abbrev-ref", "@{upstream}").startswith("origin/")
    assert checkout_state(clone / "pkg") == (git(clone, "rev-parse", "HEAD"), False)
