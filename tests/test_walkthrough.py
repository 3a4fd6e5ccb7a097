"""docs/extending.md's walk-through ("Benchmark your own method") followed as written: its two package
files and its suite written from the doc's text, then every line of its command block run in order, as
a reader runs them, in a fresh folder. Two differences, both where the commands touch the outside: `pip
install` installs offline into a folder of its own (`--no-index --target`), and `FEDBENCH_DATA` is a
tiny CIFAR-10 in the official format (or, with the `realdata` mark, the real one of $FEDBENCH_DATA),
so `data prepare cifar10` finds it there instead of downloading."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from doc_blocks import blocks
from fedtest import EXTENDING, REPO, extending_examples

sys.path.insert(0, str(Path(__file__).parent / "data"))
from data_fixtures import write_cifar_pickles  # noqa: E402

MARKER = "run by tests/test_walkthrough.py"
CHANCE = 10.0  # CIFAR-10: ten balanced classes


def walkthrough_lines() -> list[str]:
    (block,) = [b for b in blocks(EXTENDING) if b.marker == MARKER]
    return [line for line in block.text.splitlines() if line.strip()]


def follow(cwd: Path, data: Path) -> dict[str, subprocess.CompletedProcess]:
    """Each line of the block run in `cwd`; the first line of each command (by its first two words) kept."""
    for name, text in extending_examples().items():
        if name.startswith("fedmedian"):
            (cwd / name).parent.mkdir(parents=True, exist_ok=True)
            (cwd / name).write_text(textwrap.dedent(text))
    (cwd / "suites").symlink_to(REPO / "suites")
    site = cwd / "site"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(site)]), "OMP_NUM_THREADS": "1"}
    env.pop("FEDBENCH_DATA", None)
    done = {}
    for line in walkthrough_lines():
        words = shlex.split(line)
        if words[0] == "export":
            name, _, _ = words[1].partition("=")
            assert name == "FEDBENCH_DATA", line
            env[name] = str(data)
            continue
        if words[:2] == ["pip", "install"]:
            offline = ["--no-deps", "--no-build-isolation", "--no-index", "--target", str(site)]
            command = [sys.executable, "-m", "pip", "install", "--quiet", *offline, *words[2:]]
        else:
            assert words[0] == "fedbench", line
            command = [sys.executable, "-m", "benchmark", *words[1:]]
        result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
        assert result.returncode == 0 and "Traceback" not in result.stderr, f"{line}\n{result.stdout}\n{result.stderr}"
        done.setdefault(" ".join(words[:3]), result)
    return done


def final_accuracies(results: Path) -> dict[str, tuple[float, float]]:
    """Method label -> its final test accuracy (EMA-smoothed, raw), from the jobs' summaries."""
    found = {}
    for summary in (results / "jobs").glob("*/summary.json"):
        values = json.loads(summary.read_text())
        found[values["method"]] = (values["final_ema_acc"], values["final_acc"])
    return found


def check_table(out: str, accuracies: dict[str, tuple[float, float]]) -> None:
    """The run's table: a row per method showing its final accuracies, the overrides said under the table."""
    assert set(accuracies) == {"FedAvg", "FedMedian"}
    rows = out.split("┡")[1].split("└")[0].splitlines()
    for method, (ema, raw) in accuracies.items():
        row = next(r for r in rows if r.startswith(f"│ {method} "))
        assert f"{ema:.2f}" in row and f"{raw:.2f}" in row, (method, ema, raw, row)
    assert "every row ran model.name=celeba_cnn" in " ".join(out.split())


@pytest.mark.slow
def test_the_walkthrough_runs_as_written_on_tiny_data(tmp_path):
    data = tmp_path / "data"
    write_cifar_pickles(data, per_batch=200)  # 1,000 training images: 10 a client
    cwd = tmp_path / "checkout"
    cwd.mkdir()
    done = follow(cwd, data)
    assert "42 jobs" in done["fedbench plan fedmedian-vs-fedacg.yaml"].stdout
    assert re.search(r"^cifar10\s+found", done["fedbench data ls"].stdout, flags=re.M)
    ran = done["fedbench run fedmedian-vs-fedacg.yaml"].stdout
    check_table(ran, final_accuracies(cwd / "results"))
    assert (cwd / "results" / "fedmedian-vs-fedacg" / "report" / "report.html").is_file()


@pytest.mark.slow
@pytest.mark.realdata
def test_the_walkthrough_learns_on_cifar10(tmp_path, data_root):
    """The CPU slice the doc states learns: both methods clearly above chance on the real CIFAR-10."""
    cwd = tmp_path / "checkout"
    cwd.mkdir()
    done = follow(cwd, data_root)
    accuracies = final_accuracies(cwd / "results")
    check_table(done["fedbench run fedmedian-vs-fedacg.yaml"].stdout, accuracies)
    assert all(raw >= CHANCE + 4 for _, raw in accuracies.values()), accuracies  # measured: 25.64, 16.32
