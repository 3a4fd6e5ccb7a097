"""FedAc against the authors' released runs: their files read under the stated rules, the values
carried in the suites, and the report's per-cell comparison and summary (hand-computed)."""

from __future__ import annotations

import math
import os

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from engine.test_fedac_batched import shared_suite
from fedtest import REPO, write_suite
from papers.test_paper_suites import REFERENCE
from report.test_fedac_report import fake_results

from benchmark.cli import cli
from benchmark.papers import fedac_authors
from benchmark.papers.paper_settings import GenerationError
from benchmark.protocols.fedac import power, recompute
from benchmark.protocols.fedac.compare import comparison_summary, comparisons, self_agreement
from benchmark.protocols.fedac.report import Cell
from benchmark.suite.expand import load_jobs
from benchmark.suite.overrides import Overrides
from benchmark.suite.schema import Suite

HEADER = "runid,dataset,alg,lambd,eta,M,K,T,local_batch,seed,record_intvl,final_loss,best_loss\n"


def _authors_file(tmp_path, rows: list[tuple]) -> None:
    """rows: (alg, eta, M, K, final_loss) at lambda = 1e-3."""
    folder = tmp_path / fedac_authors.FOLDER
    folder.mkdir(exist_ok=True)
    lines = [
        f"r{i},a9a,{a},0.001,{eta},{m},{k},4096,1,1,512,{loss},{loss}" for i, (a, eta, m, k, loss) in enumerate(rows)
    ]
    (folder / "out_a9a_1e-03_summary.csv").write_text(HEADER + "\n".join(lines) + "\n")


def test_the_authors_files_are_read_under_the_stated_rules(tmp_path, monkeypatch):
    monkeypatch.setattr(fedac_authors, "f_star", lambda lam: 0.33)
    _authors_file(
        tmp_path,
        [
            (0, 0.1, 4, 1, 0.40),
            (0, 0.2, 4, 1, 0.35),
            (0, 0.2, 4, 1, 0.35),  # a duplicate that agrees counts once
            (0, 0.5, 4, 1, "nan"),  # diverged: out of the choice
            (1, 0.01, 4, 1, 0.34),
            (1, 0.01, 4, 512, 0.331),  # K = 512: dropped
            (2, 0.01, 4, 1, 0.36),
            (3, 0.2, 4, 1, 0.30),  # MB-SGD: not a method of the suite below
        ],
    )
    labels = ["FedAvg", "FedAc-I", "FedAc-II", fedac_authors.AUTHORS_BETA]
    block = fedac_authors.authors_reference(tmp_path, 1e-3, labels, 1, [4])
    assert block["f_star"] == 0.33 and block["source"] == "fedac_authors/out_a9a_1e-03_summary.csv"
    fedac2 = {4: [0.03, 0.01]}  # their FedAc-II runs: carried for both β, scored only for the authors' β
    assert block["best"] == {
        "FedAvg": {4: [0.02, 0.2]},
        "FedAc-I": {4: [0.01, 0.01]},
        "FedAc-II": fedac2,
        fedac_authors.AUTHORS_BETA: fedac2,
    }
    assert list(block["not_compared"]) == ["FedAc-II"] and "2α²/(α − 1)" in block["not_compared"]["FedAc-II"]
    assert fedac_authors.authors_reference(tmp_path, 1e-3, ["FedAc-I"], 512, [4])["best"] == {}
    assert fedac_authors.authors_lrs(tmp_path, 1e-3) == [0.01, 0.1, 0.2, 0.5]


def test_duplicated_rows_that_disagree_stop_the_generator(tmp_path):
    _authors_file(tmp_path, [(0, 0.1, 4, 1, 0.40), (0, 0.1, 4, 1, 0.41)])
    with pytest.raises(GenerationError, match=r"appears twice with final losses 0.4, 0.41"):
        fedac_authors.read_runs(fedac_authors.summary_file(tmp_path, 1e-3))


