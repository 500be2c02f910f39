"""Who is changing configuration right now, and through which doors: read when a change is recorded.

The actor is, in this order: a name given with `history_actor()`, the user logged in to the request
being served (set by HistoryRequestMiddleware), the Celery job running, the management command this
process runs (`manage.py import_limits ...` gives "import_limits (command)"), else "system".
Services name themselves with `history_via()`, so a row says e.g. "admin › toggles refresh".
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.http import HttpRequest

SYSTEM_ACTOR = "system"
VIA_SEPARATOR = " › "
# How manage.py is started: `./manage.py`, `python manage.py`, `django-admin`, `python -m django`.
COMMAND_PROGRAMS = ("manage.py", "django-admin", "__main__.py")

_actor: ContextVar[str | None] = ContextVar("history_actor", default=None)
_request: ContextVar[HttpRequest | None] = ContextVar("history_request", default=None)
_job: ContextVar[str | None] = ContextVar("history_job", default=None)
_via: ContextVar[tuple[str, ...]] = ContextVar("history_via", default=())


@dataclass(frozen=True)
class Actor:
    name: str
    user: Any = None  # the logged-in user, when the actor is one


@contextmanager
def history_actor(actor: str) -> Iterator[None]:
    """Record changes made inside the block as made by `actor` (e.g. "nightly sync (script)")."""
    token = _actor.set(actor)
    try:
        yield
    finally:
        _actor.reset(token)


@contextmanager
def history_via(door: str) -> Iterator[None]:
    """Name the service or door changes made inside the block pass through ("config import")."""
    token = _via.set(_via.get() if door in _via.get() else (*_via.get(), door))
    try:
        yield
    finally:
        _via.reset(token)


@contextmanager
def history_request(request: HttpRequest) -> Iterator[None]:
    token = _request.set(request)
    try:
        yield
    finally:
        _request.reset(token)


@contextmanager
def history_job(name: str) -> Iterator[None]:
    token = _job.set(name)
    try:
        yield
    finally:
        _job.reset(token)


def job_start(name: str) -> object:
    """For Celery's prerun/postrun signals, which cannot wrap the task in a `with` block."""
    return _job.set(name)


def job_end(token: object) -> None:
    try:
        _job.reset(token)  # type: ignore[arg-type]
    except ValueError:  # the run ended in another context than it started (not Celery's prefork pool)
        _job.set(None)


def actor_current() -> Actor:
    if explicit := _actor.get():
        return Actor(explicit)
    user = request_user()
    if user is not None:
        return Actor(user.get_username(), user)
    if job := _job.get():
        return Actor(f"{job} (job)")
    if command := _command_of_this_process():
        return Actor(f"{command} (command)")
    return Actor(SYSTEM_ACTOR)


def request_user() -> Any:
    """The user logged in to the request being served, or None (no request, or nobody logged in)."""
    request = _request.get()
    # Read lazily: resolving the user costs a session lookup, and most requests change nothing.
    user = getattr(request, "user", None)
    return user if user is not None and user.is_authenticated else None


def via_current() -> str:
    doors = list(_via.get())
    request = _request.get()
    if request is not None:
        match = getattr(request, "resolver_match", None)
        doors.insert(0, "admin" if match is not None and "admin" in match.namespaces else request.path)
    return VIA_SEPARATOR.join(doors)


def _command_of_this_process() -> str | None:
    if len(sys.argv) > 1 and Path(sys.argv[0]).name in COMMAND_PROGRAMS and not sys.argv[1].startswith("-"):
        return sys.argv[1]
    return None
