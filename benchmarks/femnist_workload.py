"""The FEMNIST FedAvg workload, whole process, one thread: fedbench vs a plain PyTorch loop vs Flower.

The same work in three fresh processes (OMP_NUM_THREADS=1, one torch thread): FedAvg on LEAF's
FEMNIST (natural split: the first N writers, every one of them in every round), LEAF's CNN, K local
SGD steps of batch B per client (full batches of a fresh shuffle of the client's data; clip, weight
decay), weighted averaging, one test-set evaluation after the last round.
  fedbench  `fedbench run` of a generated suite (tracking off, results in a temporary folder)
  plain     the loop below: nn.Module, torch.optim.SGD, sequential clients, averaged state_dicts
  flower    Flower's NumPyClient + FedAvg under flwr.simulation (Ray, one CPU: one client actor)
The arms run interleaved (order rotates every repeat); wall seconds are of the whole process
(start-up, data loading, training, evaluation). "train s" is each arm's own clock: fedbench's
simulation up to its final evaluation (metrics.jsonl wall_s), the plain loop's rounds and
evaluation, Flower's run_simulation (Ray's start-up and the client actor's data loading included). Flower is imported only when present, from
--flower-python (it pins its own Ray: install it in a separate virtual environment).

    PYTHONPATH=$PWD FEDBENCH_DATA=/path/to/data python benchmarks/femnist_workload.py [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ARMS = ("fedbench", "plain", "flower")
MARK = "WORKLOAD_RESULT "  # the line an arm's process prints its result on
HERE = Path(__file__).resolve().parent
_LOADED: dict = {}  # (root, clients) -> (source, client rows): once per process (a Ray actor serves many clients)


def settings(args) -> dict:
    return {
        "rounds": args.rounds,
        "clients": args.clients,
        "steps": args.steps,
        "batch": args.batch,
        "lr": args.lr,
        "weight_decay": 1e-3,
        "clip": 10.0,
    }


# ---- the plain loop (also Flower's local training) -------------------------------------------


def load(root: Path, clients: int):
    """FEMNIST as fedbench loads it; client u = writer u (fedbench's natural split, select: first)."""
    import torch

    from benchmark.data.source import load_dataset

    if (root, clients) not in _LOADED:
        src = load_dataset("femnist", {}, root)
        _LOADED[root, clients] = src, [torch.nonzero(src.train_users == u).flatten() for u in range(clients)]
    return _LOADED[root, clients]


def new_model(src):
    from benchmark.models.registry import build_model

    return build_model("femnist_cnn", src.input_shape, src.num_classes, {}, "default", seed=0)


def train_local(model, x, y, cfg: dict, seed: int) -> int:
    """K SGD steps on full batches of fresh shuffles of (x, y); returns the steps taken."""
    import torch
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], weight_decay=cfg["weight_decay"])
    b, n, done = min(cfg["batch"], len(y)), len(y), 0
    model.train()
    while done < cfg["steps"]:
        perm = torch.randperm(n, generator=gen)
        for i in range(0, n - b + 1, b):
            if done == cfg["steps"]:
                break
            idx = perm[i : i + b]
            opt.zero_grad()
            F.cross_entropy(model(x[idx]), y[idx]).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg["clip"])
            opt.step()
            done += 1
    return done


def test_accuracy(model, src) -> float:
    import torch

    model.eval()
    with torch.inference_mode():
        right = sum(
            int((model(src.test_x[i : i + 2048]).argmax(1) == src.test_y[i : i + 2048]).sum())
            for i in range(0, len(src.test_y), 2048)
        )
    return 100.0 * right / len(src.test_y)


