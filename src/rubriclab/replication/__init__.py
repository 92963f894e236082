"""The replication page: every claim of the three works (resources/replication/claims_*.yaml),
the run's evidence for each (readers_<work>), and an honest verdict (verdicts)."""
