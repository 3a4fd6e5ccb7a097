"""What the FedAc protocol's batches cost on this machine, for `plan --budget`: the real engine
(the protocol's own `run_batch`) timed on each batch's shape for 1 round and for enough rounds to
outweigh its set-up and evaluation, and scaled by the batch's rounds and evaluations.

A batch's rounds all do the same work (M workers, K steps of b examples, B jobs side by side), so
its time is R·round + E·evaluation: the longer run less the 1-round one gives a round, the rest of
the 1-round run an evaluation (with the batch's own set-up, which it pays once). A round is a fixed
part (the broadcast, the averaging, numpy's overhead a step) plus M workers' part, told apart by timing
it again with one worker; K local steps of many workers are timed on a few of them (the kernel runs one
worker after another). Shapes are timed largest first (they weigh most) while the time allows; a shape
left over is scaled from the timed shape of its kind (K local steps, or one step per round) closest in
work per round, M·K·b·⌈B/8⌉ (its jobs run in vectors of 8): the workers' part by M and each worker's
work, the fixed part of K local steps by each worker's work too, its evaluation by B; one shape of each
kind is timed first. Before any shape, each path the batches take (one step a round, numpy local steps,
the numba kernel) is warmed once on a one-job, one-worker, one-round batch: what the run pays once a
process (the data, F*, numba's load, the rows' sparse form) is its start-up, counted once, and kept out
of every shape's time and so out of what is scaled across shapes. A shape is timed on the path
its whole batch takes (numpy_round.prefers_numpy: numpy or numba), not the one its cut-down copy would.
Every time is CPU seconds of the engine's one thread.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

from benchmark.protocols.fedac.jobs import one_step_rounds
from benchmark.protocols.fedac.numpy_round import pinned, prefers_numpy
from benchmark.run.protocols import BatchCosts, Protocol
from benchmark.suite.expand import Job


@dataclass(frozen=True)
class Shape:
    """What one round of a batch costs depends on: its kind, workers, steps, batch size, jobs."""

    one_step: bool
    workers: int
    steps: int
    batch_size: int
    jobs: int

    @property
    def work(self) -> float:
        lanes = 1 if self.one_step else math.ceil(self.jobs / 8)
        return self.workers * self.steps * self.batch_size * lanes


@dataclass(frozen=True)
class Timed:
    """A batch shape's times: the part of a round that does not grow with its workers (the broadcast, the
    averaging, numpy's overhead a step), each worker's part of a round, and an evaluation (with the set-up)."""

    fixed_s: float
    worker_s: float
    eval_s: float

    def round_s(self, workers: int) -> float:
        return self.fixed_s + workers * self.worker_s


def shape_of(jobs: list[Job]) -> Shape:
    c = jobs[0].config
    return Shape(one_step_rounds(c), c.num_clients, c.local.steps, c.local.batch_size, len(jobs))


def evaluations(config) -> int:
    return sum(config.evaluates(r) for r in range(1, config.rounds + 1))


def shortened(jobs: list[Job], rounds: int, workers: int | None = None) -> list[Job]:
    """`jobs` cut to `rounds` rounds, evaluated once, at the end (and to `workers` workers)."""
    update = {"rounds": rounds, "eval_every": rounds, **({"num_clients": workers} if workers else {})}
    return [replace(j, config=j.config.model_copy(update=update)) for j in jobs]


def seconds(protocol: Protocol, jobs: list[Job]) -> float:
    """CPU seconds of computing `jobs`' batch: the engine runs on one thread, and CPU time, unlike the
    wall clock, does not swing with the machine's load (the budget turns it into wall time by the load)."""
    start = time.process_time()
    protocol.run_batch(jobs)
    return time.process_time() - start


