"""benchmarks/gpu_check.py cannot rot between the rare sessions with a GPU: its CPU mode runs here."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import gpu_check  # noqa: E402
from gpu_check_jobs import CUDA_BRANCHES, cuda_branches_present  # noqa: E402


def test_every_listed_cuda_branch_is_still_in_the_code():
    assert cuda_branches_present() == {name: True for name in CUDA_BRANCHES}


def test_the_code_creates_no_tensor_with_a_cuda_literal():
    """Every tensor is created on the job's device (device=..., .to(device)), never with .cuda()."""
    offenders = [
        f"{path.relative_to(REPO)}:{i}"
        for path in (REPO / "benchmark").rglob("*.py")
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\.cuda\(|device=['\"]cuda", line)
    ]
    assert offenders == []


def test_env_section_writes_its_record(tmp_path):
    out = tmp_path / "check.json"
    assert gpu_check.main(["--device", "cpu", "--quick", "--only", "env", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["device"] == "cpu" and record["torch"]
    assert [r["ok"] for r in record["rows"]] == [True, True]
    assert record["cuda_branches_reached"] == {name: False for name in CUDA_BRANCHES}  # no GPU here


@pytest.mark.slow
def test_cpu_quick_mode_passes_every_section(tmp_path):
    out = tmp_path / "check.json"
    cmd = [sys.executable, str(REPO / "benchmarks" / "gpu_check.py"), "--device", "cpu", "--quick", "--out", str(out)]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads(out.read_text())
    assert set(record["section_seconds"]) == set(gpu_check.SECTIONS)
    assert not [r for r in record["rows"] if r["ok"] is False]
    assert {r["section"] for r in record["rows"] if r["ok"]} >= {"env", "parity", "paths", "speed", "bf16"}
