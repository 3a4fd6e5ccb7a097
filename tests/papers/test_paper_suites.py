"""Paper suites carry the reference numbers and run the papers' stated settings; the committed
files match their generator; `plan --audit` finds no mismatch in any of them."""

from __future__ import annotations

import copy
import os
import re

import pytest
import yaml
from click.testing import CliRunner
from fedtest import REPO, write_suite

from benchmark.cli import cli, main
from benchmark.data.participation import sample_clients
from benchmark.papers.audit import audit, job_value
from benchmark.papers.generate import TOP_LEVEL
from benchmark.papers.generate import main as generate
from benchmark.papers.paper_quotes import PAPER_FILES, normalised
from benchmark.papers.paper_settings import GenerationError
from benchmark.papers.paper_suites import suites_from
from benchmark.suite.expand import load_jobs

# The papers' transcribed tables (the generator's input, not part of the repository): a shared/reference
# folder beside the checkout, or one level further up when the checkout is one of several worktrees.
REFERENCE = next(
    (p / "shared" / "reference" for p in (REPO.parent, REPO.parent.parent) if (p / "shared" / "reference").is_dir()),
    REPO.parent / "shared" / "reference",
)
PAPER_SUITES = sorted((REPO / "suites" / "papers").glob("*.yaml")) + [REPO / "suites" / "table1.yaml"]
# the replay suite runs the FedAc authors' released runs, not a paper's table: it states no setting of a
# paper's text (its settings are the authors' files'); tests/papers/test_fedac_replay.py checks it
PAPER_TABLE_SUITES = [path for path in PAPER_SUITES if path.stem != "fedac.authors_replay"]
needs_reference = pytest.mark.skipif(not REFERENCE.is_dir(), reason="shared/reference is not beside the checkout")


def jobs_of(name: str):
    return load_jobs(REPO / "suites" / "papers" / f"{name}.yaml")


def by_method(jobs, dataset_index=0):
    return {j.method_label: j.config for j in jobs if j.dataset_index == dataset_index}


def test_table1_carries_fedacg_table_1():
    suite, jobs = load_jobs(REPO / "suites" / "table1.yaml")
    entry = suite.datasets[0]
    assert entry.reference.source == "fedacg.moderate_dir0.3.cifar10"
    assert entry.reference.rows["FedACG"] == [85.13, 89.1, 319, 450]
    assert len(suite.datasets) == 6 and all(j.config.model.name == "resnet18_gn" for j in jobs)
    first = jobs[0].config
    assert (first.num_clients, first.participation.rate, first.local.batch_size, first.local.epochs) == (
        100,
        0.05,
        50,
        5,
    )


def test_sensitivity_columns_become_method_grids():
    suite, jobs = load_jobs(REPO / "suites" / "papers" / "fedacg.lambda_sensitivity.dir0.3.yaml")
    assert sorted(j.config.method.param("server.lam") for j in jobs) == [0.75, 0.8, 0.85, 0.9]
    assert suite.datasets[0].reference.rows["FedACG[lam=0.8]"] == [82.52]


@needs_reference
@pytest.mark.skipif(
    not os.environ.get("FEDBENCH_DATA"), reason="F* of the FedAc authors' runs needs a9a ($FEDBENCH_DATA)"
)
def test_committed_paper_suites_match_the_generator(tmp_path):
    assert generate([str(REFERENCE), str(tmp_path)]) == 0
    for path in tmp_path.glob("*.yaml"):
        committed = REPO / "suites" / (path.name if path.name in TOP_LEVEL else f"papers/{path.name}")
        assert yaml.safe_load(committed.read_text()) == yaml.safe_load(path.read_text()), path.name


def test_the_generator_without_its_two_folders_prints_its_usage(capsys, tmp_path):
    assert generate([str(tmp_path)]) == 2
    assert "usage: python -m benchmark.papers.generate REFERENCE_DIR OUTDIR" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize("path", PAPER_TABLE_SUITES, ids=lambda p: p.stem)
def test_audit_finds_no_mismatch_in_any_paper_suite(path):
    suite, jobs = load_jobs(path)
    rows = audit(suite, jobs, written=jobs)
    assert rows, "every paper suite states settings to audit"
    assert [r for r in rows if not r.ok] == []


def test_audit_marks_a_suite_that_runs_another_setting(tmp_path):
    raw = yaml.safe_load((REPO / "suites" / "papers" / "fedcm.settingI_iid.yaml").read_text())
    raw["datasets"][1]["method_overrides"]["FedCM"]["local"]["batch_size"] = 20  # paper: 50
    path = write_suite(tmp_path, raw)
    result = CliRunner().invoke(cli, ["plan", str(path), "--audit"])
    assert result.exit_code == 1, result.output
    assert "MISMATCH" in result.output and "1 mismatch" in result.output


