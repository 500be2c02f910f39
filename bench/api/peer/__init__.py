"""A tiny Django project served by bench/api/run.py beside the platform: the peer and the ceilings.

- /peer/ratelimit: a minimal DRF view protected by django-ratelimit (fixed window per customer, django-redis cache).
- /peer/bare: a bare DRF view doing one EVALSHA of a trivial fixed-window script (the single-check ceiling).
- /peer/bare/batch: a bare DRF view running one script over the keys of every batch item (the batch ceiling).
"""
