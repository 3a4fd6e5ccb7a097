"""`fedbench plan --budget`: exact client-steps and samples, and the run's time from measured rates."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import pytest
import torch

from benchmark.cli import main
from benchmark.engine.setup import federated_data
from benchmark.plan import budget
from benchmark.plan.budget import client_cost, estimate, evaluations, job_cost
from benchmark.plan.budget_timing import Load, Rates, process_age
from benchmark.suite.expand import load_jobs
from tests.fedtest import tiny_suite, write_suite


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """Each test measures afresh: the budget's memo (plan/budget_memo.py) lives in the fedbench cache."""
    monkeypatch.setenv("FEDBENCH_CACHE", str(tmp_path / "cache"))


def test_one_client_costs_follow_the_batch_plan():
    class Local:
        epochs, steps, batch_size = 2, None, 8

    assert client_cost(20, Local) == (2 * 3, 40)  # ⌈20/8⌉ = 3 batches an epoch, every example once an epoch
    assert client_cost(5, Local) == (2 * 1, 10)  # b = min(B, n): one batch of 5
    Local.epochs, Local.steps = None, 3
    assert client_cost(20, Local) == (3, 24)  # K full batches of b


def test_fixed_steps_cost_is_clients_per_round_x_steps_x_rounds(tmp_path):
    raw = tiny_suite(methods=["fedavg"])
    raw["defaults"]["local"] = {"steps": 3, "batch_size": 8, "lr": 0.05}
    _, (job,) = load_jobs(write_suite(tmp_path, raw))
    assert min(len(c) for c in federated_data(job.config).clients) >= 8
    assert job_cost(job) == (4 * 3 * 3, 4 * 3 * 3 * 8)  # 4 rounds x 3 of 6 clients x 3 steps (x 8 samples)


def test_full_participation_epochs_cost_sums_every_client(tmp_path):
    raw = tiny_suite(methods=["fedavg"])
    raw["defaults"].update(participation={"rate": 1.0}, local={"epochs": 2, "batch_size": 8, "lr": 0.05})
    _, (job,) = load_jobs(write_suite(tmp_path, raw))
    sizes = [len(c) for c in federated_data(job.config).clients]
    steps = 4 * sum(2 * math.ceil(n / min(8, n)) for n in sizes)
    assert job_cost(job) == (steps, 4 * 2 * sum(sizes))


SUITE = """
name: timed
defaults:
  rounds: 4
  eval_every: 2
  num_clients: 6
  participation: {rate: 0.5}
  local: {epochs: 1, batch_size: 8, lr: 0.05}
  model: {name: logistic}
  metrics: [acc@2]
datasets:
  - name: synthetic
    params: {num_users: 6, dim: 10, num_classes: 3, max_samples: 60}
    split: {kind: natural}
methods: [fedavg, fedacg]
"""


def written(tmp_path, text: str):
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    return path


def test_budget_times_jobs_at_a_measured_rate(tmp_path, capsys):
    suite = written(tmp_path, SUITE)
    _, jobs = load_jobs(suite)
    found = estimate(jobs, "cpu")
    for b in found.jobs.values():
        assert 0 < float(b.ms_per_step) < 1000 and b.seconds > 0
    assert found.low <= found.seconds <= found.high
    assert main(["plan", str(suite), "--budget", "--device", "cpu"]) == 0
    shown = capsys.readouterr().out
    assert "compute budget of 2 jobs" in shown and "total" in shown and "estimated run time:" in shown
    assert "assumed:" in shown and "load averages" in shown and "ms/step" in shown


