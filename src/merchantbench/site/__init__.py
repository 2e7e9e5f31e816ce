"""`merchantbench site`: a static leaderboard site of run records (docs/site.md).

`build_site(inputs, out)` reads every run under the paths given (runs, sweeps, folders of
sweeps), groups them by configuration identity (`groups.comparable_key`), replays each to mark
it verified or not (`verification`), and writes a folder of pages with relative links only:
a ranking per comparable group with its provenance, and a page per run with its figures and
its trace viewer (the model's words beside the tool calls). No page loads anything from
outside the folder; it opens from `file://` and publishes on any static host as it is.
"""

from merchantbench.site.build import SiteError, SiteSummary, build_site

__all__ = ["SiteError", "SiteSummary", "build_site"]
