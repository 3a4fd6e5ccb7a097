"""The FedAc-protocol engine: all M workers as one tensor computation, and the jobs of an lr grid
as one batch (a leading dimension over the learning rates).

It runs exactly the jobs `batch_key` accepts: the `binary_logistic` model on a `shared` split
(every worker samples with replacement from the whole training set), every worker every round,
no clipping, decay, codecs or autocast, and FedAvg / MB-SGD (server `average`) or FedAc-I/II,
vanilla FedAc / MB-AC-SGD (server and client term `fedac`), each optionally with the
`minibatch` term. For these it computes what the per-client round loop computes (same examples
from `shared_positions`, same init, same records; tests/engine/test_fedac_batched.py checks the
two agree), without Python per worker:

- K local steps: states (B, M, d); a step is a few fused tensor ops on a (M, batch, d) gather;
- one step per round (the minibatch methods, or K = 1): every worker starts from the broadcast
  model, and the mean of their steps is one step on the mean gradient, so the state is (B, d)
  and the gradient a matrix product over the round's M·K·batch examples.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from benchmark.engine.convex import BinaryLogistic
from benchmark.engine.fed_data import shared_positions
from benchmark.engine.metrics import ema_update
from benchmark.fl.fedac import coefficients
from benchmark.fl.flat import flat_params
from benchmark.suite.schema import JobConfig

ENGINE = "fedac_batched"  # the name recorded beside the results of the jobs run here


def batch_key(job: JobConfig) -> str | None:
    """Jobs with equal keys differ only in their lr and run as one batch; None: not for this engine."""
    from benchmark.suite.expand import canonical_json

    local, part, method = job.local, job.participation, job.method
    eligible = (
        job.model.name == "binary_logistic" and job.dataset.split.kind == "shared" and local.steps is not None
        and part.mode == "fixed" and part.rate == 1.0 and part.pool is None
        and local.clip_norm is None and local.lr_decay == 1.0 and job.precision == "fp32"
        and method["uplink"]["codec"] == method["downlink"]["codec"] == "identity"
        and _rule(method) is not None
    )
    if not eligible:
        return None
    data = job.model_dump(mode="json", exclude={"execution", "vmap_chunk", "client_state", "checkpoint_every"})
    data["local"].pop("lr")
    data["method"].pop("label")
    data["dataset"].pop("label", None)
    data["dataset"].pop("reference", None)
    return canonical_json(data)


def _rule(method: dict) -> str | None:
    """"average" (FedAvg, MB-SGD) or "fedac" (every FedAc variant, MB-AC-SGD); None: another method."""
    terms = [t["term"] for t in method["client"]]
    server = method["server"]
    if server["rule"] == "average" and server.get("global_lr") == 1.0 and set(terms) <= {"minibatch"}:
        return "average"
    if server["rule"] == "fedac" and terms.count("fedac") == 1 and set(terms) <= {"fedac", "minibatch"}:
        return "fedac"
    return None


@dataclass
class Outcome:
    """One job's share of a batch: its metric records, final evaluated model, and fate."""

    records: list[dict] = field(default_factory=list)
    final: torch.Tensor | None = None  # the evaluated model (FedAc: averaged w_ag) after the last round
    diverged_round: int | None = None  # first round whose model was not finite
    error: Exception | None = None  # a setting the method refuses (FedAc-II with α ≤ 1)
    round_bytes: int = 0  # sent down (and up) per round over all workers


@dataclass
class Batch:
    """The settings shared by a batch, and the per-job coefficients as (B, 1) columns."""

    jobs: list[JobConfig]
    rule: str
    one_step: bool  # every worker takes one step per round (minibatch methods, K = 1)
    lr: torch.Tensor
    coef: dict[str, torch.Tensor] | None  # FedAc's γ, α, β

    @classmethod
    def of(cls, jobs: list[JobConfig], outcomes: list[Outcome]) -> "Batch":
        first = jobs[0]
        rule = _rule(first.method)
        terms = {t["term"]: t for t in first.method["client"]}
        one_step = "minibatch" in terms or first.local.steps == 1
        steps = 1 if one_step else first.local.steps
        kept, coefs = [], []
        for job, outcome in zip(jobs, outcomes):
            if rule == "fedac":
                mu = terms["fedac"]["mu"] if terms["fedac"]["mu"] is not None else job.local.weight_decay
                try:
                    coefs.append(coefficients(terms["fedac"]["variant"], job.local.lr, mu, steps))
                except ValueError as err:
                    outcome.error = err
                    continue
            kept.append(job)
        lr = torch.tensor([[j.local.lr] for j in kept])
        coef = None
        if rule == "fedac":
            coef = {k: torch.tensor([[getattr(c, k)] for c in coefs]) for k in ("gamma", "alpha", "beta")}
        return cls(kept, rule, one_step, lr, coef)


class Step:
    """One local step of every (job, worker) at once: S = w, A = w_ag (FedAc only)."""

    def __init__(self, batch: Batch, lam: float, extra_dims: int):
        shape = (-1,) + (1,) * extra_dims
        self.lam, self.fedac = lam, batch.rule == "fedac"
        self.lr = batch.lr.view(shape)
        if self.fedac:
            c = {k: v.view(shape) for k, v in batch.coef.items()}
            self.inv_beta, self.inv_alpha, self.gamma = 1 / c["beta"], 1 / c["alpha"], c["gamma"]

    def point(self, s, a):
        """Where the gradient is taken: w, or FedAc's w_md = w/β + (1 − 1/β) w_ag."""
        return s * self.inv_beta + (1 - self.inv_beta) * a if self.fedac else s

    def __call__(self, s, a, point, loss_grad):
        g = loss_grad + self.lam * point
        if not self.fedac:
            return s - self.lr * g, a
        return (1 - self.inv_alpha) * s + point * self.inv_alpha - self.gamma * g, point - self.lr * g


