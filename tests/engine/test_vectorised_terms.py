"""Every vmappable client term: the method run vectorised equals the sequential run (θ, server
state, client states, metrics; atol 1e-5, see test_vectorised.py) over 3 rounds.

Logistic runs use a label-skewed Dirichlet split (balanced sizes, so rounds stay vectorisable)
so FedLC masks absent classes and stateful methods see clients return; methods that need
features or stages also run on a stage-protocol MLP.
"""

from __future__ import annotations

import pytest
import torch
from fedtest import StageMLP
from vec_support import ATOL, assert_same, chunk_sizes, image_simulation, make_jobs, run, with_term

from benchmark.fl.base import ClientTerm
from benchmark.fl.method import resolve_method
from benchmark.fl.presets import preset, preset_names
from benchmark.fl.registry import CLIENT_TERMS

SKEWED = {"kind": "dirichlet", "alpha": 0.1}


def parts(method) -> list:
    return [CLIENT_TERMS.get(t.name) for t in resolve_method(method, "m").client]


def needs_hidden_layer(method) -> bool:
    return any(t.needs_features or t.model_traits for t in parts(method))


# every preset whose terms can run under vmap, with +ACG on each client-side one and +PAQ on each
# (enumerated from the registries: a new method is tested here without touching this file)
VMAPPABLE = [p for p in preset_names() if all(t.vmappable for t in parts(p))]
VARIANTS = (
    VMAPPABLE
    + [f"{p}+acg" for p in VMAPPABLE if preset(p)["server"]["rule"] == "average"]
    + [f"{p}+paq" for p in VMAPPABLE if p != "fedpaq"]
    + [{"preset": "fedadam", "label": "FedAdam per-step", "server": {"per_step": True}}]
)
LOGISTIC = [m for m in VARIANTS if not needs_hidden_layer(m)]
STAGED = [m for m in VARIANTS if needs_hidden_layer(m)]
# half the clients each round: over 3 rounds most train twice, so their state is read back
STATEFUL = {"participation": {"mode": "fixed", "rate": 0.5}}


def stage_mlp_simulation(config):
    return image_simulation(config, model=lambda: StageMLP(classes=4, hidden=8, in_dim=64))


@pytest.mark.parametrize("job", make_jobs(LOGISTIC, split=SKEWED, **STATEFUL), ids=lambda j: j.method_label)
def test_logistic_matches_sequential(job):
    assert_same(job.config)


# validated as a model with a hidden layer and stages; stage_mlp_simulation then builds a tiny StageMLP
@pytest.mark.parametrize("job", make_jobs(STAGED, model={"name": "femnist_cnn"}), ids=lambda j: j.method_label)
def test_stage_mlp_matches_sequential(job):
    assert_same(job.config, stage_mlp_simulation)


@pytest.mark.parametrize("method", ["feddyn", "scaffold"])
def test_vmap_chunk_gives_the_same_numbers(method, monkeypatch):
    (job,) = make_jobs([method], split=SKEWED, **STATEFUL)
    whole, _ = run(job.config, "vectorised")
    sizes = chunk_sizes(monkeypatch)
    chunked, _ = run(job.config, "vectorised", vmap_chunk=2)
    assert sizes == [2, 2, 1] * job.config.rounds  # 5 clients a round, at most 2 per vmap call
    torch.testing.assert_close(chunked.progress.theta, whole.progress.theta, atol=ATOL, rtol=0)
    for key, value in whole.progress.server_state.items():
        torch.testing.assert_close(chunked.progress.server_state[key], value, atol=ATOL, rtol=0)


def test_every_registered_term_is_vmappable_except_known_ones():
    """A new term must decide: vmappable (with a parity test here) or listed as not, with a reason."""
    not_vmappable: dict[str, str] = {  # term -> why it cannot run under vmap
        "fedac": "moves the gradient point (w_md) and takes a two-sequence step, outside the vmapped SGD step",
        "minibatch": "MB-SGD/MB-AC-SGD protocol: its jobs run on the batched FedAc engine; the vmapped trainer does not regroup batches",
    }
    refused = {name for name in CLIENT_TERMS.names() if not CLIENT_TERMS.get(name).vmappable}
    assert refused == set(not_vmappable), "mark the term vmappable (and test it here) or list it with a reason"


class Forgetful(ClientTerm):
    """Declares a scratch input but its begin never sets it."""

    name = "forgetful"
    vmappable = True
    scratch_inputs = ("forgetful.anchor",)


def test_declared_scratch_input_missing_is_a_clear_error():
    (job,) = make_jobs(["fedavg"])
    with pytest.raises(TypeError, match=r"'forgetful' declares scratch input 'forgetful.anchor'"):
        run(job.config, "vectorised", with_term(Forgetful(None)))
