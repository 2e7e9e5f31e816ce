"""Sweeps: grids of agents × models × harnesses × scenarios × seeds (docs/sweeps.md)."""
