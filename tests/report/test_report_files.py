"""`fedbench report` files: tables with hand-computed cells (mean ± std, paper Δ, best marked, lost jobs,
grid collapsed by the stated rule, sensitivity), Markdown / HTML / CSV / LaTeX / runs.csv."""

from __future__ import annotations

import pandas as pd
import pytest
from fedtest import tiny_suite, write_suite

from benchmark.cli import main
from benchmark.report.entry_tables import SELECTION_RULE
from benchmark.store.job_dir import JobDir, atomic_write_json
from benchmark.store.layout import Store
from benchmark.suite.expand import load_jobs


def _summary(final_ema: float, acc2: float, reached: int | None = None, status: str = "finished") -> dict:
    return {
        "status": status,
        "rounds_completed": 4,
        "final_acc": final_ema + 1,
        "final_ema_acc": final_ema,
        "bytes_down": 200,
        "bytes_up": 200,
        "wall_time_s": 2.0,
        "metrics": {"acc@2": acc2, "rounds_to@30": reached or ">4", "bytes_to@30": reached and 100 * reached},
    }


def _hand_made(tmp_path):
    suite = tiny_suite(methods=["fedavg", "fedprox", {"preset": "fedacg", "grid": {"server.lam": [0.8, 0.9]}}])
    suite["defaults"]["seeds"] = [0, 1]
    suite["datasets"][0]["reference"] = {
        "source": "hand-made",
        "metrics": ["acc@2"],
        "rows": {"FedAvg": [45.0], "FedACG[lam=0.9]": [50.0]},
    }
    path = write_suite(tmp_path, suite)
    s, jobs = load_jobs(path)
    results = {
        ("FedAvg", 0): _summary(50.0, 40.0, reached=3),
        ("FedAvg", 1): _summary(54.0, 44.0),
        ("FedACG[lam=0.8]", 0): _summary(60.0, 48.0, reached=2),
        ("FedACG[lam=0.8]", 1): {"status": "diverged", "diverged_at_round": 3, "metrics": {}},
        ("FedACG[lam=0.9]", 0): _summary(55.0, 46.0, reached=2),
        ("FedACG[lam=0.9]", 1): _summary(57.0, 47.0, reached=2),
    }
    for job in jobs:
        if summary := results.get((job.method_label, job.config.seed)):
            atomic_write_json(JobDir(Store(tmp_path / "results"), job.id).summary, summary)
    return path, s, jobs


