"""The measurements behind `plan --budget` (plan/budget.py): a job's set-up, step and evaluation
times on real rounds of the job, what a run pays once before its first job, and the machine's load.

A job is timed as the run runs it: by the job runner (run/job_runner.py), into a scratch folder,
its real simulation at the thread count the run uses (run/threads.py), its own participants, its
evaluations and the runner's own work each round (metrics, heartbeat, checkpoints). The first round
is a warm-up (allocator, kernels), then rounds are timed until TIME_LIMIT_S (at least 2, at most 9;
none when the first took longer than TIME_LIMIT_S, which is then the rate), each round's training
over its client-steps giving a rate: their median is the estimate, their spread its range. What
follows a round's training is the runner's work, plus an evaluation on evaluated rounds. A first
round still training after LONG_ROUND_S (a ResNet round of 250 steps takes minutes on a CPU) is
stopped at its next progress report (engine/round_tally.py): its rate is read between the first
report and that one (or over its steps so far, when one report came after LONG_ROUND_S), and its
evaluation is guessed as a forward pass over the test set (said so).
"""

from __future__ import annotations

import math
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

TIME_LIMIT_S = 0.5  # timed rounds per job kind, past the first two
LONG_ROUND_S = 1.5  # a first round still training past this is stopped; its rate is read from its progress
MAX_ROUNDS = 9


@dataclass(frozen=True)
class Rates:
    """One job kind's measured times: set-up once per job (until its first round starts), client
    steps (median, fastest and slowest of the timed rounds, seconds a step), one evaluation, and
    the job runner's own work each round (metrics, heartbeat, checkpoints)."""

    setup_s: float
    step_s: float
    fastest_step_s: float
    slowest_step_s: float
    eval_s: float
    round_s: float
    rounds_timed: float = 1.0  # 0: a first round too long to finish, cut (its evaluation guessed)


class Enough(Exception):
    """Raised from a round's end to stop a timed job."""


def measure(job, device: str, steps_in_round, clock=time.perf_counter) -> Rates:
    """`job`'s rates on `device`, run by the job runner into a scratch folder until TIME_LIMIT_S;
    `steps_in_round(t)` is its client-steps in round t. `clock` says what a second is: wall time, or this
    process's CPU time (`time.process_time`, for a job at one thread: the caller makes it wall time at a
    thread's share of a core, steadier on a shared machine than the wall time of a few rounds)."""
    import tempfile

    import torch

    from benchmark.engine.setup import build_simulation
    from benchmark.run.callbacks import RoundCallback
    from benchmark.run.job_runner import run_job
    from benchmark.store.job_dir import JobDir
    from benchmark.store.layout import Store

    start = clock()
    sim = build_simulation(job.config, device)
    sync = torch.cuda.synchronize if sim.setup.device.type == "cuda" else (lambda: None)
    trained: list[float] = []  # each round's training (Simulation.run_round)
    ended: list[float] = [start]  # each round's end, after its evaluation and the runner's work
    cut: list[float] = []  # a long first round's seconds a step, read from its progress (then it is stopped)
    train_round = sim.run_round

    def timed_round(t, on_clients=None):
        sync()
        t0, wall0 = clock(), time.perf_counter()
        if not trained:
            ended[0] = t0  # the set-up ends where the first round starts
        reports: list[tuple[int, float]] = []

        def listen(done):  # after each client (chunk), and every second within one (engine/round_tally.py)
            if on_clients is not None:
                on_clients(done)
            reports.append((done.steps, done.seconds))
            if done.seconds < LONG_ROUND_S or not done.steps:
                return
            (steps0, seconds0), (steps1, seconds1) = reports[0], reports[-1]
            # between two reports (past the first step's warm-up), or over the first steps when they
            # alone outlast LONG_ROUND_S (a large model's step under load: another would take as long)
            per_step = (seconds1 - seconds0) / (steps1 - steps0) if steps1 > steps0 else seconds1 / steps1
            cut.append(per_step * (clock() - t0) / max(time.perf_counter() - wall0, 1e-9))  # in the clock's seconds
            raise Enough

        loss = train_round(t, listen if not trained else on_clients)
        sync()
        trained.append(clock() - t0)
        ended.append(clock())
        return loss

    class Stamp(RoundCallback):
        def on_round(self, round_: int) -> None:
            ended[-1] = clock()
            timed = len(trained) - 1  # rounds after the first (its warm-up)
            long_first = trained[0] > TIME_LIMIT_S  # then it is rate enough
            spent = sum(trained[1:])
            if long_first or (timed >= 2 and (timed >= MAX_ROUNDS or spent >= TIME_LIMIT_S)):
                raise Enough

    sim.run_round = timed_round
    with tempfile.TemporaryDirectory() as scratch:
        try:
            run_job(
                job,
                "budget",
                JobDir(Store(Path(scratch)), job.id),
                device,
                simulation_for=lambda _: sim,
                callbacks=[Stamp()],
            )
        except Enough:
            pass
    if cut:  # no whole round: its steps at the rate read, its evaluation guessed, the runner's work not seen
        return Rates(ended[0] - start, cut[0], cut[0], cut[0], evaluation_guess(sim, cut[0]), 0.0, 0.0)
    rounds = range(1, len(trained)) if len(trained) > 1 else range(1)  # the first is a warm-up
    per_step = [trained[t] / max(steps_in_round(t), 1) for t in rounds]
    after = {t: ended[t + 1] - ended[t] - trained[t] for t in rounds}  # evaluation and the runner's work
    plain = [a for t, a in after.items() if not job.config.evaluates(t + 1)]
    evaluated = [a for t, a in after.items() if job.config.evaluates(t + 1)]
    round_s = statistics.median(plain) if plain else 0.0
    if evaluated:
        eval_s = max(statistics.median(evaluated) - round_s, 0.0)
    else:
        t0 = clock()
        evaluate(sim)
        eval_s = clock() - t0
    setup_s = ended[0] - start
    timed = float(len(rounds))
    return Rates(setup_s, statistics.median(per_step), min(per_step), max(per_step), eval_s, round_s, timed)


