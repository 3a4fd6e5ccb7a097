"""figures/sensitivity-<entry>.png: a table's sensitivity rows drawn, shown under its sensitivity table."""

from benchmark.report.report_files import add_sensitivity_figure
from benchmark.report.report_output import OUTPUTS, ReportInputs, ReportOutput


@OUTPUTS.register
class SensitivityFigures(ReportOutput):
    name = "sensitivity figures"
    order = 10

    def write(self, report: ReportInputs):
        with_grid = [t for t in report.tables if t.sensitivity]
        for t in with_grid:
            add_sensitivity_figure(t, report.runs, report.jobs, report.view.figures, report.figure_width)
        return [t.sensitivity.figure.path for t in with_grid if t.sensitivity.figure]
