"""Names, at the end of a run, the tests that took over SLOW_S without a `slow` mark.

A report, not a failure: durations depend on the machine and on what else it runs, and a test should not
fail for being slow on a busy day. The README promises that an unmarked test is quick; this says when one
stops being. Loaded for the whole suite by tests/conftest.py; under xdist it runs in the controller, which
receives every worker's reports.
"""

from __future__ import annotations

import pytest

SLOW_S = 30.0

_unmarked_slow: list[tuple[float, str]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # Setup and teardown count too: a module fixture that starts servers is the test's cost.
    if report.duration > SLOW_S and "slow" not in report.keywords:
        _unmarked_slow.append((report.duration, f"{report.nodeid} ({report.when})"))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _unmarked_slow:
        return
    terminalreporter.section(f"over {SLOW_S:.0f} s without a slow mark")
    for duration, name in sorted(_unmarked_slow, reverse=True):
        terminalreporter.write_line(f"{duration:7.1f}s {name}")
