"""Reports of runs: Markdown with Table 1 beside the paper's figures, and PNG figures.

The figures module imports matplotlib; it is loaded only when a report is written.
"""

from merchantbench.report.markdown import (
    render_comparison,
    render_report,
    write_report,
    write_run_report,
)
from merchantbench.report.paper import PAPER_LABEL, load_paper_table, table1_line

__all__ = [
    "PAPER_LABEL",
    "load_paper_table",
    "render_comparison",
    "render_report",
    "table1_line",
    "write_report",
    "write_run_report",
]
