"""report.md and report.html: one jinja2 rendering each of the same tables and figures (templates/)."""

from typing import ClassVar

from benchmark.report.report_files import render, write_text
from benchmark.report.report_output import OUTPUTS, ReportInputs, ReportOutput


class Document(ReportOutput):
    """report/<file>, rendered from templates/<file>.j2."""

    file: ClassVar[str]

    def write(self, report: ReportInputs):
        return [write_text(report.view.report / self.file, render(f"{self.file}.j2", report))]


@OUTPUTS.register
class ReportMarkdown(Document):
    name = file = "report.md"
    order = 90


@OUTPUTS.register
class ReportHtml(Document):
    name = file = "report.html"
    order = 91
