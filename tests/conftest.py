"""Test-wide setup. Helper modules at the top of tests/ (record_rows) are importable from every
test directory, since pytest puts this directory on sys.path for this conftest."""
