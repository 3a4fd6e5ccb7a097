"""tables/<table>.csv: each table tidy, a row per (entry, method, setting)."""

from benchmark.report.report_files import table_csv, write_text
from benchmark.report.report_output import OUTPUTS, ReportInputs, ReportOutput


@OUTPUTS.register
class TableCsv(ReportOutput):
    name = "table .csv"
    order = 40

    def write(self, report: ReportInputs):
        return [write_text(report.view.tables / f"{t.slug}.csv", table_csv(t)) for t in report.every_table]