@pytest.mark.parametrize(
    "args, named",
    [
        (["--set", "local.batch_size=32"], "local.batch_size (50 -> 32, 20 -> 32)"),
        (["--rounds", "10"], "rounds (4000 -> 10)"),
        (["--set", "local.lr=1.0", "--set", "participation.rate=0.5"], "participation.rate (0.1 -> 0.5)"),
        (["--set", "local.intra_round_decay=true", "--only", "FedCM"], "local.intra_round_decay (false -> true)"),
    ],
)
def test_audit_applies_the_command_line(args, named):
    """A setting changed on the command line is a mismatch, never 'swept': the paper's numbers are not for it."""
    path = REPO / "suites" / "papers" / "fedcm.settingI_iid.yaml"
    result = CliRunner().invoke(cli, ["plan", str(path), "--audit", *args])
    assert result.exit_code == 1, result.output
    assert named in result.output and "swept" not in result.output


@pytest.mark.parametrize(
    "suite, args",
    [
        ("papers/fedcm.settingI_iid.yaml", ["--seeds", "0,1,2", "--only", "FedCM"]),
        ("fedac_small.yaml", ["--set", "local.lr=0.01"]),  # one point of the suite's own η grid
    ],
)
def test_audit_passes_a_selection_of_the_suites_own_jobs(suite, args):
    result = CliRunner().invoke(cli, ["plan", str(REPO / "suites" / suite), "--audit", *args])
    assert result.exit_code == 0, result.output


def test_audit_names_a_value_outside_the_suites_grid():
    result = CliRunner().invoke(
        cli, ["plan", str(REPO / "suites" / "fedac_small.yaml"), "--audit", "--set", "local.lr=0.3"]
    )
    assert result.exit_code == 1
    assert "local.lr (0.001, 0.002, 0.005" in result.output and "10.0 -> 0.3)" in result.output


def test_fedagm_local_iteration_tables_run_their_k():
    for k in (50, 70, 100):
        _, jobs = jobs_of(f"fedagm.local_iters_K{k}")
        assert {job_value(j, "local.iterations") for j in jobs} == {k}
        assert {j.config.local.epochs for j in jobs} == {5}  # batch size set so 5 epochs make K steps (001:562)


def test_fedcm_cifar100_trains_its_methods_as_stated():
    """004:646: batch 50 for FedCM and FedAdam, 20 for others; 2 epochs except FedCM in setting II;
    FedDyn decay 0.999 and α 0.001 in setting II; Bernoulli participation; raw accuracy."""
    suite, jobs = jobs_of("fedcm.settingII_iid")
    c100 = by_method(jobs, 1)
    assert (c100["FedCM"].local.batch_size, c100["FedCM"].local.epochs) == (50, 5)
    assert (c100["FedAdam"].local.batch_size, c100["FedAdam"].local.epochs) == (50, 2)
    assert (c100["FedAvg"].local.batch_size, c100["FedAvg"].local.epochs) == (20, 2)
    assert c100["FedDyn"].local.lr_decay == 0.999 and c100["FedDyn"].method.param("server.alpha") == 0.001
    assert c100["FedCM"].method.client[0].params.alpha == 0.05
    adam = c100["FedAdam"].method.server.params
    assert (adam.global_lr, adam.tau, adam.per_step) == (0.1, 0.01, True)
    assert all(c.participation.mode == "bernoulli" for c in c100.values())
    assert suite.datasets[1].reference.metrics == ["acc_raw@4000"]
    c10 = by_method(load_jobs(REPO / "suites" / "papers" / "fedcm.settingI_dir0.6.yaml")[1], 0)
    assert c10["FedCM"].method.client[0].params.alpha == 0.1 and c10["FedDyn"].local.lr_decay == 0.9995


def test_fedcm_alpha_table_is_bernoulli_and_raw():
    suite, jobs = jobs_of("fedcm.alpha_sensitivity.settingI_dir0.6")
    assert {j.config.participation.mode for j in jobs} == {"bernoulli"}
    assert suite.datasets[0].reference.metrics == ["acc_raw@4000"]


def test_dynamic_client_suites_draw_ten_of_the_pool():
    for name, mode in (("fedacg_iclr.dynamic_clients", "resample"), ("fedacg.dynamic_pool_final", "replace")):
        _, jobs = jobs_of(name)
        p = jobs[0].config.participation
        assert (p.pool.size, p.pool.mode, p.relative_to) == (250, mode, "pool")
        assert {len(sample_clients(0, t, 500, p)) for t in (0, 100, 555)} == {10}
    assert jobs[0].config.participation.pool.replace_prob == 0.5


def test_ablation_local_reg_row_uses_fedacg_momentum():
    _, jobs = jobs_of("fedacg.ablation_components")
    m = by_method(jobs)
    assert m["FedAvgM w local reg"].method.param("server.beta") == 0.85
    assert m["FedAvgM w local reg"].method.client[0].params.mu == 0.01
    assert m["FedAvgM"].method.param("server.beta") == 0.4