def run_plain(cfg: dict, root: Path) -> dict:
    import torch

    src, parts = load(root, cfg["clients"])
    model = new_model(src)
    t0 = time.perf_counter()
    global_state, steps = {k: v.clone() for k, v in model.state_dict().items()}, 0
    sizes = [len(p) for p in parts]
    for rnd in range(cfg["rounds"]):
        total = {k: torch.zeros_like(v) for k, v in global_state.items()}
        for c, rows in enumerate(parts):
            model.load_state_dict(global_state)
            steps += train_local(model, src.train_x[rows], src.train_y[rows], cfg, seed=1000 * rnd + c)
            for k, v in model.state_dict().items():
                total[k] += v * (sizes[c] / sum(sizes))
        global_state = total
    model.load_state_dict(global_state)
    acc = test_accuracy(model, src)
    return {"acc": acc, "steps": steps, "train_s": time.perf_counter() - t0, "threads": torch.get_num_threads()}


# ---- Flower ----------------------------------------------------------------------------------


def run_flower(cfg: dict, root: Path) -> dict:
    import flwr
    import numpy as np
    import torch
    from flwr.client import ClientApp, NumPyClient
    from flwr.common import ndarrays_to_parameters
    from flwr.server import ServerApp, ServerAppComponents, ServerConfig
    from flwr.server.strategy import FedAvg
    from flwr.simulation import run_simulation

    def as_arrays(model) -> list[np.ndarray]:
        return [v.numpy().copy() for v in model.state_dict().values()]

    def set_arrays(model, arrays) -> None:
        model.load_state_dict({k: torch.from_numpy(a) for k, a in zip(model.state_dict(), arrays)})

    class Client(NumPyClient):
        def __init__(self, cid: int):
            torch.set_num_threads(1)  # a Ray actor is a fresh process
            self.cid, (self.src, parts) = cid, load(root, cfg["clients"])
            self.rows, self.model = parts[cid], new_model(self.src)

        def fit(self, parameters, config):
            set_arrays(self.model, parameters)
            x, y = self.src.train_x[self.rows], self.src.train_y[self.rows]
            steps = train_local(self.model, x, y, cfg, seed=1000 * (int(config["round"]) - 1) + self.cid)
            return as_arrays(self.model), len(self.rows), {"steps": steps}

    src, _ = load(root, cfg["clients"])
    model, out = new_model(src), {"steps": 0}

    def evaluate(rnd, arrays, _config):
        if rnd == cfg["rounds"]:  # called after every round (and before the first): score only the last
            set_arrays(model, arrays)
            out["acc"] = test_accuracy(model, src)
        return None

    def count_steps(fit_metrics):
        out["steps"] += sum(int(m["steps"]) for _, m in fit_metrics)
        return {}

    strategy = FedAvg(
        fraction_fit=1.0,
        fraction_evaluate=0.0,
        min_fit_clients=cfg["clients"],
        min_available_clients=cfg["clients"],
        evaluate_fn=evaluate,
        on_fit_config_fn=lambda rnd: {"round": rnd},
        fit_metrics_aggregation_fn=count_steps,
        initial_parameters=ndarrays_to_parameters(as_arrays(model)),
    )
    server = ServerApp(
        server_fn=lambda _ctx: ServerAppComponents(strategy=strategy, config=ServerConfig(num_rounds=cfg["rounds"]))
    )
    # Flower's idiom: a client (and its model) built per message; the data is cached per actor process
    client = ClientApp(client_fn=lambda ctx: Client(int(ctx.node_config["partition-id"])).to_client())
    t0 = time.perf_counter()
    run_simulation(
        server_app=server,
        client_app=client,
        num_supernodes=cfg["clients"],
        # Ray gets one CPU: one client actor, clients one after another as in the other arms
        backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0}, "init_args": {"num_cpus": 1}},
    )
    if "acc" not in out:
        raise RuntimeError("the Flower simulation ended without its final evaluation (see its log above)")
    return {**out, "train_s": time.perf_counter() - t0, "threads": torch.get_num_threads(), "flwr": flwr.__version__}


# ---- fedbench --------------------------------------------------------------------------------


