"""Job identity, declared once with the job config's fields: every field's class, and the job id, the FedAc
engine's batches and the audit all following it."""

from __future__ import annotations

from fedtest import REPO

from benchmark.fl.registry import CLIENT_TERMS, CODECS, SERVER_RULES
from benchmark.job.config import JobConfig
from benchmark.papers.audit import job_value, setting
from benchmark.params import Identity, canonical_json, identity_dump, identity_of, model_in
from benchmark.protocols.fedac.jobs import batch_key, one_step_rounds
from benchmark.suite.expand import job_id, load_jobs

A, N, D = Identity.ALWAYS, Identity.NEVER, Identity.UNLESS_DEFAULT

# Every field of a job (job/config.py); its dataset holds only what the job trains on.
JOB_FIELDS = {
    "rounds": A,
    "eval_every": A,
    "num_clients": A,
    "participation": A,
    "participation.mode": A,
    "participation.rate": A,
    "participation.pool": A,
    "participation.pool.size": A,
    "participation.pool.every": A,
    "participation.pool.mode": A,
    "participation.pool.replace_prob": A,
    "participation.pool.reset_state": A,
    "participation.relative_to": D,
    "local": A,
    "local.epochs": A,
    "local.steps": A,
    "local.batch_size": A,
    "local.lr": A,
    "local.lr_decay": A,
    "local.intra_round_decay": A,
    "local.weight_decay": A,
    "local.clip_norm": A,
    "model": A,
    "model.name": A,
    "model.init": A,
    "model.params": A,
    "metrics": N,
    "precision": A,
    "checkpoint_every": N,
    "checkpoint_minutes": N,
    "execution": N,
    "client_state": N,
    "vmap_chunk": N,
    "compile": N,
    "log_model": N,
    "suboptimality": D,
    "select": D,  # test-selected jobs (the default) keep their ids
    "select.on": A,
    "select.holdout": A,
    "dataset": A,
    "dataset.name": A,
    "dataset.params": A,
    "dataset.root": N,
    "dataset.uri": N,
    "dataset.split": A,
    "dataset.split.kind": A,
    "dataset.split.alpha": A,
    "dataset.split.seed": A,
    "dataset.split.select": A,
    "dataset.split.min_size": A,
    "dataset.split.samples": D,  # added after shared-split jobs existed (the FedAc authors' sample stream)
    "dataset.augment": A,
    "dataset.augment.crop_padding": A,
    "dataset.augment.flip": A,
    "dataset.augment.rotate_degrees": A,
    "dataset.label": N,
    "method": A,
    "method.label": N,
    **{f"method.{part}{field}": A for part in ("server", "client", "uplink", "downlink") for field in ("", ".name")},
    **{f"method.{part}.params": A for part in ("server", "client", "uplink", "downlink")},
    "seed": A,
}
# Every parameter of every registered method part is ALWAYS, but these.
PART_PARAMS = {("server rule", "adam", "per_step"): D, ("client term", "fedac", "beta_rule"): D}


def declared_classes(model, prefix: str = "") -> dict[str, Identity]:
    out = {}
    for name, field in model.model_fields.items():
        out[prefix + name] = identity_of(field)
        nested = model_in(field.annotation)
        if nested is not None and identity_of(field) is not Identity.NEVER:
            out.update(declared_classes(nested, f"{prefix}{name}."))
    return out


def test_every_job_field_has_its_listed_class():
    assert declared_classes(JobConfig) == JOB_FIELDS


def test_every_method_part_parameter_has_its_listed_class():
    found = {
        (registry.kind, name, field): identity_of(info)
        for registry in (SERVER_RULES, CLIENT_TERMS, CODECS)
        for name in registry.names()
        for field, info in registry.get(name).Params.model_fields.items()
    }
    assert {k: v for k, v in found.items() if v is not Identity.ALWAYS} == PART_PARAMS
    assert found[("server rule", "acg", "lam")] is Identity.ALWAYS, "the registries were read"


def quickstart_job(label: str = "FedAvg"):
    return next(j for j in load_jobs(REPO / "suites" / "quickstart.yaml")[1] if j.method_label == label)