def evaluation_guess(sim, step_s: float) -> float:
    """An evaluation of a model whose round was too long to finish timing: a forward pass over the test
    set, a third of a training step (forward and backward) per batch of the job's size."""
    batches = math.ceil(len(sim.setup.data.src.test_y) / sim.job.local.batch_size)
    return batches * step_s / 3


def evaluate(sim) -> None:
    """What the run computes at an evaluated round (engine/simulation.py's `run`)."""
    sim.evaluate()
    if sim.setup.data.validation is not None:
        sim.evaluate_validation()
    if sim.job.suboptimality:
        sim.objective.suboptimality(sim.eval_params())


def run_imports_seconds(torch: bool = True) -> float:
    """What `run` imports beyond `plan` (torch where a job trains with it, the job runner, the report's
    registries), timed now (nothing if this process imported it already). With `process_age()` (the
    interpreter, CLI, the suite's loading and expansion, which `plan` did as `run` does): what a run
    pays before its first job. A run whose every job a protocol batches on numpy (FedAc) imports no
    torch, and this does not either: 1-2 s of a first `plan --budget`."""
    import importlib

    start = time.perf_counter()
    modules = ("torch",) if torch else ()
    for module in (*modules, "benchmark.run.job_runner", "benchmark.run.executor", "benchmark.commands.output"):
        importlib.import_module(module)
    from benchmark.report.protocol_sections import SECTIONS
    from benchmark.run.protocols import PROTOCOLS

    PROTOCOLS.names(), SECTIONS.names()  # the run's report reads both registries
    return time.perf_counter() - start


def data_load_seconds(config) -> float:
    """Seconds to load, check and fingerprint the dataset `config` trains on, as the run does once per
    process (engine/sources.py) before its first job of that data can start; nothing if this process
    loaded it already. quickstart's synthetic data: 1.5 CPU-s a run paid that the estimate left out."""
    from benchmark.engine.sources import data_fingerprint, load_source

    start = time.perf_counter()
    load_source(config)
    data_fingerprint(config)
    return time.perf_counter() - start


def share_got(work):
    """(`work()`'s result, the share of a core this process got while doing it: its CPU time over its
    wall time, at most 1). The load average cannot say it: it counts a nice-19 process (this machine's
    background replay) as a full competitor, which takes next to nothing from a nice-0 run; a budget
    made from it put ci at 35 s and fedac_small at 840 s for runs of 12 and 41 s."""
    cpu, wall = time.process_time(), time.perf_counter()
    result = work()
    return result, min(1.0, (time.process_time() - cpu) / max(time.perf_counter() - wall, 1e-9))


PROBE_S = 0.25  # the share probe's length: dozens of the scheduler's time slices


def probe_share(seconds: float = PROBE_S) -> float:
    """The share of a core one thread of this process gets now: the CPU time of a `seconds`-long spin over
    its wall time. The load average lags (a load that began seconds ago shows in the 1-minute average
    a minute later; a memoised budget made then put a run at 104 s that took 528 s beside two busy loops
    started just before it) and counts a nice-19 process as a whole competitor."""

    def spin() -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass

    return max(share_got(spin)[1], 1e-3)


def process_age() -> float:
    """Seconds since this process started (Linux /proc; 0 where it cannot be read)."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    return max(uptime - ticks / os.sysconf("SC_CLK_TCK"), 0.0)


@dataclass(frozen=True)
class Load:
    """Load averages over 1, 5 and 15 minutes, the cores this process may use and, where probed, the share
    of a core a thread of this process got just now (probe_share)."""

    averages: tuple[float, float, float]
    cores: int
    probed: float | None = None

    @classmethod
    def now(cls, probe: bool = False) -> Load:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        averages = tuple(os.getloadavg()) if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
        return cls(averages, cores, probe_share() if probe else None)

    def share(self, load: float) -> float:
        """The part of a core the run's thread gets beside `load` other runnable threads: it is one more."""
        return min(1.0, self.cores / (max(load, 0.0) + 1.0))

    @property
    def share_now(self) -> float:
        """A thread's share of a core now: probed where it was, else from the last minute's load average."""
        return self.probed if self.probed is not None else self.share(self.averages[0])

    def factors(self) -> tuple[float, float]:
        """How much faster and slower the same work runs if the load moves from its last minute's
        to its quietest and busiest of the last 15 minutes: (≤ 1, ≥ 1)."""
        now = self.share(self.averages[0])
        return now / self.share(min(self.averages)), now / self.share(max(self.averages))

    @property
    def loaded(self) -> bool:
        return max(self.averages) >= self.cores / 2

    def __str__(self) -> str:
        probed = "" if self.probed is None else f"; a thread gets {self.probed:.2f} of a core now (probed)"
        return f"load averages {' / '.join(f'{a:.1f}' for a in self.averages)} (1, 5, 15 min) on {self.cores} cores{probed}"