def suite_yaml(cfg: dict) -> str:
    local = (
        f"{{steps: {cfg['steps']}, batch_size: {cfg['batch']}, lr: {cfg['lr']}, "
        f"weight_decay: {cfg['weight_decay']}, clip_norm: {cfg['clip']}}}"
    )
    return f"""name: femnist-workload
defaults:
  rounds: {cfg["rounds"]}
  eval_every: {cfg["rounds"]}
  seeds: [0]
  num_clients: {cfg["clients"]}
  participation: {{mode: fixed, rate: 1.0}}
  local: {local}
  model: {{name: femnist_cnn}}
datasets:
  - name: femnist
    split: {{kind: natural}}
methods: [fedavg]
"""


def fedbench_command(cfg: dict, work: Path) -> list[str]:
    suite = work / "suite.yaml"
    suite.write_text(suite_yaml(cfg))
    results = work / "results"
    return [sys.executable, "-m", "benchmark", "run", str(suite), "--no-tracking", "--results-dir", str(results)] + [
        "--threads",
        "1",
        "--device",
        "cpu",
        "-q",
    ]


def fedbench_result(cfg: dict, work: Path) -> dict:
    (job,) = (work / "results" / "jobs").glob("*/summary.json")
    s = json.loads(job.read_text())
    last = json.loads((job.parent / "metrics.jsonl").read_text().splitlines()[-1])
    steps = cfg["rounds"] * cfg["clients"] * cfg["steps"]  # steps mode: exactly K per client (each has >= B rows)
    # wall_s: the simulation's seconds up to the final evaluation (the job's wall_time_s adds building it)
    return {"acc": s["final_acc"], "steps": steps, "train_s": last["wall_s"], "threads": s["threads"]["count"]}


# ---- orchestration ---------------------------------------------------------------------------


def flower_missing(python: str) -> str | None:
    """Why the Flower arm cannot run with `python`, or None."""
    probe = subprocess.run([python, "-c", "import flwr, flwr.simulation, ray"], capture_output=True, text=True)
    return None if probe.returncode == 0 else f"{python} cannot import flwr[simulation]: " + probe.stderr.strip()[-200:]


def run_arm(arm: str, cfg: dict, args) -> tuple[float, dict]:
    """One whole process of `arm`: (wall seconds, its result with the CPU seconds of its reaped processes)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "RAY_DEDUP_LOGS": "0"}
    with tempfile.TemporaryDirectory(prefix="femnist-workload-") as tmp:
        work = Path(tmp)
        if arm == "fedbench":
            cmd = fedbench_command(cfg, work)
        else:
            python = args.flower_python if arm == "flower" else sys.executable
            cmd = [python, str(HERE / "femnist_workload.py"), "--arm", arm, "--config", json.dumps(cfg)]
            cmd += ["--root", str(args.root.resolve())]
            # importable by name, so Ray pickles this module's functions by reference (its data cache included)
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
        t0, cpu0 = time.perf_counter(), children_cpu()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=work)
        wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
        if done.returncode != 0:
            raise RuntimeError(f"{arm} failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        if arm == "fedbench":
            return wall, {**fedbench_result(cfg, work), "cpu_s": cpu}
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith(MARK)]
    return wall, {**json.loads(line.removeprefix(MARK)), "cpu_s": cpu}


def children_cpu() -> float:
    """User + system seconds of this process's finished children (and theirs, where they waited for them):
    less sensitive than wall time to the other work on a shared machine."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def report(walls: dict, results: dict, cfg: dict) -> None:
    def vs_plain(seconds: dict) -> dict:  # per repeat, so load drift between repeats cancels
        return {arm: statistics.median(a / p for a, p in zip(seconds[arm], seconds["plain"])) for arm in seconds}

    cpus = {arm: [x["cpu_s"] for x in results[arm]] for arm in walls}
    wall_ratio, cpu_ratio = vs_plain(walls), vs_plain(cpus)
    print(
        f"\n{'arm':<9} {'whole process s: median (min-max)':>34} {'vs plain':>9} {'CPU s':>7} {'vs plain':>9} "
        f"{'train s':>8} {'acc %':>6} {'steps':>6}"
    )
    for arm, w in walls.items():
        r = results[arm][-1]
        train, cpu = statistics.median(x["train_s"] for x in results[arm]), statistics.median(cpus[arm])
        spread = f"{statistics.median(w):.1f} ({min(w):.1f}-{max(w):.1f})"
        print(
            f"{arm:<9} {spread:>34} {wall_ratio[arm]:>8.2f}x {cpu:>7.1f} {cpu_ratio[arm]:>8.2f}x "
            f"{train:>8.1f} {r['acc']:>6.2f} {r['steps']:>6}"
        )
    if "flower" in walls:
        print("flower's CPU s is a lower bound: Ray's worker processes (the client actor) are not reaped by its driver")
    steps = {results[a][-1]["steps"] for a in walls}
    if steps != {cfg["rounds"] * cfg["clients"] * cfg["steps"]}:
        raise SystemExit(f"the arms took different numbers of local steps: {steps}")


