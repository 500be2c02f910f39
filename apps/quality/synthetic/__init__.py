"""Synthetic traffic of seed 004's scenario against a running platform, recorded on the generator's own side.

    from apps.quality.synthetic import Generator, Scenario, config_document

    record = Generator(Scenario(seed=4, duration_s=30), "http://127.0.0.1:8000", api_key).run()
    record.customers["syn-a00"].max_parallel()   # what the audit of the platform's log must find

No Django import here (bench/quality/generate.py runs it outside the project); `config_document` is the
configuration to import first (`manage.py generate_traffic --setup` does that).
"""

from apps.quality.synthetic.record import CustomerRecord, Session, TrafficRecord, max_in_window, max_parallel
from apps.quality.synthetic.runner import Generator
from apps.quality.synthetic.scenario import Scenario, config_document

__all__ = [
    "CustomerRecord",
    "Generator",
    "Scenario",
    "Session",
    "TrafficRecord",
    "config_document",
    "max_in_window",
    "max_parallel",
]
