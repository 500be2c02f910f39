"""Usage on its way to PostgreSQL: tallied in the process that decided (tally.py), held and written in rounds
(pending.py), flushed on a graceful exit (shutdown.py). Redis keeps counters only."""
