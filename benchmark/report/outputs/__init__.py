"""The report's outputs, one module each, in the order written (report_output.py): the convergence and
per-client figures, the sensitivity figures, report.json, runs.csv, each table's .csv and .tex, report.md
and report.html. A new output is one module here (or a plugin's) registering its ReportOutput."""