def test_quantization_suite_compares_fedpaq_with_and_without_acg():
    suite, jobs = jobs_of("fedacg.quantization")
    assert {j.method_label for j in jobs} == {"FedPAQ", "FedPAQ+ACG"}
    assert all(j.config.method.uplink.name == "qsgd" for j in jobs)
    assert all(v is None for e in suite.datasets for row in e.reference.rows.values() for v in row)


def test_cells_the_paper_contradicts_are_flagged():
    suite, _ = jobs_of("fedacg.moderate_dir0.3")
    ref = suite.datasets[0].reference
    assert "86.52" in ref.is_contradicted("FedDC", "rounds_to@85")
    assert ref.is_contradicted("FedACG", "rounds_to@85") is None
    agm = jobs_of("fedagm.moderate_dir0.3")[0].datasets[0].reference
    assert agm.is_contradicted("FedAvg", "rounds_to@84") and agm.is_contradicted("FedAGM", "rounds_to@87")


@needs_reference
def test_a_setting_the_generator_cannot_express_is_an_error(tmp_path):
    table = yaml.safe_load((REFERENCE / "fedcm.yaml").read_text())["tables"][0]
    for key, value in (("server_momentum", 0.9), ("lr_decay", "0.998 (FedAvg 0.99)")):
        bad = copy.deepcopy(table)
        bad["setting"][key] = value
        (tmp_path / "fedcm.yaml").write_text(yaml.safe_dump({"tables": [bad]}))
        with pytest.raises(GenerationError, match=key):
            suites_from([tmp_path / "fedcm.yaml"])
    assert generate([str(tmp_path), str(tmp_path / "out")]) == 2


def test_report_marks_contradicted_paper_cells():
    from rich.console import Console

    from benchmark.report.table import result_tables

    suite, jobs = jobs_of("fedacg.moderate_dir0.3")
    summaries = {j.id: {"status": "finished", "metrics": {"rounds_to@85": 300}} for j in jobs if j.dataset_index == 0}
    console = Console(width=400, record=True)
    console.print(result_tables(suite, jobs, summaries, wide=True)[0])
    text = console.export_text()
    feddc = next(line for line in text.splitlines() if line.strip("│ ").startswith("FedDC"))
    assert "519 †" in feddc and "FedDC rounds_to@85" in text


@needs_reference
def test_ablation_check_marks_must_match_the_compositions(tmp_path):
    tables = yaml.safe_load((REFERENCE / "fedacg.yaml").read_text())["tables"]
    table = copy.deepcopy(next(t for t in tables if t["id"] == "fedacg.ablation_components.cifar10"))
    table["components"]["FedAvgM w local reg"] = [True, True, True]  # claims a lookahead it does not run
    (tmp_path / "fedacg.yaml").write_text(yaml.safe_dump({"tables": [table]}))
    with pytest.raises(GenerationError, match="FedAvgM w local reg"):
        suites_from([tmp_path / "fedacg.yaml"])


def test_audit_of_a_suite_without_stated_settings_says_so(capsys):
    assert main(["plan", str(REPO / "suites" / "quickstart.yaml"), "--audit"]) == 2
    assert "no dataset entry has reference.stated" in capsys.readouterr().err


READINGS = {  # suite -> (method or None, setting, its class now)
    "fedcm.settingI_iid": ("FedAdam", "method.server.per_step", "assumed"),
    "fedagm.iid_100clients_p5": (None, "participation.mode", "read from the text"),
    "fedacg.moderate_iid": ("FedProx", "method.client.prox.mu", "assumed"),
}


@pytest.mark.papers
@pytest.mark.parametrize("name", sorted(READINGS))
def test_readings_leave_stated_with_the_sentence_they_rest_on(name, papers_root):
    """Each of issue 36's three readings is out of `stated`, in `chosen` with its class, and the sentence its
    reason quotes is in the cited paper's text (whitespace aside)."""
    method, setting, status = READINGS[name]
    suite = yaml.safe_load((REPO / "suites" / "papers" / f"{name}.yaml").read_text())
    for entry in suite["datasets"]:
        ref = entry["reference"]
        assert setting not in ref["stated"].get(method or "all", {}), (name, setting)
        (reading,) = [c for c in ref["chosen"] if c["setting"] == setting and c.get("method") == method]
        assert reading["status"] == status
        paper, quote = re.match(r"(\d{3}):\d+[^']*'([^']+)'", reading["reason"]).groups()
        text = normalised((papers_root / f"{PAPER_FILES[paper]}.txt").read_text())
        assert normalised(quote) in text, (name, quote)
    rows = audit(*jobs_of(name))
    assert {r.status for r in rows if r.setting == setting and r.method == (method or r.method)} == {status}