def test_the_run_time_adds_start_up_set_up_steps_and_every_evaluation(tmp_path, monkeypatch):
    """With the measurements fixed, the estimate is their sum over what the run does: start-up once
    (the process, its imports, loading the data), and per job its set-up, its client-steps, its
    evaluations (rounds 2 and 4 of 4: eval_every 2) and the runner's work each of its 4 rounds."""
    rates = Rates(setup_s=0.5, step_s=0.01, fastest_step_s=0.005, slowest_step_s=0.02, eval_s=0.25, round_s=0.125)
    monkeypatch.setattr(budget, "measure", lambda job, device, steps_in_round, clock=None: rates)
    monkeypatch.setattr(budget, "process_age", lambda: 1.5)
    monkeypatch.setattr(budget, "run_imports_seconds", lambda torch: 1.0)
    monkeypatch.setattr(budget, "data_load_seconds", lambda config: 0.5)  # one dataset: once
    monkeypatch.setattr(budget, "share_got", lambda work: (work(), 1.0))  # timed on a core of its own
    monkeypatch.setattr(budget.Load, "now", classmethod(lambda cls, probe=False: Load((0.1, 0.1, 0.1), 2)))
    _, jobs = load_jobs(written(tmp_path, SUITE))
    assert [evaluations(j.config) for j in jobs] == [2, 2]
    found = estimate(jobs, "cpu")
    steps = [job_cost(j)[0] for j in jobs]
    assert found.seconds == pytest.approx(3.0 + sum(0.5 + 2 * 0.25 + 4 * 0.125 + 0.01 * s for s in steps))
    assert found.low == pytest.approx(3.0 + sum(0.5 + 2 * 0.25 + 4 * 0.125 + 0.005 * s for s in steps))
    assert found.high == pytest.approx(3.0 + sum(0.5 + 2 * 0.25 + 4 * 0.125 + 0.02 * s for s in steps))


def test_a_one_thread_job_is_timed_in_cpu_seconds_made_wall_at_the_share_of_a_core_it_got(tmp_path, monkeypatch):
    """At one thread a job's rounds are timed in this process's CPU seconds and divided by the share of a
    core the process got while timing them (its CPU time over its wall time), not by one guessed from the
    load average (which counts a nice-19 process as a whole competitor): the same CPU time is twice the
    wall time at a share of 0.5. A job given more threads is timed in wall seconds."""
    import time

    from benchmark.run import threads

    rates = Rates(setup_s=0.5, step_s=0.01, fastest_step_s=0.005, slowest_step_s=0.02, eval_s=0.25, round_s=0.125)
    clocks = []
    monkeypatch.setattr(
        budget, "measure", lambda job, device, steps, clock=time.perf_counter: clocks.append(clock) or rates
    )
    for name in ("run_imports_seconds", "data_load_seconds"):
        monkeypatch.setattr(budget, name, lambda _: 0.0)
    monkeypatch.setattr(budget, "process_age", lambda: 0.0)
    monkeypatch.setattr(budget.Load, "now", classmethod(lambda cls, probe=False: Load((8.0, 8.0, 8.0), 2)))  # says 0.25
    _, jobs = load_jobs(written(tmp_path, SUITE))
    found = {}
    for got in (1.0, 0.5):
        monkeypatch.setattr(budget, "share_got", lambda work, got=got: (work(), got))
        found[got] = estimate(jobs, "cpu", remeasure=True)
    assert found[0.5].seconds == pytest.approx(2 * found[1.0].seconds) and found[1.0].seconds > 0
    assert clocks == [time.process_time] * 4  # two job kinds, twice
    said = [line for line in found[0.5].assumed if "ms/step" in line]
    assert len(said) == 2
    assert all("CPU time / 0.50, the share of a core this process got while timed" in line for line in said)
    threads.request(2)
    try:
        more = estimate(jobs, "cpu", remeasure=True)
    finally:
        threads.request(None)
    assert clocks[4:] == [time.perf_counter] * 2 and more.seconds == pytest.approx(found[1.0].seconds)
    assert not any("CPU time /" in line for line in more.assumed)


