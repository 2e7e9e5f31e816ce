"""Reports: one report of a market (a run is the market of one merchant), Markdown with Table 1
beside the paper's rows and SVG figures (a market's own figures are drawn with matplotlib,
loaded only when an arena's report is written).
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
