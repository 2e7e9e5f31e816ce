"""The driver of runs: the loop that takes an agent through a session and writes its record
(merchantbench.record), resume, calibration and sweep identities."""
