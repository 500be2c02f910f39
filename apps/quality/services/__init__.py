"""The decision log's services: drain (drain.py), loss check (losses.py), retention (purge.py), audit runs
(audits.py) and the beat jobs' entry points (jobs.py)."""