def orchestrate(args) -> int:
    from benchmark.errors import UserError

    cfg = settings(args)
    try:  # bad input fails here, before any arm: the data, and enough writers for --clients
        src, _ = load(args.root, cfg["clients"])
        if cfg["clients"] > int(src.train_users.max()) + 1:
            raise UserError(f"--clients {cfg['clients']}: FEMNIST here has {int(src.train_users.max()) + 1} writers")
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    arms = list(args.arms)
    if "flower" in arms and (why := flower_missing(args.flower_python)):
        print(f"flower arm skipped: {why}")
        arms.remove("flower")
    print(f"config {cfg}; arms {arms}; OMP_NUM_THREADS=1; load average before: {load_average()}", flush=True)
    walls: dict[str, list[float]] = {a: [] for a in arms}
    results: dict[str, list[dict]] = {a: [] for a in arms}
    for rep in range(args.repeats):
        for arm in arms[rep % len(arms) :] + arms[: rep % len(arms)]:
            wall, result = run_arm(arm, cfg, args)
            walls[arm].append(wall)
            results[arm].append(result)
            print(f"repeat {rep + 1} {arm}: {wall:.1f} s whole, {json.dumps(result)}", flush=True)
    report(walls, results, cfg)
    flower = f"; flwr {results['flower'][-1]['flwr']}" if "flower" in results else ""
    print(f"load average after: {load_average()}; threads per arm: {[results[a][-1]['threads'] for a in arms]}{flower}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--steps", type=int, default=10, help="local steps K per client and round")
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--quick", action="store_true", help="2 rounds x 3 clients x 2 steps, one repeat (a smoke test)")
    ap.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    ap.add_argument("--flower-python", default=sys.executable, help="a Python with flwr[simulation] installed")
    ap.add_argument("--root", type=Path, default=Path(os.environ.get("FEDBENCH_DATA", "data")))
    ap.add_argument("--arm", choices=ARMS[1:], help=argparse.SUPPRESS)  # internal: run one arm in this process
    ap.add_argument("--config", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.clients, args.steps, args.repeats = 2, 3, 2, 1
    if min(args.repeats, args.rounds, args.clients, args.steps, args.batch) < 1 or args.lr <= 0:
        ap.error("--repeats, --rounds, --clients, --steps and --batch must be >= 1 and --lr > 0")
    if "plain" not in args.arms:
        ap.error("--arms must include plain: the ratios are to it")
    if args.arm:
        import femnist_workload as by_name  # not __main__: see run_arm
        import torch

        torch.set_num_threads(1)
        arm = by_name.run_plain if args.arm == "plain" else by_name.run_flower
        result = arm(json.loads(args.config), args.root)
        print(MARK + json.dumps(result), flush=True)
        return 0
    return orchestrate(args)


if __name__ == "__main__":
    sys.exit(main())
