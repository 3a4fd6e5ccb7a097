"""runs.csv: a row per job, with every number behind the tables' cells."""

from benchmark.report.report_files import runs_csv, write_text
from benchmark.report.report_output import OUTPUTS, ReportInputs, ReportOutput


@OUTPUTS.register
class RunsCsv(ReportOutput):
    name = "runs.csv"
    order = 30

    def write(self, report: ReportInputs):
        return [write_text(report.view.report / "runs.csv", runs_csv(report.runs, report.tables, report.jobs))]