def test_a_load_that_moved_widens_the_range_and_a_quiet_one_does_not():
    assert Load((0.3, 0.5, 0.2), 2).factors() == (1.0, 1.0)  # with the run's thread under 2: every thread runs
    # measured at 8 on 2 cores (the run's thread gets 2 / 9 of a core); it was 1 (2 / 2)
    quieter, busier = Load((8.0, 4.0, 1.0), 2).factors()
    assert quieter == pytest.approx(2 / 9) and busier == 1.0
    quieter, busier = Load((2.0, 6.0, 10.0), 2).factors()  # measured at 2 (2 / 3 of a core); it was 10 (2 / 11)
    assert quieter == 1.0 and busier == pytest.approx(11 / 3)
    assert Load((8.0, 4.0, 1.0), 2).loaded and not Load((0.3, 0.5, 0.2), 2).loaded


def test_the_budget_times_at_the_thread_count_the_run_is_given(tmp_path, capsys):
    from benchmark.run import threads

    before = torch.get_num_threads()
    try:
        assert main(["plan", str(written(tmp_path, SUITE)), "--budget", "--device", "cpu", "--threads", "2"]) == 0
        assert torch.get_num_threads() == 2
        assert "2 thread(s), --threads" in capsys.readouterr().out
        threads.request(None)
        assert main(["plan", str(written(tmp_path, SUITE)), "--budget", "--device", "cpu"]) == 0
        assert torch.get_num_threads() == 1
        assert "1 thread(s), default" in capsys.readouterr().out
    finally:
        threads.request(None)
        torch.set_num_threads(before)


def test_the_start_up_counts_this_process_s_age():
    assert process_age() > 0  # the interpreter and pytest started before this line


FEDAC_SUITE = """
name: fedac-budget
defaults:
  rounds: 8
  eval_every: 4
  num_clients: 4
  participation: {rate: 1.0}
  local: {steps: 3, batch_size: 2, weight_decay: 0.01, clip_norm: null}
  model: {name: binary_logistic, init: normal}
  suboptimality: true
datasets:
  - name: synthetic
    params: {num_users: 5, dim: 6, num_classes: 2, max_samples: 40}
    split: {kind: shared}
methods: [fedac1, fedavg, mbsgd]
grid:
  local.lr: [0.01, 0.1]
"""


def test_batched_protocol_jobs_are_timed_on_their_engine(tmp_path, capsys):
    suite = written(tmp_path, FEDAC_SUITE)
    _, jobs = load_jobs(suite)
    found = estimate(jobs, "cpu")
    assert {b.ms_per_step for b in found.jobs.values()} == {"batched"}
    assert all(b.seconds > 0 for b in found.jobs.values())
    assert any("FedAc batched engine: 2 of 2 batch shapes timed" in a for a in found.assumed)
    assert any("protocol fedac: 1 thread(s)" in a for a in found.assumed)
    assert any("the job runner writes each job's replay in" in a for a in found.assumed)
    assert main(["plan", str(suite), "--budget", "--device", "cpu"]) == 0
    assert "batched" in capsys.readouterr().out


def test_a_protocol_s_cpu_seconds_are_made_wall_at_the_share_it_got_when_timed_now(tmp_path, monkeypatch):
    """Timed now, a protocol's batches' CPU seconds are divided by the share of a core this process got
    while timing them; memoised, by a thread's share now (here from the load average: cores / (load + 1))."""
    _, jobs = load_jobs(written(tmp_path, FEDAC_SUITE))
    monkeypatch.setattr(
        budget.Load, "now", classmethod(lambda cls, probe=False: Load((1.0, 1.0, 1.0), 2))
    )  # a share of 1
    monkeypatch.setattr(budget, "share_got", lambda work: (work(), 0.5))
    now = estimate(jobs, "cpu", remeasure=True)
    assert "protocol fedac: CPU time / 0.50, the share of a core this process got while timed" in now.assumed
    again = estimate(jobs, "cpu")  # the same CPU seconds, memoised: at this load's share, 1
    assert "protocol fedac: CPU time / 1.00, a thread's share of a core now (probed)" in again.assumed
    for job_id, budget_now in now.jobs.items():
        assert again.jobs[job_id].seconds == pytest.approx(budget_now.seconds / 2)


