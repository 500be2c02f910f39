"""The quality page: an audit run of a real log (DecisionEvent rows audited by audit_quality_run) as an operator
reads it — violations with links to the limit and the customer, top monopolizers, a scope's charts."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from apps.console.quality_timeline import bucket_edges, held_per_bucket, points_per_bucket
from apps.customers.models import Customer
from apps.limits.models import Algorithm, Limit
from apps.quality.models import AuditRun, DecisionEvent
from apps.quality.services.audits import audit_quality_run, log_filters
from tests.customers.factories import CustomerFactory, PlanFactory
from tests.limits.factories import LimitFactory

T0 = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.UTC)
T0_MS = int(T0.timestamp() * 1000)
SESSIONS = "stream-sessions"


def quality_url(**query: str) -> str:
    url = reverse("console:quality")
    return url + ("?" + "&".join(f"{key}={value}" for key, value in query.items()) if query else "")


def lease_event(at_ms: int, kind: str, customer: str, lease: str, entry: int) -> DecisionEvent:
    return DecisionEvent(
        slot=f"q:dlog:{{{customer}}}", entry_id=f"{at_ms}-{entry}", at=dt.datetime.fromtimestamp(at_ms / 1000, dt.UTC),
        kind=kind, customer=customer, operation="Stream", limit=SESSIONS if kind != "expire" else "",
        algorithm="concurrency" if kind != "expire" else "", key=f"q:c:{{{customer}}}:{SESSIONS}", quantity=2,
        lease=lease, expires_ms=at_ms + 60_000 if kind == "acquire" else 0,
    )  # fmt: skip


def audited_log() -> AuditRun:
    """heavy-1 (plan heavy) holds 3 leases where its limit is 2 (one violation); light-1 (plan light) holds 1:
    the log as DecisionEvent rows, audited by audit_quality_run (also used by tests/browser/test_quality_page.py)."""
    CustomerFactory(external_id="heavy-1", plan=PlanFactory(name="heavy"))
    CustomerFactory(external_id="light-1", plan=PlanFactory(name="light"))
    LimitFactory(name=SESSIONS, algorithm=Algorithm.CONCURRENCY, quantity=2, period_seconds=3600)
    events = [
        lease_event(T0_MS + 100 * i, "acquire", "heavy-1", f"h{i}", i) for i in range(3)
    ] + [
        lease_event(T0_MS + 1000 + i, "release", "heavy-1", f"h{i}", 10 + i) for i in range(3)
    ] + [
        lease_event(T0_MS + 500, "acquire", "light-1", "l0", 20),
        lease_event(T0_MS + 800, "release", "light-1", "l0", 21),
    ]  # fmt: skip
    DecisionEvent.objects.bulk_create(events)
    filters = log_filters(start=T0 - dt.timedelta(minutes=1), end=T0 + dt.timedelta(minutes=1))
    return audit_quality_run(filters=filters).run


@pytest.fixture
def audited(db) -> AuditRun:
    return audited_log()


def test_the_latest_run_lists_its_violation_with_links_to_the_customer_and_the_limit(admin_client, audited) -> None:
    response = admin_client.get(quality_url())

    assert response.status_code == 200
    assert response.context["run"] == audited
    [violation] = response.context["violations"]
    assert (violation.customer, violation.limit, violation.kind) == ("heavy-1", SESSIONS, "over_concurrency")
    assert violation.at == T0 + dt.timedelta(milliseconds=200)
    page = response.content.decode()
    customer = Customer.objects.get(external_id="heavy-1")
    assert f'href="{reverse("admin:customers_customer_change", args=[customer.pk])}"' in page
    assert f'href="{reverse("admin:limits_limit_change", args=[Limit.objects.get(name=SESSIONS).pk])}"' in page


def test_the_top_monopolizer_is_charted_with_the_leases_it_held_at_once(admin_client, audited) -> None:
    response = admin_client.get(quality_url())

    assert [row["name"] for row in response.context["top_customers"]] == ["heavy-1", "light-1"]
    assert response.context["scope"].value == "customer:heavy-1"
    assert max(response.context["held"]) == 3 == response.context["scope_figures"]["max_concurrency"]["value"]
    page = response.content.decode()
    assert page.count('<svg class="usage-chart"') == 4  # top customers, top groups, held, score
    titles = [chart.title for chart in [*response.context["top_charts"], *response.context["scope_charts"]]]
    assert titles == [
        "Monopolization over time, top customers",
        "Monopolization over time, top groups",
        "Sessions held at once, customer heavy-1",
        "Monopolization over time, customer heavy-1",
    ]
    for title in titles:  # shown above each chart, not only inside the SVG for screen readers
        assert f"<figcaption><h3>{title}</h3></figcaption><svg" in page
    assert 'data-series="heavy-1"' in page
    assert 'data-series="held"' in page


def test_a_group_can_be_chosen_and_an_older_run_too(admin_client, audited) -> None:
    newer = audit_quality_run(filters=log_filters(start=T0 + dt.timedelta(hours=1), end=T0 + dt.timedelta(hours=2)))

    latest = admin_client.get(quality_url())
    older = admin_client.get(quality_url(run=str(audited.pk), scope="group:light"))

    assert latest.context["run"] == newer.run
    assert latest.context["violations"] == []
    assert "No decision was logged in the audited range, so no limit was checked" in latest.content.decode()
    assert "Every limit held" not in latest.content.decode()  # an hour without a log entry proves nothing
    assert older.context["run"] == audited
    assert older.context["scope"].value == "group:light"
    assert max(older.context["held"]) == 1


def test_an_unknown_run_says_so_and_shows_the_latest(admin_client, audited) -> None:
    response = admin_client.get(quality_url(run="999999"))

    assert response.context["notice"] == "There is no audit run 999999; showing the latest."
    assert response.context["run"] == audited


def test_without_any_run_the_page_says_how_to_make_one(admin_client, db) -> None:
    response = admin_client.get(quality_url())

    assert response.status_code == 200
    assert "manage.py audit_quality" in response.content.decode()


def test_a_staff_user_without_the_permission_is_refused(db) -> None:
    user = User.objects.create_user("nosy", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename="view_customer"))
    client = Client()
    client.force_login(user)

    response = client.get(quality_url())

    assert response.status_code == 403
    assert "Can view audit run" in response.content.decode()


def test_the_dashboard_links_the_quality_page(admin_client, db) -> None:
    assert f'href="{quality_url()}"' in admin_client.get(reverse("admin:index")).content.decode()


spans = st.lists(st.tuples(st.integers(0, 990), st.integers(1, 300), st.booleans()), max_size=12)


@given(spans)
def test_held_per_bucket_is_the_most_leases_live_at_any_instant_of_each_bucket(leases) -> None:
    events = []
    for index, (start, length, released) in enumerate(leases):
        events.append((start, "acquire", f"l{index}", start + length))
        if released:
            events.append((start + max(1, length // 2), "release", f"l{index}", 0))
    events.sort(key=lambda event: (event[0], event[1] == "acquire"))  # what ends at t ends before t starts
    edges = bucket_edges(0, 1000, 10)

    held = held_per_bucket(events, edges)

    ends = [start + (max(1, length // 2) if released else length) for start, length, released in leases]
    live = [[sum(s <= t < end for (s, _, _), end in zip(leases, ends, strict=True)) for t in range(b, b + 100)]
            for b in edges]  # fmt: skip
    assert held == [max(column) for column in live]


def test_points_per_bucket_carries_a_value_through_buckets_without_points() -> None:
    edges = bucket_edges(0, 400, 4)

    assert points_per_bucket([(10, 0.5), (20, 2.0), (30, 1.0), (250, 0.25)], edges) == [2.0, 1.0, 1.0, 0.25]


def test_openings_are_told_only_for_window_limits_on_the_operation_sessions_were_opened_with(admin_client, db) -> None:
    audited_log()  # heavy-1 opens 3 sessions on Stream, within a second
    limits = (("Scale", "scale-daily", 10, 86_400_000), ("Stream", "stream-opens", 50, 60_000))
    checks = [
        DecisionEvent(
            slot="q:dlog:{heavy-1}", entry_id=f"{T0_MS + at}-0", at=T0 + dt.timedelta(milliseconds=at),
            kind="allow" if i < quantity else "deny", customer="heavy-1", operation=operation, limit=limit,
            algorithm="fixed_window", key=f"q:c:{{heavy-1}}:{limit}", quantity=quantity, period_ms=period_ms,
            window_ms=T0_MS, mode="exact",
        )
        for n, (operation, limit, quantity, period_ms) in enumerate(limits)
        for i in range(40)
        if (at := 100 * n + i - 5000)  # before the sessions: a limit is learnt from the log
    ]  # fmt: skip
    DecisionEvent.objects.bulk_create(checks)
    run = audit_quality_run(filters=log_filters(start=T0 - dt.timedelta(minutes=1), end=T0 + dt.timedelta(minutes=1)))

    response = admin_client.get(quality_url(run=str(run.run.pk), scope="customer:heavy-1"))

    assert [(row.limit, row.value, row.quantity, row.window) for row in response.context["openings"]] == [
        ("stream-opens", 3, 50, "per minute")
    ]
    page = response.content.decode()
    assert "scale-daily" not in page.split('id="scope"')[1].split("</table>")[0]
    assert "Most sessions opened within one window of stream-opens (per minute)" in page
    assert "3 of the 50 it allows" in page


def test_a_run_whose_log_entries_all_held_says_every_limit_held(admin_client, db) -> None:
    CustomerFactory(external_id="light-1", plan=PlanFactory(name="light"))
    LimitFactory(name=SESSIONS, algorithm=Algorithm.CONCURRENCY, quantity=2, period_seconds=3600)
    held = [lease_event(T0_MS + at, kind, "light-1", "l0", at) for at, kind in ((500, "acquire"), (800, "release"))]
    DecisionEvent.objects.bulk_create(held)
    audit_quality_run(filters=log_filters(start=T0 - dt.timedelta(minutes=1), end=T0 + dt.timedelta(minutes=1)))

    page = admin_client.get(quality_url()).content.decode()

    assert "Every limit held over the audited range." in page
    assert "No decision was logged" not in page


def test_without_redis_the_page_says_the_log_needs_it_not_that_every_limit_held(admin_client, settings) -> None:
    settings.REDIS_URL = settings.COUNTERS_REDIS_URL = ""  # the embedded default

    response = admin_client.get(quality_url())

    page = response.content.decode()
    assert response.context["notice"].startswith("The decision log needs Redis (production setup: set REDIS_URL)")
    assert "The decision log needs Redis" in page
    assert "Every limit held" not in page
    assert "Run <code>manage.py audit_quality</code>" not in page  # it would only repeat the notice
