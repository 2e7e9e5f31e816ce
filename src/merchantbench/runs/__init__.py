"""Run records, checkpoints and the loop that drives an agent through a session."""