def _cell(finished: dict, authors: tuple, not_compared: str = "") -> Cell:
    """finished: η -> final F − F* of seed 0, 1, ... (None: diverged)."""
    runs: dict = {}
    for lr, values in finished.items():
        for seed, value in enumerate(values):
            fate = "finished" if value is not None else "diverged"
            runs.setdefault(seed, {})[lr] = (value, fate, f"s{seed}-{lr}")
    return Cell(lrs=sorted(finished), runs=runs, authors=authors, not_compared=not_compared)


def test_the_comparison_and_its_summary_are_hand_computed():
    cells = {
        # each seed's best over η: 1.5 (η 0.1), 1.0 (η 0.2): mean 1.25; authors 0.9: ratio 0.72, within 1.5x.
        # The best η by seed mean (0.2, mean 1.5, range [1, 2]) would put it 1.67x off and outside.
        ("FedAvg", 4, 1): _cell({0.1: [1.5, 2.5], 0.2: [2.0, 1.0]}, (0.9, 0.2)),
        # each seed best at η 0.1 (the grid's edge): mean 1.1, range [1.0, 1.2]; authors 2.0: ratio 1.82, within 2.5x
        # only; their η 0.05 outside the grid
        ("FedAc-I", 4, 1): _cell({0.1: [1.0, 1.2], 0.2: [3.0, 3.0]}, (2.0, 0.05)),
        # mean 2.5; authors 1.2: ratio 0.48 (2.08x below): within 2.5x only, but inside [1, 4]: agrees
        ("MB-SGD", 4, 1): _cell({0.1: [1.0, 4.0]}, (1.2, 0.1)),
        ("FedAc-II", 4, 1): _cell({0.1: [1.0, 1.0]}, (9.0, 0.1), "β differs"),
    }
    by_method = {c.method: c for c in comparisons(cells)}
    assert math.isclose(by_method["FedAvg"].ratio, 0.72) and by_method["FedAvg"].agrees
    assert (by_method["FedAvg"].low, by_method["FedAvg"].high, by_method["FedAvg"].seeds) == (1.0, 1.5, 2)
    assert (by_method["FedAc-I"].low, by_method["FedAc-I"].high) == (1.0, 1.2) and not by_method["FedAc-I"].agrees
    assert by_method["MB-SGD"].agrees and not by_method["MB-SGD"].within(1.5)
    assert by_method["FedAc-I"].text == "1.10e+00 [1.00e+00, 1.20e+00] vs 2.00e+00 (0.05 ^): x1.82"
    assert by_method["FedAc-II"].text.endswith(": not compared")
    assert comparison_summary(cells) == (
        "authors vs fedbench (best final F − F* over η of each run; fedbench: 2 seeds per cell): 3 cells compared "
        "(shown, not compared: FedAc-II: β differs); "
        "ratio within 1.5x: 1 of 3 (33.3 %), within 2.5x: 3 of 3 (100.0 %); authors' value within 1.5x of "
        "fedbench's seed mean or inside its seed range: 2 of 3 (66.7 %); '^' = the authors' best η lies outside "
        "the grid fedbench ran: 1 cells, 1 of them with a seed's best η at the edge of fedbench's grid\n"
        "agreement per method: FedAvg 1 of 1 (100.0 %), FedAc-I 0 of 1 (0.0 %), MB-SGD 1 of 1 (100.0 %)\n"
        # MB-SGD at K = 1 is FedAvg: counted once. Ratios 0.9/1.25 = 0.72 and 2.0/1.1 = 1.818: median 1.269; a
        # resample of two cells has the median 0.72, 1.269 or 1.818. Ranks 0 and 2 of 0..2: the rank sum 2 is
        # its mean; chi-square ((1 - 2/3)² + (2/3)² + (1 - 2/3)²) / (2/3) = 1 on 2 df: p = e^-0.5 = 0.61. Scaled by 1.25
        # and 1.5 FedAvg's 0.9 passes its seed 1.0: rank sum 3 against 2, z = 1 / √(4/3), p = 0.39
        "stated power, over the paper's own cells, each once (2; left out: 0 cells the suite adds, 1 duplicates "
        "of an identical algorithm at K = 1): median ratio authors / fedbench seed mean 1.269 (95 % bootstrap "
        "interval 0.720-1.818, 10000 resamples of the cells, seed 0); the authors' value below the seed mean in "
        "1 of 2 cells (50.0 %)\n"
        "the authors' rank among the seeds (seeds below it), cells per rank 0..2: 1 0 1; rank-sum test z = 0.0, p = 1; "
        "chi-square on the rank histogram p = 0.61; the authors' values scaled: x0.67 p = 1, x0.8 p = 1, "
        "x0.9 p = 1, x1.1 p = 1, x1.25 p = 0.39, x1.5 p = 0.39\n"
        "p-values treat cells as independent; they are not (one w₀ per seed, one for all of the authors' runs)"
    )


