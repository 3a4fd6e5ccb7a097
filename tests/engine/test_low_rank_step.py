"""The fused client-batched step (engine/low_rank_step.py) gives the sequential numbers, for
every preset it takes; methods it cannot take, and models whose linear parameters the tape cannot
stand for, fall back to the general path; parameters the loss never reaches decay as in the plain step.

Tolerance: vec_support.ATOL, as for every vectorised parity test (float32 reduction order);
WIDE_ATOL at a million weights.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from vec_support import ATOL, assert_same, image_simulation, make_jobs, run

from benchmark.engine import low_rank_step, vectorised
from benchmark.engine.setup import build_simulation
from benchmark.fl.flat import ParamSpec
from benchmark.models.registry import build_model

PROX = {"preset": "fedprox", "client": {"prox": {"mu": 0.05}}}  # strong enough to matter in 3 rounds
# no client term shapes the step, or only the proximal term (folded into the step)
FUSED = [
    "fedavg",
    "fedavgm",
    "fedadam",
    "fedpaq",
    PROX,
    "fedacg",
    "fedagm",
    {"preset": "fedprox", "label": "FedProx-unhalved", "client": {"prox": {"mu": 0.05, "halved": False}}},
]
GENERAL = ["scaffold", "fedlc", "fedntd", "feddyn"]  # a direction, adjusted logits, a loss


@pytest.fixture
def fused_calls(monkeypatch):
    """How many fused steps ran."""
    calls = []
    real = low_rank_step.FusedStep.__call__

    def counting(self, *args, **kwargs):
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(low_rank_step.FusedStep, "__call__", counting)
    return calls


@pytest.mark.parametrize("clip_norm", [None, 0.05, 1.0], ids=lambda c: f"clip{c}")
@pytest.mark.parametrize("job", make_jobs(FUSED), ids=lambda j: j.method_label)
def test_fused_presets_match_sequential_on_logistic(job, clip_norm, fused_calls):
    config = job.config.model_copy(update={"local": job.config.local.model_copy(update={"clip_norm": clip_norm})})
    assert_same(config)
    assert fused_calls


@pytest.mark.parametrize("job", make_jobs(FUSED, local={"clip_norm": 0.05}), ids=lambda j: j.method_label)
def test_fused_presets_match_sequential_on_a_cnn(job, fused_calls):
    """Conv + GroupNorm keep ordinary gradients, the two linear layers go through the tape."""
    assert job.config.local.weight_decay and job.config.local.clip_norm
    assert_same(job.config, image_simulation)
    assert fused_calls


class SharedHead(nn.Module):
    """A linear layer called twice (its gradient is then rank 2N), a weight tied between two
    layers with their own biases, and a layer without bias."""

    def __init__(self, num_classes: int = 4):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, padding=1)
        self.shared = nn.Linear(64, 64)
        self.tied = nn.Linear(64, 64)
        self.tied.weight = self.shared.weight
        self.head = nn.Linear(64, num_classes, bias=False)

    def forward(self, x, features: bool = False):
        h = torch.relu(self.conv(x)).mean(1).flatten(1)
        z = torch.tanh(self.tied(torch.tanh(self.shared(torch.tanh(self.shared(h))))))
        logits = self.head(z)
        return (logits, z) if features else logits


def test_shared_and_bias_free_linear_layers_match_sequential(fused_calls):
    (job,) = make_jobs(["fedavg"], local={"clip_norm": 0.05})
    assert_same(job.config, lambda config: image_simulation(config, model=SharedHead))
    assert fused_calls


@pytest.mark.parametrize("job", make_jobs(GENERAL), ids=lambda j: j.method_label)
def test_methods_whose_terms_shape_the_step_take_the_general_path(job):
    sim = build_simulation(job.config)
    assert low_rank_step.why_not(sim.setup.model, sim.setup.method.terms) is not None


def test_an_ineligible_method_falls_back_and_still_matches(fused_calls):
    (job,) = make_jobs(["feddyn"])
    assert_same(job.config)
    assert not fused_calls


@pytest.mark.parametrize("update", [{"precision": "bf16"}, {"compile": True}])
def test_reduced_precision_and_compile_take_the_general_path(update):
    (job,) = make_jobs(["fedavg"])
    sim = build_simulation(job.config)
    assert low_rank_step.why_not(sim.setup.model, sim.setup.method.terms) is None
    assert (
        low_rank_step.why_not(
            sim.setup.model, sim.setup.method.terms, **{"precision": "fp32", "compile": False, **update}
        )
        is not None
    )


@pytest.mark.parametrize("job", make_jobs(FUSED, local={"clip_norm": 0.05}), ids=lambda j: j.method_label)
def test_sequential_fused_step_matches_the_plain_step(job, fused_calls, monkeypatch):
    """Clients trained one by one take the fused step where their linear layers are large
    (ONE_CLIENT_MIN_LINEAR; lowered here for a small model): same numbers as the plain step."""
    plain, _ = run(job.config, "sequential", image_simulation)
    assert not fused_calls and step_taken(plain, "sequential")["step"] == "plain"
    monkeypatch.setattr(low_rank_step, "ONE_CLIENT_MIN_LINEAR", 0)
    fused, _ = run(job.config, "sequential", image_simulation)
    assert fused_calls and step_taken(fused, "sequential")["step"] == "fused"
    torch.testing.assert_close(fused.progress.theta, plain.progress.theta, atol=ATOL, rtol=0)


def test_sequential_fused_step_only_where_linear_layers_are_large():
    (job,) = make_jobs(["fedavg"])
    sim = build_simulation(job.config)
    assert isinstance(low_rank_step.choose("sequential", sim.setup.model, sim.setup.spec, sim.setup.method.terms), str)
    cnn = build_model("femnist_cnn", (1, 28, 28), 62, {}, "default", seed=0)
    assert isinstance(low_rank_step.choose("sequential", cnn, ParamSpec.of(cnn), []), low_rank_step.FusedStep)


def test_clip_norm_from_gram_matrices_is_the_flat_gradient_norm():
    """‖Dᵀ X‖_F² = ⟨X Xᵀ, D Dᵀ⟩_F, the identity the clip factor rests on."""
    gen = torch.Generator().manual_seed(0)
    rows, out_grad = (
        torch.randn(3, 5, 7, generator=gen, dtype=torch.float64),
        torch.randn(3, 5, 4, generator=gen, dtype=torch.float64),
    )
    weight = torch.zeros(3, 4, 7, dtype=torch.float64)
    bias_grad = out_grad.sum(1)
    full = torch.cat([(out_grad.transpose(1, 2) @ rows).flatten(1), bias_grad], 1)
    expected = torch.clamp(2.0 / (full.norm(dim=1) + 1e-6), max=1.0)
    got = low_rank_step._clip_factor([bias_grad], [(weight, rows, out_grad)], 2.0)
    torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("split", [{"kind": "shared"}, {"kind": "iid"}], ids=lambda s: s["kind"])
def test_batches_gathered_at_once_are_each_clients_own(split):
    """Vector data: the vectorised trainer gathers a step's batches in one index (shared split:
    every client draws from all rows); the same examples as each client's data.client_batches."""
    local = {"epochs": None, "steps": 4, "batch_size": 5} if split["kind"] == "shared" else {}
    (job,) = make_jobs(["fedavg"], split=split, local=local)
    sim = build_simulation(job.config)
    chosen, rnd = [1, 4, 6], sim.round_info(0)
    positions = [sim.setup.data.batch_positions(job.config.seed, 0, cid, job.config.local) for cid in chosen]
    stacked = list(vectorised._step_inputs(sim.setup, chosen, rnd, positions))
    for i, cid in enumerate(chosen):
        own = sim.setup.data.client_batches(job.config.seed, 0, cid, job.config.local)
        assert len(own) == len(stacked)
        for batch, (x, y) in zip(own, stacked):
            assert torch.equal(batch.x, x[i]) and torch.equal(batch.y, y[i])
    assert_same(job.config)


