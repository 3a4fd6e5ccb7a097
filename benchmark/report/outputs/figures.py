"""figures/convergence-<entry>.png and clients-<entry>.png (.pdf beside each): report/figures.py."""

from benchmark.report.figures import report_figures
from benchmark.report.report_output import OUTPUTS, ReportInputs, ReportOutput


@OUTPUTS.register
class ConvergenceFigures(ReportOutput):
    name = "convergence figures"
    order = 5

    def write(self, report: ReportInputs):
        drawn = report_figures(report.suite, report.jobs, report.store, report.figure_width)
        report.figures += drawn
        return [figure.path for figure in drawn]