def test_report_files_from_hand_made_results(tmp_path, capsys):
    path, suite, jobs = _hand_made(tmp_path)
    assert main(["report", str(path), "--results-dir", str(tmp_path / "results"), "--no-tracking"]) == 0
    out = tmp_path / "results" / "tiny" / "report"
    table = pd.read_csv(out / "tables" / "synthetic.csv").set_index("method")
    fedavg, fedacg, fedprox = table.loc["FedAvg"], table.loc["FedACG"], table.loc["FedProx"]
    # tidy: numbers in their own columns, no "±" strings
    assert not table.map(lambda v: "±" in str(v)).any().any()
    # 40, 44: mean 42, sample std 2.83; paper 45
    assert (fedavg["acc@2.mean"], fedavg["acc@2.n"], fedavg["acc@2.paper"], fedavg["acc@2.delta"]) == (42, 2, 45, -3)
    assert fedavg["acc@2.std"] == pytest.approx(2 * 2**0.5)
    assert (fedavg["rounds_to@30.mean"], fedavg["rounds_to@30.n"], fedavg["seeds"]) == (3, 1, "2")  # 1 of 2 reached
    # lam=0.8 has the higher mean (60) but a diverged seed: lam=0.9 (55, 57) is chosen
    assert fedacg["settings"] == "server.lam=0.9" and fedacg["final_ema_acc.mean"] == 56
    assert fedacg["final_ema_acc.std"] == pytest.approx(2**0.5)
    assert (fedacg["acc@2.mean"], fedacg["acc@2.paper"], fedacg["acc@2.delta"]) == (46.5, 50, -3.5)
    assert (fedacg["bytes_to@30.mean"], fedacg["bytes_to@30.std"], fedacg["rounds_to@30.mean"]) == (200, 0, 2)
    # paired over seeds 0, 1: FedACG 55, 57 minus FedAvg 50, 54 = 5, 3: mean 4, sd √2, t(0.975, 1) = 12.7062
    paired = "final_ema_acc-vs-baseline"
    assert (fedacg[f"{paired}.mean"], fedacg[f"{paired}.n"]) == (4, 2)
    assert fedacg[f"{paired}.ci_low"] == pytest.approx(4 - 12.7062047, abs=1e-6)
    assert fedacg[f"{paired}.ci_high"] == pytest.approx(4 + 12.7062047, abs=1e-6)
    assert fedprox["acc@2.n"] == 0 and pd.isna(fedprox["acc@2.mean"])
    assert (fedprox["seeds"], fedprox["status"]) == ("0/2", "not run")
    assert set(table.loc["FedAvg", "jobs"].split()) == {j.id for j in jobs if j.method_label == "FedAvg"}

    sensitivity = pd.read_csv(out / "tables" / "synthetic.sensitivity.csv")
    lam8 = sensitivity.set_index("setting").loc["FedACG[lam=0.8]"]
    assert (lam8["seeds"], lam8["status"], lam8["chosen"]) == ("1/2", "finished 1, diverged@3 1", False)
    assert lam8["final_ema_acc.mean"] == 60
    assert list(sensitivity.chosen) == [False, True]

    md = (out / "report.md").read_text()
    assert SELECTION_RULE in md and "[^synthetic-1]: jobs " in md and "(seed 1)" in md
    # FedACG leads acc@2 by 6 and 3 at seeds 0, 1: no paired test at 2 seeds separates that, so no bold
    assert "| 46.50 ± 0.71 (paper 50.00, Δ −3.50) |" in md and "**" not in md.split("## ")[1]
    tex = (out / "tables" / "synthetic.tex").read_text()
    assert r"46.50 $\pm$ 0.71 (paper 50.00, $\Delta$ $-$3.50) \\" in tex and r"\toprule" in tex
    assert "% not shown: final_ema_acc-vs-baseline," in tex  # the rest does not fit beside the paper's numbers
    # ready to \input: centred, captioned, labelled; statuses as footnotes, not a column
    assert r"\centering" in tex and r"\caption{synthetic" in tex and r"\label{tab:synthetic}" in tex
    assert "status" not in tex and r"FedProx$^{a}$" in tex and r"$^{a}$ not run" in tex
    sensitivity_tex = (out / "tables" / "synthetic.sensitivity.tex").read_text()
    assert r"$^{a}$ finished 1, diverged@3 1" in sensitivity_tex
    html = (out / "report.html").read_text()
    assert '<td id="synthetic-3-1" title="jobs ' in html and 'id="job-' in html and 'class="best"' not in html
    runs = pd.read_csv(out / "runs.csv")
    assert len(runs) == len(jobs) == 8 and set(runs.status.fillna("")) == {"finished", "diverged", "not run"}
    assert "report.html" in capsys.readouterr().out
    assert "](figures/sensitivity-synthetic.png)" in md and (out / "figures" / "sensitivity-synthetic.png").exists()
    assert html.count('src="data:image/png;base64,') == 1  # the sensitivity plot, embedded
    # the sensitivity table's best only among settings whose every seed finished (lam=0.8 lost one): none
    assert "| 60.00 |" in md and "**60.00**" not in md