def features_of(x: torch.Tensor, conv: nn.Module) -> torch.Tensor:
    return torch.relu(conv(x)).mean(1).flatten(1)  # (B, 64) from 1x8x8 images


class UnusedHead(nn.Module):
    """A projection head computed only with features=True (MOON's layout): the logits never reach it."""

    def __init__(self, num_classes: int = 4):
        super().__init__()
        self.conv, self.fc, self.proj = nn.Conv2d(1, 2, 3, padding=1), nn.Linear(64, num_classes), nn.Linear(64, 8)

    def forward(self, x, features: bool = False):
        h = features_of(x, self.conv)
        return (self.fc(h), self.proj(h)) if features else self.fc(h)


class DeadBranch(UnusedHead):
    """The head is called on every forward, but its output never reaches the loss."""

    def forward(self, x, features: bool = False):
        h = features_of(x, self.conv)
        self.proj(h)
        return (self.fc(h), h) if features else self.fc(h)


class UnusedConv(nn.Module):
    """A convolution that the forward never calls."""

    def __init__(self, num_classes: int = 4):
        super().__init__()
        self.fc, self.conv = nn.Linear(64, num_classes), nn.Conv2d(1, 1, 1)

    def forward(self, x, features: bool = False):
        logits = self.fc(x.flatten(1))
        return (logits, logits) if features else logits


class Cosine(nn.Module):
    """A cosine classifier: F.linear on a normalised copy of the layer's weight."""

    def __init__(self, num_classes: int = 4):
        super().__init__()
        self.conv, self.fc = nn.Conv2d(1, 2, 3, padding=1), nn.Linear(64, num_classes)

    def forward(self, x, features: bool = False):
        h = features_of(x, self.conv)
        logits = 4.0 * F.linear(F.normalize(h, dim=-1), F.normalize(self.fc.weight, dim=-1), self.fc.bias)
        return (logits, h) if features else logits


