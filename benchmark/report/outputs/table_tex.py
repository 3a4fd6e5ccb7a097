"""tables/<table>.tex: each table in booktabs, ready to \\input (latex_table.py)."""

from benchmark.report.latex_table import table_tex
from benchmark.report.report_files import write_text
from benchmark.report.report_output import OUTPUTS, ReportInputs, ReportOutput


@OUTPUTS.register
class TableTex(ReportOutput):
    name = "table .tex"
    order = 41

    def write(self, report: ReportInputs):
        return [
            write_text(
                report.view.tables / f"{t.slug}.tex", table_tex(t, () if t.of_protocol else report.columns, report.wide)
            )
            for t in report.every_table
        ]