def time_shape(protocol: Protocol, jobs: list[Job]) -> Timed:
    """A round and an evaluation of `jobs`' batch; K local steps of many workers are timed on at most
    WORKER_STEPS of them. The round is timed again with one worker: the difference is the workers' part,
    what is left the round's fixed part, so that only the workers' part is scaled by M (and by work to
    other shapes). On the authors' stream K local steps are timed as AUTHORS_STEPS_TIMED of them and scaled
    by K: their steps go one by one, value by value (an M = 8,192, K = 512 round took 5 CPU-s to time)."""
    shape, authors = shape_of(jobs), on_authors_stream(jobs[0].config)
    steps = shape.steps
    if authors and not shape.one_step:
        steps = min(steps, AUTHORS_STEPS_TIMED)
    workers = shape.workers
    if authors:
        workers = min(workers, max(1, AUTHORS_WORKER_STEPS // (steps * shape.batch_size)))
    elif not shape.one_step:
        workers = min(workers, max(1, WORKER_STEPS // (steps * shape.batch_size)))
    timed_jobs = jobs if steps == shape.steps else with_steps(jobs, steps)
    with pinned(prefers_numpy(jobs[0].config)):
        round_s, eval_s = round_and_rest(protocol, timed_jobs, workers)
        # on the authors' stream every part of a round goes worker by worker (their pool code, or one product
        # over all workers' rows): no fixed part to tell apart, and a one-worker round too short to time cheaply
        split = workers > 1 and not authors
        alone = round_and_rest(protocol, timed_jobs, 1)[0] if split else 0.0
    per_step = shape.steps / steps
    if not 0 < alone < round_s:  # one worker timed, or a busy machine blurred the two: all the workers'
        return Timed(0.0, per_step * round_s / workers, eval_s)
    worker_s = (round_s - alone) / (workers - 1)
    return Timed(per_step * (alone - worker_s), per_step * worker_s, eval_s)


def with_steps(jobs: list[Job], steps: int) -> list[Job]:
    """`jobs` taking `steps` local steps a round (at least 2: one step a round is another path)."""
    local = jobs[0].config.local.model_copy(update={"steps": max(2, steps)})
    return [replace(j, config=j.config.model_copy(update={"local": local})) for j in jobs]


def on_authors_stream(config) -> bool:
    """The authors' stream (split.samples: authors_numpy) draws and computes every worker's examples of a
    one-step round as they do, in one product over M·K·b rows, so its round grows with M as K local steps
    do and is timed on WORKER_STEPS of them too (an M = 8,192, K = 512 round: 4 CPU-s whole). fedbench's own
    one-step rounds are timed whole: above 80 % of a9a drawn they score each distinct row once, which a
    cut-down copy would not show."""
    return config.dataset.split.samples == "authors_numpy"


def round_and_rest(protocol: Protocol, jobs: list[Job], workers: int) -> tuple[float, float]:
    """A round of `jobs`' batch cut to `workers` workers, and the rest of a one-round run (its set-up and
    evaluation): one round, then 4x as many until the extra rounds take ROUNDS_TIMED_S (the difference
    is theirs)."""
    # the second one-round run: the first may pay what this shape's batches pay once a process (its positions,
    # its dtypes' compiled code), and then the longer run minus it reads short, and the rounds grow 4x until
    # they outweigh it (the authors' replay suite timed 1,388 rounds for 8 CPU-s)
    one = min(seconds(protocol, shortened(jobs, 1, workers)) for _ in range(2))
    rounds, took = 1, one
    while rounds < jobs[0].config.rounds and took - one < ROUNDS_TIMED_S:
        rounds = min(jobs[0].config.rounds, 4 * rounds)
        took = seconds(protocol, shortened(jobs, rounds, workers))
    # a busy machine can make the longer run look shorter: then charge its mean round to both
    round_s = (took - one) / (rounds - 1) if rounds > 1 and took > one else took / rounds
    return round_s, max(one - round_s, 0.0)


ROUNDS_TIMED_S = 0.1  # the longer run of a shape outlasts its one-round run by this
WORKER_STEPS = 2**14  # worker-steps a timed round of K local steps is cut to (M=1024, K=256: 16 workers)
AUTHORS_STEPS_TIMED = 8  # local steps a timed round on the authors' stream is cut to
AUTHORS_WORKER_STEPS = 2**10  # and its worker-steps (their arithmetic costs ~2 µs a worker-step and job)


def batch_costs(protocol: Protocol, batches: list[list[Job]], time_limit_s: float) -> BatchCosts:
    startup = warm_up(protocol, batches)
    start = time.process_time()  # the limit is CPU time too: under load, wall time would time one shape
    shapes = {shape_of(b): b for b in batches}
    timed: dict[Shape, Timed] = {}
    kinds = {s.one_step for s in shapes}
    for shape in in_timing_order(shapes):
        if {s.one_step for s in timed} == kinds and time.process_time() - start > time_limit_s:
            break  # (a shape of each kind is timed whatever the limit)
        timed[shape] = time_shape(protocol, shapes[shape])
    out = []
    for batch in batches:
        shape = shape_of(batch)
        got = timed.get(shape) or scaled(shape, timed)
        out.append(batch[0].config.rounds * got.round_s(shape.workers) + evaluations(batch[0].config) * got.eval_s)
    assumed = [
        f"FedAc batched engine: {len(timed)} of {len(shapes)} batch shapes timed on the real engine "
        + (
            "(the rest scaled by M and K·b·⌈B/8⌉ a worker from the nearest timed one)"
            if len(timed) < len(shapes)
            else ""
        ),
        f"FedAc engine start-up (data, F*, each path's one-off: {', '.join(paths_of(batches))}): {startup:.1f} CPU-s",
    ]
    return BatchCosts(out, startup, [a.strip() for a in assumed])


def path_of(config) -> str:
    """Which code computes a batch's rounds: each pays its one-off costs once a process."""
    if one_step_rounds(config):
        return "one step"
    return "numpy local steps" if prefers_numpy(config) else "numba kernel"


def paths_of(batches: list[list[Job]]) -> dict[str, list[Job]]:
    return {path_of(b[0].config): b for b in reversed(batches)}  # (each path's first batch)


def warm_up(protocol: Protocol, batches: list[list[Job]]) -> float:
    """The run's one-off costs, paid once a process: the data, F*, and each path its batches take (numba's
    load, the rows' sparse form), each path warmed on a one-job, one-worker, one-round copy of its first batch.
    Timed before any shape, so that no shape's time carries them and scaling spreads none to other shapes."""
    took = 0.0
    for path, batch in paths_of(batches).items():
        with pinned(path == "numpy local steps"):
            took += seconds(protocol, shortened(batch[:1], 1, workers=1))
    return took


def in_timing_order(shapes: dict[Shape, list[Job]]) -> list[Shape]:
    """The shape of each kind (K local steps, one step a round) that weighs most in the run (its work a
    round times its rounds), then the rest by weight: scaling across kinds is the worst guess."""
    by_weight = sorted(shapes, key=lambda s: -s.work * shapes[s][0].config.rounds)
    first = [next(s for s in by_weight if s.one_step == kind) for kind in {s.one_step for s in by_weight}]
    return first + [s for s in by_weight if s not in first]


def scaled(shape: Shape, timed: dict[Shape, Timed]) -> Timed:
    """A shape's round and evaluation scaled from the timed shape of its kind nearest in work per round:
    the workers' part by each worker's work (K·b·⌈B/8⌉), the fixed part of K local steps by it too (a
    step's overhead), of one step a round not at all, the evaluation by B."""
    same = [s for s in timed if s.one_step == shape.one_step] or list(timed)
    near = min(same, key=lambda s: abs(math.log(s.work / shape.work)))
    each = (shape.work / shape.workers) / (near.work / near.workers)
    t = timed[near]
    return Timed(t.fixed_s * (1 if shape.one_step else each), t.worker_s * each, t.eval_s * shape.jobs / near.jobs)
