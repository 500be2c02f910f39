"""Alert rules' services: conditions (what each kind finds), evaluation (the beat job), delivery and webhooks
(notifications), job_outcomes (what the beat jobs last did)."""
