"""The terminal table shows the headline numbers whatever the overrides: settings every row ran move to
one caption line, a wide setting column wraps, and the table fits the console (its width, or $COLUMNS
when piped; at most 100 columns). `run` picks columns with --columns and --wide as `report` does.
Every command runs as a user runs it: a subprocess whose stdout is a pipe (or a terminal, via a pty)."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from fedtest import REPO

SUITE = """\
name: widths
defaults:
  rounds: 4
  num_clients: 6
  participation: {rate: 0.5}
  local: {epochs: 1, batch_size: 8, lr: 0.05}
  model: {name: logistic}
  metrics: [acc@4, rounds_to@30]
datasets:
  - name: synthetic
    params: {num_users: 6, dim: 10, num_classes: 3, max_samples: 60}
    split: {kind: natural}
methods:
  - fedavg
  - preset: fedacg
    grid: {server.lam: [0.8, 0.9]}
grid:
  local.weight_decay: [0.0005, 0.001]
"""
# Several long overrides: before, their setting column alone filled 100 columns and no number showed.
SETS = [
    "--set", "participation.rate=0.34", "--set", "local.lr_decay=0.995", "--set", "local.batch_size=20",
    "--set", "local.clip_norm=5", "--set", "local.intra_round_decay=true",
]  # fmt: skip
HEADLINE = "acc@4 (EMA, %)"


def fedbench(*args: str, cwd: Path, columns: int | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env |= {"PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"} | ({"COLUMNS": str(columns)} if columns else {})
    command = [sys.executable, "-m", "benchmark", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def table_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line[:1] in "┏┃┡│└"]


def header_text(out: str) -> str:
    """The first table's header cells joined back into one line per column (rich wraps them)."""
    lines = [line for line in out.split("┡")[0].splitlines() if line.startswith("┃")]
    cells = [[c.strip() for c in line.strip("┃").split("┃")] for line in lines]
    return " | ".join(" ".join(w for w in words if w) for words in zip(*cells))


def accuracies(results: Path) -> dict[str, str]:
    """Each method's acc@4 (its final EMA accuracy: 4 rounds) as the table prints it, one per setting."""
    found = {}
    for summary in (results / "jobs").glob("*/summary.json"):
        config = json.loads((summary.parent / "config.json").read_text())
        label = config["method"]["label"].split("[")[0]
        value = f"{json.loads(summary.read_text())['final_ema_acc']:.2f}"
        found.setdefault(label, set()).add(value)
    return found


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> Path:
    cwd = tmp_path_factory.mktemp("widths")
    (cwd / "widths.yaml").write_text(SUITE)
    done = fedbench("run", "widths.yaml", "--no-tracking", "-q", *SETS, cwd=cwd, columns=80)
    assert done.returncode == 0, done.stderr
    return cwd


@pytest.mark.parametrize("width", [80, 200])
@pytest.mark.parametrize("command", ["run", "report"])
def test_long_overrides_leave_the_numbers_in_the_table(ran, command, width):
    done = fedbench(command, "widths.yaml", "--no-tracking", *SETS, cwd=ran, columns=width)
    assert done.returncode == 0, done.stderr
    lines = table_lines(done.stdout)
    assert lines and max(map(len, lines)) <= min(width, 100)
    assert HEADLINE in header_text(done.stdout)
    main = done.stdout.split("┡")[1].split("└")[0]
    for method, values in accuracies(ran / "results").items():
        row = next(line for line in main.splitlines() if line.startswith(f"│ {method} "))
        assert any(v in row for v in values), (method, values, row)
    caption = " ".join(done.stdout.split())
    assert "every row ran participation.rate=0.34 local.lr_decay=0.995 local.batch_size=20" in caption
    assert re.search(r"│ FedACG │ server.lam=0.[89] ", main)  # what tells the rows apart stays in the column


def test_a_wide_setting_column_wraps_to_leave_room_for_the_numbers(ran):
    """The sensitivity table's setting column (method, grid point, suite grid) narrows until a metric fits."""
    done = fedbench("report", "widths.yaml", "--no-tracking", *SETS, cwd=ran, columns=40)
    assert done.returncode == 0, done.stderr
    sensitivity = "┏" + done.stdout.split("┏")[2]
    assert max(map(len, table_lines(sensitivity))) <= 40
    assert header_text(sensitivity).startswith("setting | chosen | n | acc@4")
    rows = sensitivity.split("┡")[1].split("└")[0].splitlines()
    assert any(row.startswith("│ FedACG[lam=0.8] ") for row in rows)  # the label wraps after the method
    assert not any("local.weight_decay=0.0005" in row for row in rows)  # and folds the long setting
    assert sum(bool(re.search(r"│\s+\d+\.\d\d │$", row)) for row in rows) == 6  # every setting's number


def test_a_terminal_80_wide_shows_the_numbers(ran):
    """stdout a terminal (a pty 80 columns wide, no $COLUMNS): the console's own width."""
    parent, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 80, 0, 0))
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"PYTHONPATH": str(REPO), "TERM": "dumb"}
    command = [sys.executable, "-m", "benchmark", "report", "widths.yaml", "--no-tracking", *SETS]
    proc = subprocess.Popen(command, cwd=ran, env=env, stdout=child, stderr=subprocess.PIPE)
    os.close(child)
    chunks = []
    while True:
        try:
            chunk = os.read(parent, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(parent)
    assert proc.wait(timeout=300) == 0, proc.stderr.read()
    out = re.sub(r"\x1b\[[0-9;]*m", "", b"".join(chunks).decode().replace("\r\n", "\n"))
    lines = table_lines(out)
    assert lines and max(map(len, lines)) <= 80
    assert HEADLINE in header_text(out)


def test_run_picks_columns_like_report(ran):
    done = fedbench("run", "widths.yaml", "--no-tracking", *SETS, "--columns", "wall_s", cwd=ran, columns=200)
    assert done.returncode == 0, done.stderr
    assert "wall time (s)" in header_text(done.stdout) and HEADLINE not in header_text(done.stdout)
    done = fedbench("run", "widths.yaml", "--no-tracking", *SETS, "--wide", cwd=ran, columns=80)
    assert done.returncode == 0 and "not shown" not in done.stdout
    assert "wall time (s)" in header_text(done.stdout) and HEADLINE in header_text(done.stdout)


def test_run_refuses_an_unknown_column_before_any_job_runs(tmp_path):
    (tmp_path / "widths.yaml").write_text(SUITE)
    done = fedbench("run", "widths.yaml", "--no-tracking", "--columns", "acc@4,acc@5", cwd=tmp_path)
    err = " ".join(done.stderr.split())
    assert done.returncode == 2 and "--columns acc@5: no such column" in err and "acc@4" in err, err
    assert "Traceback" not in done.stderr and not (tmp_path / "results").exists()
    done = fedbench("run", "widths.yaml", "--no-tracking", "--columns", "wall_s", "--wide", cwd=tmp_path)
    assert done.returncode == 2 and "use one" in done.stderr and not (tmp_path / "results").exists()