def test_each_seed_is_its_own_best_and_the_seeds_agreement_with_each_other_is_counted():
    # seed 0: 1.0 (η 0.1); seed 1: 1.2 (η 0.2, its η 0.1 diverged); seed 2: 3.0 (η 0.1);
    # left out: seed 3 (its η 0.2 not run), seed 4 (no η 0.2 at all), seed 5 (every η diverged)
    cell = _cell({0.1: [1.0, None, 3.0, 0.1, 0.1, None], 0.2: [2.0, 1.2, 4.0]}, (1.1, 0.1))
    cell.runs[3][0.2] = (None, "not run", "s3-0.2")
    cell.runs[5][0.2] = (None, "diverged", "s5-0.2")
    assert cell.seed_bests() == [(1.0, 0.1, "s0-0.1"), (1.2, 0.2, "s1-0.2"), (3.0, 0.1, "s2-0.1")]
    # 1.0 against {1.2, 3.0}: 2.1x from their mean, outside [1.2, 3]; 1.2 against {1.0, 3.0}: inside;
    # 3.0 against {1.0, 1.2}: 2.7x, outside
    assert self_agreement({("FedAvg", 4, 1): cell}) == (1, 3)
    assert self_agreement({("FedAvg", 4, 1): _cell({0.1: [1.0, 1.2, 3.0]}, None)}) == (0, 0)  # no authors' value
    summary = comparison_summary({("FedAvg", 4, 1): cell}).splitlines()
    assert next(line for line in summary if line.startswith("fedbench's own")) == (
        "fedbench's own seeds, each against the other seeds by the same rule (what one run reaches; "
        "against one seed fewer than the authors' value): 1 of 3 (33.3 %)"
    )


def test_a_cell_without_a_complete_seed_is_counted_not_compared():
    cell = _cell({0.1: [1.0, 2.0], 0.2: [None, None]}, (1.1, 0.1))
    for seed in (0, 1):
        cell.runs[seed][0.2] = (None, "failed", f"s{seed}-0.2")
    assert comparisons({("FedAvg", 4, 1): cell}) == []
    assert comparison_summary({("FedAvg", 4, 1): cell}) == (
        "1 cells not compared: no seed has a best (an η of each failed or was not run)"
    )


def _suite_with_authors(tmp_path, **reference):
    """FedAvg at M = 4, K = 3, η ∈ {0.05, 0.2}; the authors' value 3e-3 at η 0.2."""
    raw = shared_suite(["fedavg"], clients=4, lrs=[0.05, 0.2]).model_dump(mode="json", exclude_unset=True)
    authors = {"source": "hand-made.csv", "f_star": 0.3, "best": {"FedAvg": {4: [3e-3, 0.2]}}}
    raw["datasets"][0]["reference"] = {
        "source": "hand-made",
        "metrics": [],
        "rows": {},
        "authors": authors,
        **reference,
    }
    return write_suite(tmp_path, raw)


