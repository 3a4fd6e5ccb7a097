"""report.json: the jobs behind the report and every table's tidy rows (docs/schemas/report.schema.json)."""

from benchmark.report.report_files import report_record, write_text
from benchmark.report.report_output import OUTPUTS, ReportInputs, ReportOutput
from benchmark.store.job_dir import strict_json


@OUTPUTS.register
class ReportJson(ReportOutput):
    name = "report.json"
    order = 20

    def write(self, report: ReportInputs):
        record = report_record(report.suite.name, report.runs, report.every_table)
        return [write_text(report.view.report / "report.json", strict_json(record, indent=2))]
