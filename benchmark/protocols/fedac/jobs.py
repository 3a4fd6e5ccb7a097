"""Which jobs the FedAc-protocol engine (engine.py) runs, and how they batch.

Pure config logic, apart from that engine's torch and numba, so that `fedbench report` can tell
the FedAc protocol's jobs (figure.py) without importing either.
"""

from __future__ import annotations

from benchmark.fl.spec import MethodSpec
from benchmark.job.config import JobConfig
from benchmark.params import canonical_json, identity_dump, identity_members, joined


def batch_key(job: JobConfig) -> str | None:
    """Jobs with equal keys run as one batch: they differ only in their lr and method (among
    the ones here), and all take K local steps, or all one step per round. None: not for this engine."""
    local, part, method = job.local, job.participation, job.method
    eligible = (
        job.model.name == "binary_logistic"
        and job.dataset.split.kind == "shared"
        and local.steps is not None
        and part.mode == "fixed"
        and part.rate == 1.0
        and part.pool is None
        and local.clip_norm is None
        and local.lr_decay == 1.0
        and job.precision == "fp32"
        and job.select.on == "test"  # the batched engine evaluates no held-out split: Simulation does
        and method.uplink.name == method.downlink.name == "identity"
        and server_kind(method) is not None
    )
    if not eligible:
        return None
    if len(_SECTIONS) > SECTIONS_HELD:
        _SECTIONS.clear()
    members = identity_members(job, _SECTIONS)  # what may differ inside a batch is taken out: its method and lr
    members.pop("method", None), members.pop("local", None)
    local = identity_dump(job.local)
    local.pop("lr", None)
    return joined(members) + canonical_json({"local": local, "one_step": one_step_rounds(job)})


# identity_members' memo kept across calls: expand's jobs share their sections, so each is encoded once, not
# once a job (the 38,640 jobs of the authors' replay suite: 8 CPU-s a grouping, now about 2); cleared when it
# holds this many, so a long process does not keep every section it met
_SECTIONS: dict = {}
SECTIONS_HELD = 4096


def server_kind(method: MethodSpec) -> str | None:
    """ "average" (FedAvg, MB-SGD) or "fedac" (every FedAc variant, MB-AC-SGD); None: another method."""
    terms, rule = method.term_names, method.server.name
    if rule == "average" and method.server.params.global_lr == 1.0 and set(terms) <= {"minibatch"}:
        return "average"
    if rule == "fedac" and terms.count("fedac") == 1 and set(terms) <= {"fedac", "minibatch"}:
        return "fedac"
    return None


def one_step_rounds(job: JobConfig) -> bool:
    """Every worker takes one step per round: the minibatch methods, or K = 1."""
    return job.local.steps == 1 or job.method.term("minibatch") is not None