def _logistic_parts(z: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss log(1 + e^{−yz}), its derivative in z) for scores z and labels y = ±1."""
    margin = y * z
    return F.softplus(-margin), -y * torch.sigmoid(-margin)


def run_batch(jobs: list[JobConfig], x: torch.Tensor, y01: torch.Tensor, test_x: torch.Tensor,
              test_y01: torch.Tensor, objective: BinaryLogistic | None) -> list[Outcome]:
    """Run jobs (equal `batch_key`s) together; one Outcome per job, in order."""
    first = jobs[0]
    outcomes = [Outcome() for _ in jobs]
    batch = Batch.of(jobs, outcomes)
    live = [o for o in outcomes if o.error is None]
    if not batch.jobs:
        return outcomes
    x, test_x = x.flatten(1).float(), test_x.flatten(1).float()
    y, test_y = 2.0 * y01.float() - 1.0, 2.0 * test_y01.float() - 1.0
    n, d = x.shape
    b_count, m, k, bs = len(batch.jobs), first.num_clients, first.local.steps, first.local.batch_size
    lam = first.local.weight_decay
    s = initial_model(first).expand(b_count, d).clone()
    a = s.clone() if batch.rule == "fedac" else None
    messages = 2 if batch.rule == "fedac" else 1  # (θ, θ_ag) down and (Δ, Δ_ag) up per worker
    round_bytes = m * messages * d * 4
    shared_step, worker_step = Step(batch, lam, 1), Step(batch, lam, 2)
    ema: list[float | None] = [None] * b_count
    finite = torch.ones(b_count, dtype=torch.bool)
    for r in range(first.rounds):
        idx = shared_positions(first.seed, r, m, k, bs, n)
        if batch.one_step:
            s, a, loss = _one_step(shared_step, s, a, x[idx.view(-1)], y[idx.view(-1)])
        else:
            s, a, loss = _local_steps(worker_step, s, a, x, y, idx)
        done = r + 1
        now_finite = torch.isfinite(s).all(1) & (torch.isfinite(a).all(1) if a is not None else True)
        for i in torch.nonzero(finite & ~now_finite).flatten().tolist():
            live[i].diverged_round = done
        finite &= now_finite  # diverged jobs go on (NaN records, as in the per-client loop)
        if done % first.eval_every and done != first.rounds:
            continue
        evaluated = a if a is not None else s
        scores = test_x @ evaluated.T  # (test, B)
        test_loss = F.softplus(-test_y[:, None] * scores).mean(0)
        acc = 100.0 * ((scores > 0) == (test_y[:, None] > 0)).float().mean(0)
        for i in range(b_count):
            ema[i] = ema_update(ema[i], float(acc[i]))
            rec = {"round": done, "test_acc": float(acc[i]), "test_loss": float(test_loss[i]),
                   "train_loss": float(loss[i]), "ema_acc": ema[i], "bytes_down": done * round_bytes,
                   "bytes_up": done * round_bytes}
            if first.suboptimality:
                rec["subopt"] = objective.suboptimality(evaluated[i])
            live[i].records.append(rec)
    final = a if a is not None else s
    for i, outcome in enumerate(live):
        outcome.final, outcome.round_bytes = final[i].clone(), round_bytes
    return outcomes


def _one_step(step: Step, s, a, xs, ys):
    """All workers from the broadcast model, one step each, averaged: one step on the mean gradient."""
    point = step.point(s, a)
    loss, dz = _logistic_parts(xs @ point.T, ys[:, None])  # (M·K·batch, B)
    new_s, new_a = step(s, a, point, dz.T @ xs / len(xs))
    return new_s, new_a, loss.mean(0)


def _local_steps(step: Step, s, a, x, y, idx):
    """K local steps of every worker from the broadcast (s, a); returns the averaged models."""
    b_count, d = s.shape
    m, k, bs = idx.shape
    ws = s[:, None, :].expand(b_count, m, d).clone()
    wa = a[:, None, :].expand(b_count, m, d).clone() if a is not None else None
    loss_sum = torch.zeros(b_count)
    for j in range(k):
        rows = idx[:, j, :]
        xk, yk = x[rows], y[rows]  # (M, batch, d), (M, batch)
        point = step.point(ws, wa)
        if bs == 1:
            z = torch.einsum("bmd,md->bm", point, xk[:, 0])[..., None]
        else:
            z = torch.einsum("bmd,mjd->bmj", point, xk)
        loss, dz = _logistic_parts(z, yk)
        grad = torch.einsum("bmj,mjd->bmd", dz, xk) / bs
        ws, wa = step(ws, wa, point, grad)
        loss_sum += loss.mean((1, 2))
    # the server adds the mean change, as the per-client path does (Δ = w_K − θ)
    new_s = s + (ws - s[:, None]).mean(1)
    new_a = a + (wa - a[:, None]).mean(1) if a is not None else None
    return new_s, new_a, loss_sum / k


def initial_model(job: JobConfig) -> torch.Tensor:
    """θ₀ of the job, built as the per-client path builds it (seeded init of the model)."""
    from benchmark.engine.setup import load_source
    from benchmark.models.registry import build_model

    src = load_source(job)
    model = build_model(job.model.name, src.input_shape, src.num_classes, job.model.params, job.model.init, job.seed)
    return flat_params(model).detach().float()