def test_report_of_a_real_run_with_a_diverging_grid_point_attached_to_mlflow(tmp_path, mlflow_store):
    import mlflow

    suite = tiny_suite(grid={"local.lr": [0.05, 1e4]})  # 1e4 without clipping: logits overflow in round 6
    suite["defaults"].update(rounds=8, seeds=[0, 1])
    suite["defaults"]["local"].update(clip_norm=None)
    path = write_suite(tmp_path, suite)
    results, uri = tmp_path / "results", mlflow_store("mlflow.db")
    assert main(["run", str(path), "--results-dir", str(results), "--tracking-uri", uri, "-q"]) == 0
    assert main(["report", str(path), "--results-dir", str(results), "--tracking-uri", uri]) == 0
    out = results / "tiny" / "report"
    table = pd.read_csv(out / "tables" / "synthetic.csv").set_index("method")
    assert list(table.settings) == ["local.lr=0.05", "local.lr=0.05"] and list(table.seeds) == [2, 2]
    sensitivity = pd.read_csv(out / "tables" / "synthetic.sensitivity.csv")
    diverged = sensitivity[sensitivity.setting.str.contains("local.lr=10000")]
    assert len(diverged) == 2 and list(diverged["acc@2.n"]) == [0, 0] and diverged["acc@2.mean"].isna().all()
    assert all(s.startswith("diverged@") for s in diverged.status)
    # unsmoothed accuracy beside the EMA one, from the round records
    fedavg_jobs = [j for j in load_jobs(path)[1] if j.setting_label == "FedAvg local.lr=0.05"]
    raw = [JobDir(Store(results), j.id).read_metrics()[1].test_acc for j in fedavg_jobs]
    mean, std = sum(raw) / 2, abs(raw[0] - raw[1]) / 2**0.5
    assert table.loc["FedAvg", "acc_raw@2.mean"] == pytest.approx(mean)
    assert table.loc["FedAvg", "acc_raw@2.std"] == pytest.approx(std)
    runs = pd.read_csv(out / "runs.csv")
    summaries = {j: JobDir(Store(results), j).read_summary() for j in runs.job_id}
    assert all(runs.status == [summaries[j].status for j in runs.job_id])
    assert all(runs["final_acc"].fillna(-1) == [summaries[j].final_acc or -1 for j in runs.job_id])

    client = mlflow.tracking.MlflowClient(uri)
    experiment = client.get_experiment_by_name("tiny").experiment_id
    [parent] = client.search_runs([experiment], "tags.`fedbench.kind` = 'suite'")
    attached = {a.path for a in client.list_artifacts(parent.info.run_id, "report")}
    assert {"report/report.md", "report/report.html", "report/runs.csv", "report/tables"} <= attached
    assert "report/tables/synthetic.tex" in {a.path for a in client.list_artifacts(parent.info.run_id, "report/tables")}


def test_paper_rows_match_the_most_specific_label():
    from benchmark.report.cells import match_reference

    rows = {"FedACG[lam=0.8]": [1], "fedavg": [2], "FedACG": [3]}
    assert match_reference(["FedACG[lam=0.8] local.lr=0.1", "FedACG[lam=0.8]", "FedACG"], rows) == "FedACG[lam=0.8]"
    assert match_reference(["FedACG[lam=0.9] local.lr=0.1", "FedACG[lam=0.9]", "FedACG"], rows) == "FedACG"
    assert match_reference(["FedAvg local.lr=0.1", "FedAvg", "FedAvg"], rows) == "fedavg"  # case ignored last
    assert match_reference(["FedProx", "FedProx", "FedProx"], rows) is None


def test_report_folder_that_cannot_be_written_exits_2(tmp_path, capsys):
    path, _, _ = _hand_made(tmp_path)
    (tmp_path / "results" / "tiny").mkdir()  # the suite's view: the hand-made jobs are in the store only
    (tmp_path / "results" / "tiny" / "report").write_text("a file where the report folder goes")
    assert main(["report", str(path), "--results-dir", str(tmp_path / "results"), "--no-tracking"]) == 2
    err = capsys.readouterr().err
    assert "cannot write the report under" in err and "Traceback" not in err


def test_report_without_an_mlflow_store_creates_none(tmp_path, capsys, monkeypatch):
    path, _, _ = _hand_made(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert main(["report", str(path), "--results-dir", str(tmp_path / "results")]) == 0
    assert "no MLflow run of suite 'tiny'" in capsys.readouterr().err and not (tmp_path / "mlflow.db").exists()


def test_bytes_to_a_target_every_method_reached_when_the_suite_names_none(tmp_path):
    from benchmark.report.entry_tables import add_round_metrics

    jobs = pd.DataFrame(
        {
            "job_id": ["a", "b"],
            "method": ["FedAvg", "FedACG"],
            "status": ["finished"] * 2,
            "final_ema_acc": [61.5, 70.0],
        }
    )
    rounds = pd.DataFrame(
        {
            "job_id": ["a"] * 3 + ["b"] * 3,
            "round": [1, 2, 3] * 2,
            "test_acc": [50.0, 60.0, 65.0, 55.0, 72.0, 71.0],
            "ema_acc": [50, 59, 61.5, 55, 62, 70],
            "bytes": [10, 20, 30, 10, 20, 30],
        }
    )
    target, notes = add_round_metrics(jobs, rounds, ["acc@2"], convex=False)
    assert target == 61 and "61%" in notes[0]  # FedAvg, the weakest, ends at 61.5
    assert list(jobs["bytes_to@61"]) == [30, 20] and list(jobs["acc_raw@2"]) == [60.0, 72.0]
    assert add_round_metrics(jobs.copy(), rounds, ["rounds_to@60"], convex=False) == (None, [])