class ClockedProtocol:
    """A protocol whose batches take, on a fake clock, 2 s of set-up and evaluation plus 0.5 s per
    round per 4 workers of K steps: time_shape must recover both from the runs it times."""

    def __init__(self, clock):
        self.clock, self.calls = clock, []

    def run_batch(self, jobs):
        c = jobs[0].config
        self.calls.append((c.rounds, c.num_clients, c.eval_every))
        self.clock[0] += 2.0 + 0.5 * c.rounds * c.num_clients / 4


def test_a_batch_shape_is_split_into_rounds_and_evaluation_and_scaled_by_workers(tmp_path, monkeypatch):
    from benchmark.protocols.fedac import cost

    clock = [0.0]
    monkeypatch.setattr(cost.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(cost.time, "process_time", lambda: clock[0])
    monkeypatch.setattr(cost, "WORKER_STEPS", 6)  # K = 3, b = 2: one worker per timed round
    _, jobs = load_jobs(written(tmp_path, FEDAC_SUITE.replace("methods: [fedac1, fedavg, mbsgd]", "methods: [fedac1]")))
    protocol = ClockedProtocol(clock)
    timed = cost.time_shape(protocol, jobs)
    assert timed.round_s(4) == pytest.approx(0.5) and timed.eval_s == pytest.approx(2.0)  # 4 workers' round, from 1
    assert protocol.calls[0] == (1, 1, 1) and all(w == 1 and e == r for r, w, e in protocol.calls)
    costs = cost.batch_costs(protocol, [jobs], time_limit_s=10.0)
    assert costs.seconds == [pytest.approx(8 * 0.5 + 2 * 2.0)]  # 8 rounds, evaluated at 4 and 8


class OneOffProtocol(ClockedProtocol):
    """ClockedProtocol whose every path (one step a round, numpy local steps) also costs 7 s the first time
    this process takes it, as numba's load or the rows' sparse form does a run."""

    def __init__(self, clock):
        super().__init__(clock)
        self.paid: set[str] = set()

    def run_batch(self, jobs):
        from benchmark.protocols.fedac.cost import path_of

        if (path := path_of(jobs[0].config)) not in self.paid:
            self.paid.add(path)
            self.clock[0] += 7.0
        super().run_batch(jobs)


def test_one_off_costs_are_the_start_up_once_and_no_shape_s_time(tmp_path, monkeypatch):
    """Each path's one-off cost is paid once, before any shape is timed: the start-up counts it once per path,
    and every batch costs what it costs without it (so scaling spreads it to no other shape)."""
    from benchmark.protocols.fedac import cost

    clock = [0.0]
    monkeypatch.setattr(cost.time, "process_time", lambda: clock[0])
    monkeypatch.setattr(cost, "WORKER_STEPS", 6)
    _, jobs = load_jobs(written(tmp_path, FEDAC_SUITE.replace("[fedac1, fedavg, mbsgd]", "[fedac1, mbsgd]")))
    batches = [[j for j in jobs if j.method_label.startswith(m)] for m in ("FedAc-I", "MB-SGD")]
    assert {cost.path_of(b[0].config) for b in batches} == {"numpy local steps", "one step"}
    with_one_off = cost.batch_costs(OneOffProtocol(clock), batches, time_limit_s=10.0)
    without = cost.batch_costs(ClockedProtocol(clock), batches, time_limit_s=10.0)
    assert with_one_off.seconds == pytest.approx(without.seconds)
    assert with_one_off.startup_s == pytest.approx(without.startup_s + 2 * 7.0)  # once per path
    assert without.seconds == [pytest.approx(8 * 0.5 + 2 * 2.0)] * 2  # 8 rounds of 4 workers, evaluated twice


class FixedPartProtocol(ClockedProtocol):
    """Batches whose round costs 0.3 s whatever the workers, plus 0.1 s a worker per K local steps, on a fake clock."""

    def run_batch(self, jobs):
        c = jobs[0].config
        self.calls.append((c.rounds, c.num_clients, c.eval_every))
        self.clock[0] += 2.0 + c.rounds * (0.3 + 0.1 * c.num_clients * c.local.steps / 3)


def test_only_the_workers_part_of_a_round_is_scaled_by_m_and_to_other_shapes(tmp_path, monkeypatch):
    """A round's fixed part is told from its workers' part by timing it with one worker too: a shape of 16
    workers scaled from one of 4 costs what it costs, its fixed part counted once a round, not 4x."""
    from benchmark.protocols.fedac import cost

    clock = [0.0]
    monkeypatch.setattr(cost.time, "process_time", lambda: clock[0])
    text = FEDAC_SUITE.replace("[fedac1, fedavg, mbsgd]", "[fedac1]").replace(
        "local.lr:", "num_clients: [4, 16]\n  local.lr:"
    )
    _, jobs = load_jobs(written(tmp_path, text))
    small, large = ([j for j in jobs if j.config.num_clients == m] for m in (4, 16))
    timed = cost.time_shape(FixedPartProtocol(clock), small)
    assert timed.fixed_s == pytest.approx(0.3) and timed.worker_s == pytest.approx(0.1)
    costs = cost.batch_costs(
        FixedPartProtocol(clock), [small, large], time_limit_s=0.0
    )  # the larger timed, the smaller scaled
    assert any("1 of 2 batch shapes timed" in a for a in costs.assumed)
    assert costs.seconds == [pytest.approx(8 * (0.3 + 0.1 * m) + 2 * 2.0) for m in (4, 16)]


class PerWorkerStepProtocol(ClockedProtocol):
    """Batches whose round costs 0.01 s a worker-step (the authors' arithmetic goes worker by worker, step by
    step), plus 2 s of set-up and evaluation, on a fake clock."""

    def run_batch(self, jobs):
        c = jobs[0].config
        self.calls.append((c.rounds, c.num_clients, c.local.steps))
        self.clock[0] += 2.0 + 0.01 * c.rounds * c.num_clients * c.local.steps


def test_a_shape_on_the_authors_stream_is_timed_cut_down_and_scaled_back(tmp_path, monkeypatch):
    """The authors' K local steps go one by one, worker by worker: a shape is timed on at most
    AUTHORS_STEPS_TIMED steps of AUTHORS_WORKER_STEPS worker-steps, and its round scaled back by M and K."""
    from benchmark.protocols.fedac import cost

    clock = [0.0]
    monkeypatch.setattr(cost.time, "process_time", lambda: clock[0])
    text = (
        FEDAC_SUITE.replace("[fedac1, fedavg, mbsgd]", "[fedac1]")
        .replace("init: normal}", "init: normal_numpy}")
        .replace("steps: 3, batch_size: 2", "steps: 64, batch_size: 1")
        .replace("num_clients: 4", "num_clients: 512")
        .replace("split: {kind: shared}", "split: {kind: shared, samples: authors_numpy}")
    )
    _, jobs = load_jobs(written(tmp_path, text))
    protocol = PerWorkerStepProtocol(clock)
    timed = cost.time_shape(protocol, jobs)
    assert all(steps == cost.AUTHORS_STEPS_TIMED for _, _, steps in protocol.calls)
    assert all(m * steps <= cost.AUTHORS_WORKER_STEPS for _, m, steps in protocol.calls)
    assert timed.round_s(512) == pytest.approx(0.01 * 512 * 64) and timed.eval_s == pytest.approx(2.0)


def test_a_shape_of_each_kind_is_timed_first_then_the_heaviest(tmp_path):
    """Scaling a one-step-a-round batch from a K-local-steps one (or back) is the worst guess, so the
    heaviest of each kind comes first, whatever the time limit then cuts."""
    from benchmark.protocols.fedac.cost import Shape, in_timing_order

    job = load_jobs(written(tmp_path, FEDAC_SUITE))[1][0]
    heavy, light = Shape(False, 64, 16, 1, 8), Shape(False, 4, 16, 1, 8)
    one_step = Shape(True, 4, 1, 1, 8)
    order = in_timing_order({light: [job], one_step: [job], heavy: [job]})
    assert set(order[:2]) == {heavy, one_step} and order[2] == light


def test_a_large_suite_is_shown_a_row_per_dataset_and_method(tmp_path, monkeypatch, capsys):
    from benchmark.report import status

    monkeypatch.setattr(status, "LISTED_UP_TO", 1)
    assert main(["plan", str(written(tmp_path, SUITE)), "--budget"]) == 0
    shown = capsys.readouterr().out
    assert "compute budget of 2 jobs" in shown and "a row per dataset and method" in shown


MEASURED_NOW = re.compile(r"measurements: [1-9]\d* made now, 0 memoised")
ALL_MEMOISED = re.compile(r"measurements: 0 made now, [1-9]\d* memoised")


def planned(suite, *extra) -> str:
    from benchmark.commands.output import out

    with out.capture() as captured:
        assert main(["plan", str(suite), "--budget", "--device", "cpu", *extra]) == 0
    return captured.get()


def memo_file(tmp_path):
    (found,) = (tmp_path / "cache" / "budget_rates").glob("*.json")
    return found


def test_a_second_budget_reuses_this_machine_s_measurements_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(budget.Load, "now", classmethod(lambda cls, probe=False: Load((0.5, 0.5, 0.5), 2)))
    suite = written(tmp_path, SUITE)
    first = planned(suite)
    assert MEASURED_NOW.search(first) and "memoised 20" not in first

    def no_timing(*args):
        raise AssertionError("timed again despite the memo")

    monkeypatch.setattr(budget, "measure", no_timing)
    monkeypatch.setattr(budget, "run_imports_seconds", no_timing)
    monkeypatch.setattr(budget, "data_load_seconds", no_timing)
    second = planned(suite)
    assert ALL_MEMOISED.search(second) and "--remeasure to measure again" in second
    assert "ms/step" in second and "(memoised 20" in second  # each memoised rate says so
    rows = [line for line in first.splitlines() if line.startswith("│") and "total" not in line]  # (start-up aside)
    assert len(rows) == 2 and rows == [
        line for line in second.splitlines() if line.startswith("│") and "total" not in line
    ]


def test_remeasure_measures_everything_again(tmp_path):
    suite = written(tmp_path, SUITE)
    planned(suite)
    again = planned(suite, "--remeasure")
    assert MEASURED_NOW.search(again)
    assert ALL_MEMOISED.search(planned(suite))  # and what it measured is the memo now


def test_remeasure_without_budget_is_a_usage_error(tmp_path, capsys):
    assert main(["plan", str(written(tmp_path, SUITE)), "--remeasure"]) == 2
    assert "--remeasure" in capsys.readouterr().err


def test_a_memo_of_another_machine_torch_or_code_is_measured_over(tmp_path, monkeypatch):
    import json

    from benchmark.plan import budget_memo

    suite = written(tmp_path, SUITE)
    planned(suite)
    path = memo_file(tmp_path)
    on_file = json.loads(path.read_text())
    for field, other in [("torch", "0.0.1"), ("device_name", "another CPU"), ("threads", "8"), ("code", "0+x")]:
        edited = {**on_file, "key": {**on_file["key"], field: other}}
        path.write_text(json.dumps(edited))
        assert MEASURED_NOW.search(planned(suite)), field
    monkeypatch.setattr(budget_memo, "code_fingerprint", lambda: "0.1.0+edited")  # the code changed: another key
    assert MEASURED_NOW.search(planned(suite))


def test_a_damaged_memo_is_measured_over_without_a_traceback(tmp_path, capsys):
    suite = written(tmp_path, SUITE)
    planned(suite)
    path = memo_file(tmp_path)
    for damage in ["{not json", '{"key": 1, "entries": []}', path.read_text().replace('"share": ', '"share": -')]:
        path.write_text(damage)
        shown = planned(suite)
        assert "estimated run time:" in shown and "memoised (" in shown
        assert " 0 made now" not in shown


def test_memoised_seconds_follow_the_load(tmp_path, monkeypatch):
    """Measured with the machine to itself, then used at a load of 8 on 2 cores: the run's thread is a
    ninth runnable one and gets 2 / 9 of a core, so each memoised second counts 4.5, and the note says so.
    A probed share, where there is one, is the share now."""
    from benchmark.plan.budget_memo import Memo

    quiet, busy = Load((0.5, 0.5, 0.5), 2), Load((8.0, 8.0, 8.0), 2)
    memo = Memo({"k": 1}, load=quiet)
    assert memo.remembered("work", lambda: ({"s": 1.5}, ["how"])) == ({"s": 1.5}, ["how"], "")
    memo.save()
    later = Memo({"k": 1}, load=busy)
    values, lines, note = later.remembered("work", lambda: pytest.fail("measured again"))
    assert values == {"s": pytest.approx(6.75)} and lines == ["how"] and "x4.50 for the load now" in note
    probed = Memo({"k": 1}, load=Load((0.5, 0.5, 0.5), 2, probed=0.25)).remembered("work", pytest.fail)
    assert probed[0] == {"s": pytest.approx(6.0)} and "x4.00 for the load now" in probed[2]
    counts, _, _ = later.remembered("counted", lambda: ({"steps": 10}, []), per_load=False)
    later.save()
    assert Memo({"k": 1}, load=busy).remembered("counted", pytest.fail, per_load=False)[0] == {"steps": 10}


def test_a_round_too_long_to_time_whole_is_cut_and_its_evaluation_guessed(tmp_path, monkeypatch):
    """A ResNet round takes minutes on a CPU: past LONG_ROUND_S the first round stops at its next
    progress report, its rate is read from its steps so far, and the assumed block says so."""
    from benchmark.plan import budget_timing

    monkeypatch.setattr(budget_timing, "LONG_ROUND_S", 0.0)  # every round is "too long": cut at its first report
    suite = written(tmp_path, SUITE)
    _, jobs = load_jobs(suite)
    rates = budget_timing.measure(jobs[0], "cpu", lambda t: 1)
    assert rates.rounds_timed == 0 and rates.step_s > 0 and rates.round_s == 0
    assert rates.fastest_step_s == rates.step_s == rates.slowest_step_s
    assert rates.eval_s > 0  # a forward pass over the test set, guessed from the step's time
    shown = planned(suite)
    assert "a round too long to time whole: cut after" in shown and "guessed" in shown


def test_a_budget_of_fedac_batches_only_imports_no_torch_and_counts_without_the_data(tmp_path):
    """A suite whose every job FedAc's numpy engine batches: its run imports no torch, so its budget
    neither times torch's import nor imports it (its client-steps need no loaded data: K steps of
    one example of the shared set), once the machine has F* (its first run solves it with torch)."""
    from tests.engine.test_fedac_fixed_costs import SUITE as FEDAC_A9A
    from tests.engine.test_fedac_fixed_costs import fedbench, write_a9a

    write_a9a(tmp_path / "data", rows=60, seed=1)
    suite = tmp_path / "suite.yaml"
    suite.write_text(FEDAC_A9A.replace("{root}", str(tmp_path / "data")).replace("{methods}", "[fedac1, mbsgd]"))
    first, _ = fedbench(tmp_path, "run", str(suite), "--results-dir", str(tmp_path / "first"), "--no-tracking")
    assert first.returncode == 0, first.stderr
    planned_, modules = fedbench(tmp_path, "plan", str(suite), "--budget")
    assert planned_.returncode == 0, planned_.stderr
    assert "torch" not in modules and "estimated run time" in planned_.stdout
    assert re.search(r"FedAc batched engine: (\d) of \1 batch shapes timed", planned_.stdout)
    _, jobs = load_jobs(suite)
    for job in jobs:  # the count without the data is the count on the loaded data
        loaded = [client_cost(len(idx), job.config.local) for idx in federated_data(job.config).clients]
        assert budget.per_client(job.config) == loaded and len(loaded) == 4


def test_the_start_up_counts_loading_the_data_once_a_run_as_the_run_loads_it(tmp_path, monkeypatch):
    """The run loads each dataset once a process before its first job of it; the budget times that load
    (the first thing to load the data here, before the client-steps are counted on it) and says so."""
    from benchmark.engine import sources

    loads = []
    original = sources.load_dataset
    monkeypatch.setattr(sources, "load_dataset", lambda *a: loads.append(a[0]) or original(*a))
    sources._load_source.cache_clear()
    sources._tensors.cache_clear()
    text = SUITE.replace(
        "datasets:\n",
        "datasets:\n  - name: synthetic\n    label: other\n"
        "    params: {num_users: 6, dim: 12, num_classes: 3, max_samples: 60}\n"
        "    split: {kind: natural}\n",
    )
    first = planned(written(tmp_path, text))
    assert loads == ["synthetic", "synthetic"]  # each dataset once, for the timing, the counts and the jobs
    lines = re.findall(r"data (\S+): loaded in ([\d.]+) s, once a run\n", first)
    assert [name for name, _ in lines] == ["other", "synthetic"]
    startup = float(re.search(r"run start-up \(imports, suite, data\): ([\d.]+) s", first)[1])
    assert startup >= sum(float(s) for _, s in lines)
    assert re.search(r"data synthetic: loaded in [\d.]+ s, once a run \(memoised 20", planned(written(tmp_path, text)))


def test_the_probe_reads_the_share_of_a_core_from_cpu_time_over_wall_time(monkeypatch):
    """A spin whose process gets half the CPU time of the wall time it spans: a share of 0.5 (clocks faked:
    the real share depends on the machine's other work, which a test must not)."""
    from benchmark.plan import budget_timing

    clock = {"wall": 0.0}

    def perf_counter() -> float:
        clock["wall"] += 0.01
        return clock["wall"]

    monkeypatch.setattr(budget_timing.time, "perf_counter", perf_counter)
    monkeypatch.setattr(budget_timing.time, "process_time", lambda: clock["wall"] / 2)
    assert budget_timing.probe_share(0.2) == pytest.approx(0.5, rel=0.1)
    assert Load((0.0, 0.0, 0.0), 2, probed=0.5).share_now == 0.5 and Load((3.0, 0.0, 0.0), 2).share_now == 0.5
    assert "a thread gets 0.50 of a core now (probed)" in str(Load((0.0, 0.0, 0.0), 2, probed=0.5))


def test_a_cut_round_takes_its_evaluation_from_a_kind_measured_on_the_same_model(tmp_path, monkeypatch):
    """FedACG's round is cut (too long to time whole): its evaluation is the test pass FedAvg's timed rounds
    measured on the same dataset and model, not a guess from its own step (which FedACG's work inflates)."""
    whole = Rates(setup_s=0.0, step_s=0.01, fastest_step_s=0.01, slowest_step_s=0.01, eval_s=0.25, round_s=0.0)
    cut = Rates(setup_s=0.0, step_s=0.04, fastest_step_s=0.04, slowest_step_s=0.04, eval_s=9.0, round_s=0.0)
    cut = replace(cut, rounds_timed=0.0)
    monkeypatch.setattr(
        budget,
        "measure",
        lambda job, device, steps, clock=None: cut if "acg" in job.config.method.label.lower() else whole,
    )
    for name in ("run_imports_seconds", "data_load_seconds"):
        monkeypatch.setattr(budget, name, lambda _: 0.0)
    monkeypatch.setattr(budget, "process_age", lambda: 0.0)
    monkeypatch.setattr(budget, "share_got", lambda work: (work(), 1.0))
    _, jobs = load_jobs(written(tmp_path, SUITE))
    found = estimate(jobs, "cpu", remeasure=True)
    by_method = {j.config.method.label: found.jobs[j.id].seconds for j in jobs}
    steps = {j.config.method.label: job_cost(j)[0] for j in jobs}
    assert by_method["FedACG"] == pytest.approx(0.04 * steps["FedACG"] + 2 * 0.25)  # two evaluations
    assert any("evaluation 250 ms as identity+identity's (the same model and test set)" in a for a in found.assumed)
