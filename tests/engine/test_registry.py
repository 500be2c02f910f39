"""The registry refuses an algorithm that leaves a trap: no silent cluster refund, no durability by default."""

from dataclasses import replace
from types import SimpleNamespace

import pytest

from apps.engine import InvalidCheck, LimitSpec
from apps.engine.algorithms.base import NOT_DURABLE
from apps.engine.durability import rebuild
from apps.engine.reference.base import Params
from apps.engine.registry import ALGORITHMS, register
from apps.engine.store.seeds import seed_text

GCRA = ALGORITHMS["gcra"]


def test_every_entry_declares_its_refund_and_durability() -> None:
    for entry in ALGORITHMS.values():
        assert entry.refund or entry.leased, entry.name
        assert entry.durable or entry.durability is NOT_DURABLE, entry.name


def test_an_entry_whose_fragments_define_no_refund_is_refused_at_registration() -> None:
    copy = replace(GCRA, name="copy", code="cp")  # gcra.lua defines ALG.gc.refund, not ALG.cp.refund
    with pytest.raises(ValueError, match="define no ALG.cp.refund"):
        register([SimpleNamespace(ENTRY=GCRA), SimpleNamespace(ENTRY=copy)])


def test_only_a_leased_algorithm_may_go_without_a_cluster_refund() -> None:
    no_refund = replace(GCRA, name="copy", code="cp", refund=False)
    with pytest.raises(ValueError, match="only a leased algorithm"):
        register([SimpleNamespace(ENTRY=no_refund)])


def test_a_taken_code_is_refused() -> None:
    with pytest.raises(ValueError, match="code 'gc' is taken"):
        register([SimpleNamespace(ENTRY=GCRA), SimpleNamespace(ENTRY=replace(GCRA, name="other"))])


def test_an_algorithm_declared_not_durable_refuses_durable_limits_and_rebuilds() -> None:
    with pytest.raises(InvalidCheck, match="not durable"):
        LimitSpec("x", "concurrency", 3, durable=True)
    spec = LimitSpec("x", "concurrency", 3)
    with pytest.raises(ValueError, match="not durable"):
        rebuild(spec, Params(3, 0, 3), [(0, 1)], 60_000)
    with pytest.raises(ValueError, match="not durable"):
        seed_text(LimitSpec("t", "session_time", 60, period_s=3600), Params(60, 3_600_000, 60), [(0, 1)], 60_000)
    # The lease set is rebuilt from its allocations' members (PostgreSQL keeps them), never from records.
    with pytest.raises(ValueError, match="members, not from records"):
        seed_text(spec, Params(3, 0, 3), [(0, 1)], 60_000)
    assert seed_text(spec, Params(3, 0, 3), ["YQ.1", "YQ.2"], 60_000) == "0|YQ.1,YQ.2"
