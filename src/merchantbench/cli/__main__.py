"""`python -m merchantbench.cli`: the same as the `merchantbench` command."""

from merchantbench.cli import main

main()