class Rescaled(Cosine):
    """A taped weight that reaches the loss a second way (one client: the scalar is that client's)."""

    def forward(self, x, features: bool = False):
        logits = self.fc(features_of(x, self.conv)) * self.fc.weight.pow(2).sum()
        return (logits, logits) if features else logits


class Matmul(Cosine):
    """The weight used by matmul rather than F.linear: batched, the logits come out (1, B, classes)."""

    def forward(self, x, features: bool = False):
        logits = torch.matmul(features_of(x, self.conv), self.fc.weight.transpose(-1, -2))
        return (logits, logits) if features else logits


def step_taken(sim, trainer: str) -> dict:
    return sim.execution.local_step[trainer]


@pytest.mark.parametrize("method", ["fedavg", PROX], ids=["fedavg", "fedprox"])
@pytest.mark.parametrize("model", [UnusedHead, DeadBranch, UnusedConv], ids=lambda m: m.__name__)
def test_parameters_the_loss_never_reaches_decay_as_in_the_plain_step(model, method, fused_calls):
    """The plain step gives them a zero gradient, then weight decay (and the proximal pull)."""
    (job,) = make_jobs([method], local={"clip_norm": 0.05, "weight_decay": 0.05})
    _, vec = assert_same(job.config, lambda config: image_simulation(config, model=model))
    assert step_taken(vec, "vectorised")["step"] == "fused" and fused_calls


def test_a_linear_layer_on_a_computed_weight_declines_and_matches():
    """A cosine classifier's normalised weight is a temporary: the fused step declines, the general path trains it."""
    (job,) = make_jobs(["fedavg"], local={"clip_norm": 0.05})
    _, vec = assert_same(job.config, lambda config: image_simulation(config, model=Cosine))
    taken = step_taken(vec, "vectorised")
    assert taken["step"] == "plain" and "computed tensor" in taken["why"]


@pytest.mark.parametrize(
    ("model", "why"),
    [(Rescaled, "outside nn.Linear"), (Matmul, "returned (1, 8, 4)"), (Cosine, "computed tensor")],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_one_client_at_a_time_a_misfit_declines_to_the_plain_step(model, why, monkeypatch):
    (job,) = make_jobs(["fedavg"], local={"clip_norm": 0.05})
    factory = lambda config: image_simulation(config, model=model)  # noqa: E731
    plain, _ = run(job.config, "sequential", factory)
    monkeypatch.setattr(low_rank_step, "ONE_CLIENT_MIN_LINEAR", 0)
    declined, _ = run(job.config, "sequential", factory)
    taken = step_taken(declined, "sequential")
    assert taken["step"] == "plain" and why in taken["why"]
    torch.testing.assert_close(declined.progress.theta, plain.progress.theta, atol=0, rtol=0)


class Wide(nn.Module):
    """1.1 M linear weights (over ONE_CLIENT_MIN_LINEAR: one client at a time takes the fused step)."""

    def __init__(self, num_classes: int = 4):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(64, 1024), nn.Linear(1024, 1024), nn.Linear(1024, num_classes)

    def forward(self, x, features: bool = False):
        z = torch.relu(self.fc2(torch.relu(self.fc1(x.flatten(1)))))
        return (self.fc3(z), z) if features else self.fc3(z)


# measured 1.5e-8 (FedAvg), 2.2e-8 (FedProx) against an update of 9.4e-4: float32 reduction order over
# 1.1 M weights (the plain step's clip norm from partial norms, local.row_norms; the fused one's from
# Gram matrices); the clip scales the step by about 0.1
WIDE_ATOL = 2e-7


@pytest.mark.parametrize("method", ["fedavg", PROX], ids=["fedavg", "fedprox"])
def test_fused_step_at_a_million_weights_matches_the_plain_step_with_the_clip_binding(method, monkeypatch):
    (job,) = make_jobs([method], local={"epochs": None, "steps": 3, "clip_norm": 0.05, "weight_decay": 0.05})
    config = job.config.model_copy(update={"rounds": 1})
    factory = lambda config: image_simulation(config, model=Wide)  # noqa: E731
    fused, _ = run(config, "sequential", factory)
    assert step_taken(fused, "sequential")["step"] == "fused"
    monkeypatch.setattr(low_rank_step, "ONE_CLIENT_MIN_LINEAR", 10**9)
    plain, _ = run(config, "sequential", factory)
    unclipped, _ = run(
        config.model_copy(update={"local": config.local.model_copy(update={"clip_norm": None})}), "sequential", factory
    )
    assert step_taken(plain, "sequential")["step"] == "plain"
    start = image_simulation(config, model=Wide).progress.theta
    moved = (plain.progress.theta - start).abs().max()
    assert (unclipped.progress.theta - plain.progress.theta).abs().max() > 0.1 * moved  # the clip binds
    torch.testing.assert_close(fused.progress.theta, plain.progress.theta, atol=WIDE_ATOL, rtol=0)
