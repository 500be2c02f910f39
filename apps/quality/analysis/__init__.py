"""The quality audit of issue 17 (seed 004): pure Python, no Django, one linear pass over the decision log.

Public API: Event (events.py), audit() (audit.py), AuditReport and Violation (report.py), StreamOrderError (merge.py).
"""

from apps.quality.analysis.audit import audit
from apps.quality.analysis.events import Event
from apps.quality.analysis.merge import StreamOrderError
from apps.quality.analysis.report import AuditReport, Violation

__all__ = ["AuditReport", "Event", "StreamOrderError", "Violation", "audit"]