def test_report_prints_the_comparison_per_k_and_the_summary(tmp_path):
    path = _suite_with_authors(tmp_path)
    jobs = load_jobs(path)[1]
    fake_results(tmp_path / "results", jobs, [4e-3, 2e-3])  # best η 0.2: 2e-3; authors 3e-3: ratio 1.5
    result = CliRunner().invoke(cli, ["report", str(path), "--results-dir", str(tmp_path / "results")])
    assert result.exit_code == 0, result.output
    assert "ratio within 1.5x: 1 of 1 (100.0 %)" in " ".join(result.output.split())
    md = (tmp_path / "results" / "fedac-batched" / "report" / "report.md").read_text()
    assert "K = 3: the best final F(w) − F* over η of each run: fedbench's seed mean [range] vs the authors'" in md
    assert "2.00e-03 vs 3.00e-03 (0.2): x1.50" in md and "ratio within 1.5x: 1 of 1 (100.0 %)" in md
    assert "\n\nauthors vs fedbench (best final F − F* over η of each run" in md  # a paragraph of its own
    # the comparison's .csv holds numbers, not the cell's display text
    row = pd.read_csv(tmp_path / "results" / "fedac-batched" / "report" / "tables" / "fedac_K3_authors.csv").iloc[0]
    assert (row["method"], row["K"], row["M"], row["seeds"]) == ("FedAvg", 3, 4, 1)
    assert (row["subopt_mean"], row["authors_subopt"], row["authors_eta"]) == pytest.approx((2e-3, 3e-3, 0.2))
    assert row["ratio"] == pytest.approx(1.5) and bool(row["agrees"]) and pd.isna(row["not_compared"])


@pytest.mark.skipif(not REFERENCE.is_dir(), reason="shared/reference is not beside the checkout")
def test_figure_suites_carry_the_authors_best_over_eta():
    """Recomputed here with pandas from the authors' file: min over η of final_loss − F* per cell."""
    for name, lam in (("fedac.fig1", "1e-03"), ("fedac.fig2", "1e-04"), ("fedac.appendix_lambda0.01", "1e-02")):
        suite = Suite(**yaml.safe_load((REPO / "suites" / "papers" / f"{name}.yaml").read_text()))
        runs = pd.read_csv(REFERENCE / "fedac_authors" / f"out_a9a_{lam}_summary.csv")
        for entry in suite.datasets:
            k, authors = entry.local["steps"], entry.reference.parts["authors"]
            for method, by_m in authors.best.items():
                alg = {v: a for a, v in fedac_authors.ALG.items()}[fedac_authors.COMPARED_WITH.get(method, method)]
                for m, (value, eta) in by_m.items():
                    mine = runs[(runs.alg == alg) & (runs.M == m) & (runs.K == k)].dropna(subset=["final_loss"])
                    best = mine.loc[mine.final_loss.idxmin()]
                    assert math.isclose(value, best.final_loss - authors.f_star, rel_tol=1e-5), (name, method, m, k)
                    assert eta == best.eta
    fig1 = (
        Suite(**yaml.safe_load((REPO / "suites/papers/fedac.fig1.yaml").read_text()))
        .datasets[0]
        .reference.parts["authors"]
    )
    assert fig1.best[fedac_authors.AUTHORS_BETA] == fig1.best["FedAc-II"] and list(fig1.not_compared) == ["FedAc-II"]
    appendix = Suite(**yaml.safe_load((REPO / "suites/papers/fedac.appendix_lambda0.01.yaml").read_text()))
    assert set(appendix.datasets[0].reference.parts["authors"].best) == {"FedAvg", "FedAc-I", "MB-SGD", "MB-AC-SGD"}


@pytest.mark.skipif(not os.environ.get("FEDBENCH_DATA"), reason="FEDBENCH_DATA is not set (a9a needed)")
def test_f_star_is_the_minimum_of_the_authors_objective():
    """F* at λ = 1e-3 lies below every final loss the authors recorded, and not far below the best."""
    if not REFERENCE.is_dir():
        pytest.skip("shared/reference is not beside the checkout")
    runs = pd.read_csv(REFERENCE / "fedac_authors" / "out_a9a_1e-03_summary.csv")
    fstar = fedac_authors.f_star(1e-3)
    assert fstar < runs.final_loss.min() < fstar + 1e-4