def test_the_job_id_follows_the_classes():
    job = quickstart_job()
    c = job.config
    assert job_id(c) == job.id
    same = [
        c.model_copy(update={"execution": "vectorised", "checkpoint_every": 7, "metrics": [], "log_model": True}),
        c.model_copy(update={"dataset": c.dataset.model_copy(update={"root": "/elsewhere", "label": "x"})}),
        c.model_copy(update={"method": c.method.model_copy(update={"label": "renamed"})}),
        c.model_copy(update={"participation": c.participation.model_copy(update={"relative_to": "all"})}),
    ]
    assert {job_id(x) for x in same} == {job.id}, "NEVER fields, and UNLESS_DEFAULT ones at their default"
    changed = [
        c.model_copy(update={"seed": 1}),
        c.model_copy(update={"local": c.local.model_copy(update={"lr": 0.2})}),
        c.model_copy(update={"suboptimality": True}),
    ]
    assert len({job_id(x) for x in changed} | {job.id}) == 4, "ALWAYS fields, and UNLESS_DEFAULT ones off default"


def test_batches_group_what_identity_allows():
    jobs = load_jobs(REPO / "suites" / "fedac_small.yaml")[1]
    c = jobs[0].config
    key = batch_key(c)
    assert key is not None
    assert batch_key(c.model_copy(update={"checkpoint_minutes": 0.0, "compile": True})) == key
    assert batch_key(c.model_copy(update={"local": c.local.model_copy(update={"lr": 9.0})})) == key
    assert batch_key(c.model_copy(update={"rounds": c.rounds + 1})) != key


def test_batches_are_the_jobs_whose_identity_differs_only_in_method_and_lr():
    """batch_key encodes each shared section once (a memo across calls); its batches are exactly the groups of
    jobs whose identity dumps, less method and lr, are equal, with the memo cleared part way through too."""
    from benchmark.protocols.fedac import jobs as fedac_jobs

    for suite in ("fedac_small.yaml", "papers/fedac.fig2.yaml"):
        configs = [j.config for j in load_jobs(REPO / "suites" / suite)[1]]
        half = len(configs) // 2
        fedac_jobs._SECTIONS.clear()
        keys = [batch_key(c) for c in configs[:half]]
        fedac_jobs._SECTIONS.clear()  # as when the memo fills up
        keys += [batch_key(c) for c in configs[half:]]

        def whole(c):
            data = identity_dump(c)
            del data["method"], data["local"]["lr"]
            return canonical_json([data, one_step_rounds(c)])

        def groups(labels):
            found = {}
            for i, label in enumerate(labels):
                found.setdefault(label, []).append(i)
            return sorted(found.values())

        assert None not in keys and groups(keys) == groups([whole(c) for c in configs])


def test_the_audit_reads_a_setting_left_out_of_dumps_at_its_default():
    c = quickstart_job().config
    assert "relative_to" not in c.participation.model_dump()
    assert setting(c, "participation.relative_to") == "all"
    adam = next(
        j for j in load_jobs(REPO / "suites" / "papers" / "fedcm.settingI_dir0.6.yaml")[1] if "Adam" in j.method_label
    )
    assert job_value(adam, "method.server.per_step") is True
    avg = quickstart_job()
    assert job_value(avg, "method.server.global_lr") == 1.0 and job_value(avg, "dataset.name") == "synthetic"


def test_a_seed_copied_job_has_the_id_of_its_full_dump(tmp_path):
    """Expansion takes a job of another seed's identity from its first seed's with the seed swapped:
    each id equals the one its whole config hashes to."""
    suite = tmp_path / "seeds.yaml"
    suite.write_text(
        "name: seeds\ndefaults: {rounds: 2, seeds: [0, 1, 2], model: {name: logistic}}\n"
        "datasets:\n  - name: synthetic\n    params: {num_users: 4, dim: 5, num_classes: 3, seed: 7}\n"
        "    split: {kind: natural}\nmethods: [fedavg, fedprox]\ngrid: {local.lr: [0.01, 0.1]}\n"
    )
    jobs = load_jobs(suite)[1]
    assert len({job.id for job in jobs}) == len(jobs) == 12
    assert all(job.id == job_id(job.config) for job in jobs)
