"""CPU accounting for one phase, from /proc: the gunicorn process tree, wrk, Redis and the whole machine."""

from __future__ import annotations

import os
import resource
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
T = TypeVar("T")


def _stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat fields from the 3rd (state) on, or None if the process is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text[text.rindex(")") + 2 :].split()


def machine_busy_s() -> float:
    """CPU seconds every core of the machine has spent busy since boot (/proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = values
    return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS


def children_cpu_s() -> float:
    """CPU seconds of this process's reaped children (here: the wrk run that just ended)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def process_tree_cpu_s(master_pid: int) -> float:
    """CPU seconds of the gunicorn master, its live workers and the workers it has already reaped (cutime)."""
    ticks = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == master_pid:
            continue
        fields_ = _stat(int(entry.name))
        if fields_ and int(fields_[1]) == master_pid:  # ppid
            ticks += int(fields_[11]) + int(fields_[12])  # utime + stime
    master = _stat(master_pid)
    if master:
        ticks += sum(int(value) for value in master[11:15])  # utime, stime, cutime, cstime
    return ticks / CLOCK_TICKS


@dataclass(frozen=True)
class CpuSpent:
    """CPU seconds spent during one piece of work, by who spent them."""

    app: float  # the gunicorn master and its workers
    redis: float
    wrk: float  # this process's children that ended meanwhile
    machine: float  # every core, whoever used it

    @property
    def other(self) -> float:
        """What the rest of the machine used meanwhile: a busy machine makes the rates noisy."""
        return max(0.0, self.machine - self.app - self.redis - self.wrk)


def cpu_spent_during(work: Callable[[], T], server_pid: int, redis_cpu_s: Callable[[], float]) -> tuple[T, CpuSpent]:
    """Run `work` between two readings of every counter; the machine's readings are the outermost."""
    busy_before, wrk_before = machine_busy_s(), children_cpu_s()
    app_before, redis_before = process_tree_cpu_s(server_pid), redis_cpu_s()
    outcome = work()
    app_after, redis_after = process_tree_cpu_s(server_pid), redis_cpu_s()
    busy_after, wrk_after = machine_busy_s(), children_cpu_s()
    spent = CpuSpent(
        app=app_after - app_before,
        redis=redis_after - redis_before,
        wrk=wrk_after - wrk_before,
        machine=busy_after - busy_before,
    )
    return outcome, spent
