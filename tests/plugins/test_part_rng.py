"""A plugin's randomised client term draws from `ctx.rng()`: a stream per job seed, round and client,
so its noise differs across seeds and clients and a resumed job draws exactly what it would have."""

from __future__ import annotations

import sys

import pytest
import torch

from benchmark.cli import main
from benchmark.store.job_dir import JobDir
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs

NOISY_TERM = """
from fedbench import ClientTerm, StrictParams, register_client_term, register_preset, torch

DRAWS = []  # (seed, round, client, first draw): what the test compares


class NoiseParams(StrictParams):
    sigma: float = 0.01


@register_client_term
class Noise(ClientTerm):
    name = "rng_test_noise"
    Params = NoiseParams

    def direction(self, ctx, w, g):
        noise = torch.randn(g.shape, generator=ctx.rng(), device=g.device, dtype=g.dtype)
        DRAWS.append((ctx.rnd.seed, ctx.rnd.round, ctx.client_id, float(noise[0])))
        return g + self.p.sigma * noise


register_preset("rng_test_noisy", "NoisyAvg", {"rule": "average"}, [{"term": "rng_test_noise"}])
"""

SUITE = """\
name: noisy
plugins: [./rng_test_plugin.py]
defaults:
  rounds: 4
  num_clients: 6
  seeds: [0, 1]
  participation: {rate: 0.5}
  local: {epochs: 1, batch_size: 8, lr: 0.05}
  model: {name: logistic}
  checkpoint_every: 1
datasets:
  - name: synthetic
    params: {num_users: 6, dim: 10, num_classes: 3, max_samples: 60}
    split: {kind: natural}
methods: [rng_test_noisy]
"""


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    folder = tmp_path_factory.mktemp("noisy")
    (folder / "rng_test_plugin.py").write_text(NOISY_TERM)
    (folder / "noisy.yaml").write_text(SUITE)
    return folder / "noisy.yaml"


def run(suite, results, *extra) -> list[tuple]:
    """The draws of one `fedbench run` (the plugin module is imported once per process)."""
    draws = sys.modules["rng_test_plugin"].DRAWS if "rng_test_plugin" in sys.modules else []
    before = len(draws)
    assert main(["run", str(suite), "--no-tracking", "--threads", "1", "--results-dir", str(results), *extra]) == 0
    return sys.modules["rng_test_plugin"].DRAWS[before:]


def first_per_client_round(draws) -> dict:
    found = {}
    for seed, rnd, client, value in draws:
        found.setdefault((seed, rnd, client), value)  # the first local step's draw
    return found


def test_a_plugin_terms_draws_differ_across_seeds_and_clients(suite, tmp_path):
    found = first_per_client_round(run(suite, tmp_path / "r"))
    by_seed = {seed: {k[1:]: v for k, v in found.items() if k[0] == seed} for seed in (0, 1)}
    shared = by_seed[0].keys() & by_seed[1].keys()  # (round, client) trained under both seeds (fixed by the seeds)
    assert len(by_seed[0]) == len(by_seed[1]) == 4 * 3 and shared
    assert all(by_seed[0][key] != by_seed[1][key] for key in shared)
    assert len(set(found.values())) == len(found), "two clients or rounds drew the same noise"


def test_a_resumed_job_draws_and_ends_bit_identically(suite, tmp_path):
    (job0, job1) = load_jobs(suite)[1]
    straight = run(suite, tmp_path / "straight", "--only", job0.id)
    stopped = run(suite, tmp_path / "resumed", "--only", job0.id, "--stop-after", "2")
    resumed = run(suite, tmp_path / "resumed", "--only", job0.id)
    assert {d[1] for d in stopped} == {0, 1} and {d[1] for d in resumed} == {2, 3}
    assert stopped + resumed == straight
    a, b = (torch.load(JobDir(Store(tmp_path / r), job0.id).model, weights_only=True) for r in ("straight", "resumed"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