def test_a_cell_run_with_another_setting_is_not_compared(tmp_path):
    path = _suite_with_authors(tmp_path, stated={"all": {"rounds": 4}})
    jobs = load_jobs(path, Overrides.parse(rounds=2))[1]
    fake_results(tmp_path / "results", jobs, [4e-3, 2e-3])
    args = ["report", str(path), "--results-dir", str(tmp_path / "results"), "--rounds", "2"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "0 cells compared (shown, not compared: FedAvg: ran rounds 4 -> 2)" in " ".join(result.output.split())
    md = (tmp_path / "results" / "fedac-batched" / "report" / "report.md").read_text()
    assert "2.00e-03 vs 3.00e-03 (0.2): not compared" in md


def test_ranks_and_the_rank_sum_test_are_hand_computed():
    assert power.rank(2.0, (1.0, 2.0, 3.0)) == 1.5  # one seed below, one tie
    # two cells of 2 seeds, the reference below both: rank sum 0 against its mean 2, variance 2 · 2·4/12 = 4/3:
    # z = 2 / √(4/3) = 1.732, two-sided p = 0.0833
    below = [power.Pair(0.5, (1.0, 2.0)), power.Pair(0.1, (0.2, 0.3))]
    assert math.isclose(power.rank_sum_p(below), 0.08326, rel_tol=1e-3)
    assert power.rank_sum_p([p.scaled(5.0) for p in below]) == power.rank_sum_p(below)  # now above both seeds
    assert power.rank_sum_p([p.scaled(5.0) for p in below[:1]] + below[1:]) == 1.0  # ranks 2 and 0: the mean
    assert power.rank_histogram(below) == [2, 0, 0]
    assert power.rank_histogram([power.Pair(1.0, (1.0,))] + below) is None  # seed counts differ


def test_the_median_ratio_interval_and_the_held_out_seeds():
    assert power.median_interval([0.5, 0.5, 0.5]) == (0.5, 0.5, 0.5)
    median, low, high = power.median_interval([0.5, 1.0, 4.0])
    assert median == 1.0 and low == 0.5 and high == 4.0  # a resample of 3 can be all one value
    # four cells, seeds (2, 3, 4), authors 1.5: held out, seed 2 ranks 0 of its 2 others, seed 3 1, seed 4 2:
    # seeds 2 and 4 reject alone (z = 4 / √(8/3) = 2.45, p = 0.014); at x1.5 seed 2 reaches the middle
    pairs = [power.Pair(1.5, (2.0, 3.0, 4.0))] * 4
    own = power.held_out(pairs)
    assert [[p.reference for p in cells] for cells in own] == [[2.0] * 4, [3.0] * 4, [4.0] * 4]
    assert [power.rank_sum_p(cells) < power.ALPHA for cells in own] == [True, False, True]
    # held-out seeds 2 and 4 already sit at the extreme z (±2.45): no offset can be told from them
    assert power.smallest_detected(own, up=True) is None and power.smallest_detected(own, up=False) is None
    # half the cells with the seeds the other way round: every held-out seed has z = 0; upwards seed 3 passes
    # its others at x1.34, seeds 2 and 4 at x2.01: all ranks 2, z = 4 / √(8/3) = 2.45 > 1.96
    mixed = power.held_out(pairs[:2] + [power.Pair(1.5, (4.0, 3.0, 2.0))] * 2)
    assert [power.rank_sum_z(cells) for cells in mixed] == [0.0, 0.0, 0.0]
    assert power.smallest_detected(mixed, up=True) == 2.01 and power.smallest_detected(mixed, up=False) == 1 / 2.01
    # reference ranks all 0 of 0..3: rank sum 0 against 6, variance 4 · 3·5/12 = 5: p = 2 Φ(−6/√5) = 0.0073
    text = power.power_summary(pairs, 0, 0)
    assert "rank-sum test z = -2.7, p = 0.0073; chi-square on the rank histogram p = 0.0074" in text
    assert "x1 2 of 3" in text and "their z from -2.4 to 2.4" in text and ": none within 3x and none within 3x" in text


def test_added_cells_and_identical_algorithms_are_left_out_of_the_stated_power():
    cells = {
        ("FedAvg", 4, 1): _cell({0.1: [1.0, 2.0]}, (1.0, 0.1)),
        ("MB-SGD", 4, 1): _cell({0.1: [1.0, 2.0]}, (1.0, 0.1)),  # FedAvg's cell again
        ("MB-SGD", 4, 2): _cell({0.1: [1.0, 2.0]}, (3.0, 0.1)),  # not at K = 2
        ("FedAvg", 2, 2): _cell({0.1: [1.0, 2.0]}, (1.0, 0.1)),  # M = 2: added below the paper's 2^2
        (fedac_authors.AUTHORS_BETA, 4, 2): _cell({0.1: [1.0, 2.0]}, (1.0, 0.1)),  # added
        ("FedAc-II", 4, 2): _cell({0.1: [1.0, 2.0]}, (1.0, 0.1), "β differs"),  # not compared at all
    }
    pairs, added, duplicates = power.pairs_of(cells)
    assert pairs == [power.Pair(1.0, (1.0, 2.0), (0, 1)), power.Pair(3.0, (1.0, 2.0), (0, 1))]
    assert (added, duplicates) == (2, 1)
    assert power.pairs_of({("MB-SGD", 4, 1): cells["MB-SGD", 4, 1]})[0]  # without FedAvg in the suite it counts


def test_the_comparison_recomputes_from_the_reports_runs_csv(tmp_path):
    path = _suite_with_authors(tmp_path)
    jobs = load_jobs(path)[1]
    fake_results(tmp_path / "results", jobs, [4e-3, 2e-3])
    assert CliRunner().invoke(cli, ["report", str(path), "--results-dir", str(tmp_path / "results")]).exit_code == 0
    report = tmp_path / "results" / "fedac-batched" / "report"
    result = CliRunner().invoke(recompute.main, [str(path), str(report / "runs.csv")])
    assert result.exit_code == 0, result.output
    md = (report / "report.md").read_text()
    assert result.output.startswith("authors vs fedbench"), result.output
    assert all(line in md for line in result.output.splitlines()), md
    (tmp_path / "broken.csv").write_bytes(b"\x1f\x8b\x08garbage")
    broken = CliRunner().invoke(recompute.main, [str(path), str(tmp_path / "broken.csv")])
    assert broken.exit_code == 2 and "not a readable CSV" in broken.output and "Traceback" not in broken.output
    (tmp_path / "other.csv").write_text("job_id,status\nabc,finished\n")
    other = CliRunner().invoke(recompute.main, [str(path), str(tmp_path / "other.csv")])
    assert other.exit_code == 2 and "lacks the columns final_subopt" in other.output


def test_a_seed_is_held_out_by_its_number_across_cells():
    # seed 0 has no best in the second cell (its η 0.2 not run): seed 1 must not take its place there
    first = _cell({0.1: [1.0, 2.0, 3.0]}, (2.0, 0.1))
    second = _cell({0.1: [5.0, 6.0, 7.0, 8.0], 0.2: [9.0, 9.0, 9.0, 9.0]}, (6.5, 0.1))
    second.runs[0][0.2] = (None, "not run", "s0-0.2")
    pairs, _, _ = power.pairs_of({("FedAvg", 4, 2): first, ("FedAc-I", 4, 2): second})
    assert pairs[1] == power.Pair(6.5, (6.0, 7.0, 8.0), (1, 2, 3))
    held = power.held_out(pairs)
    assert [[p.reference for p in cells] for cells in held] == [[1.0], [2.0, 6.0], [3.0, 7.0], [8.0]]
    assert held[1][1] == power.Pair(6.0, (7.0, 8.0))
