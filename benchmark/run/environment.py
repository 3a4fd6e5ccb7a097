"""Where a job ran: the code (fedbench version and git commit), torch with its CUDA and cuDNN, the
host, the device by name (the CPU's model, the GPU's), the thread count and the determinism flags:
recorded in summary.json (`environment`) and as MLflow tags (mlflow_mirror.environment_tags), so a number
can be traced to the software and hardware behind it."""

from __future__ import annotations

import functools
import platform
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


@functools.cache
def git_commit() -> tuple[str, bool] | None:
    """(commit, dirty) of the checkout this package runs from; None outside git."""
    return checkout_state(Path(__file__).resolve().parent)


def checkout_state(directory: Path) -> tuple[str, bool] | None:
    """(HEAD's commit, whether a tracked file differs from it) of the git checkout holding `directory`;
    None outside git or before a first commit. One `git status` gives both (`--branch`'s `# branch.oid`
    header is HEAD's commit, in a worktree and on a detached HEAD alike), so a run spawns git once, not twice."""
    try:
        status = subprocess.run(
            # --no-ahead-behind: a branch with an upstream far behind would otherwise walk its history
            ["git", "status", "--porcelain=v2", "--branch", "--untracked-files=no", "--no-ahead-behind"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = status.stdout.splitlines()
    commit = next((line.split()[2] for line in lines if line.startswith("# branch.oid ")), None)
    if status.returncode != 0 or commit in (None, "(initial)"):
        return None
    return commit, any(not line.startswith("#") for line in lines)


@functools.cache  # installed versions do not change under a running process; a job asked 2-4 times (7 ms a run)
def package_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


@functools.cache
def cpu_name() -> str:
    """The CPU's model ("AMD EPYC 7B13"): /proc/cpuinfo's model name on Linux, else what the platform
    says; the architecture ("x86_64") only where nothing names the model."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Hardware", "Model") and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment(device) -> dict:
    """The record for a job that ran on `device` (a torch.device or its name). A CPU job that computed
    without torch (the FedAc protocol's engine) records the installed torch's version and None for
    the state of a torch it never imported (CUDA, cuDNN, threads, determinism flags)."""
    git = git_commit()
    about = {
        "fedbench": package_version("fedbench"),
        "git_commit": git[0] if git else None,
        "git_dirty": git[1] if git else None,
        "python": platform.python_version(),
        "host": platform.node(),
        "device": str(device),
    }
    if "torch" not in sys.modules and not str(device).startswith("cuda"):
        torch_state = ("cuda", "cudnn", "threads", "deterministic_algorithms", "cudnn_deterministic", "cudnn_benchmark")
        return {**about, "torch": package_version("torch"), "device_name": cpu_name(), **dict.fromkeys(torch_state)}
    import torch

    cuda = str(device).startswith("cuda") and torch.cuda.is_available()
    return {
        **about,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "device_name": torch.cuda.get_device_name(torch.device(device)) if cuda else cpu_name(),
        "threads": torch.get_num_threads(),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cudnn_deterministic": torch.backends.cudnn.deterministic,
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
    }
