"""The web front end: the human playground (`merchantbench play`, `merchantbench study`) and the
read-only dashboard of run records. Server-rendered pages (Jinja2) with a little vanilla
JavaScript; every asset is served by the package. A person plays through the run's agent
surface exactly as an agent does (trace origin `human`)."""
