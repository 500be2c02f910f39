"""put_all's bookkeeping (the Kinesis PutRecords pattern), free of I/O so the sync and async clients share it.

Send a batch; keep what was admitted; put the refused items first in line and send again after a back-off;
repeat until every item passed, can never pass, or used up its retries. Each submission of an item carries its
own request id, `<base>.<attempt>`: a transport retry of the same submission repeats that id (the platform
replays its first decision, so nothing is counted twice), while a resubmission after a refusal uses the next
attempt number (the same id would only replay the refusal).

With a ProducerShaper (quota_client.producer), a round is first shaped locally: it takes, in order, the pending
items whose key's share of the round still fits that key's buckets (a key's items stay in order: once one of them
does not fit, the key's later items wait for a later round), up to `batch_size`; then it waits until the shaper
holds the tokens for all of it, and takes them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from quota_client.backoff import Backoff
from quota_client.producer import Key, ProducerShaper, cost_of, key_of
from quota_client.types import CheckItem, Decision, PutAllResult

MAX_BATCH_ITEMS = 1000


class PutAllRun:
    def __init__(
        self,
        items: Sequence[CheckItem],
        *,
        batch_size: int,
        policy: Backoff,
        run_id: str,
        clock: Callable[[], float] = time.monotonic,
        shaper: ProducerShaper | None = None,
    ) -> None:
        if not 1 <= batch_size <= MAX_BATCH_ITEMS:
            raise ValueError(f"batch_size must be from 1 to {MAX_BATCH_ITEMS}, not {batch_size!r}.")
        self.items = list(items)
        self.batch_size = batch_size
        self.policy = policy
        self.run_id = run_id
        self.pending = list(range(len(self.items)))
        self.attempts = [0] * len(self.items)
        self.result = PutAllResult(backoff=policy.metrics)
        self.shaper = shaper
        if shaper is not None:
            shaper.needs(self.items)  # a negative cost is refused before anything is sent
            self._keys = [key_of(item) for item in self.items]
            self._costs = [{unit: cost_of(item, unit) for unit in shaper.rates} for item in self.items]
            self._key_count = len(set(self._keys))
        self._clock = clock
        self._started = clock()

    @property
    def done(self) -> bool:
        return not self.pending

    def next_batch(self) -> list[tuple[int, CheckItem]]:
        """The next submissions: (item index, the item with this attempt's request id)."""
        return [(index, self._submission(index)) for index in self.pending[: self.batch_size]]

    def next_round(self) -> tuple[list[tuple[int, CheckItem]], float]:
        """The next submissions and 0.0; or, when the shaper cannot take them yet, none and the seconds to wait
        before asking again."""
        if self.shaper is None:
            return self.next_batch(), 0.0
        chosen = self._shaped_selection(self.shaper)
        wait = self.shaper.take([self.items[index] for index in chosen])
        if wait > 0:
            self.result.shaped_s += wait
            self.result.shaper_waits += 1
            return [], wait
        return [(index, self._submission(index)) for index in chosen], 0.0

    def _shaped_selection(self, shaper: ProducerShaper) -> list[int]:
        """Pending items in order, up to batch_size, each key's share within its buckets' capacity (a key's
        first item always: one costlier than a full bucket goes alone, once its bucket is full)."""
        chosen: list[int] = []
        taken: dict[Key, dict[str, int]] = {}
        closed: set[Key] = set()
        for index in self.pending:
            if len(chosen) == self.batch_size or len(closed) == self._key_count:
                break
            key = self._keys[index]
            if key in closed:
                continue
            costs = self._costs[index]
            so_far = taken.get(key)
            if so_far is None:
                taken[key] = dict(costs)
                chosen.append(index)
                continue
            total = {unit: so_far[unit] + cost for unit, cost in costs.items()}
            if shaper.fits_alone(total):
                taken[key] = total
                chosen.append(index)
            else:
                closed.add(key)  # its later items wait, so a key's items keep their order
        return chosen

    def _submission(self, index: int) -> CheckItem:
        item = self.items[index]
        base = (item.request_id or f"{self.run_id}-{index}")[:100]
        return item.with_request_id(f"{base}.{self.attempts[index]}")

    def record(self, batch: Sequence[tuple[int, CheckItem]], decisions: Sequence[Decision]) -> tuple[list[int], float]:
        """Account for one round; returns (indexes admitted now, delay before the next round)."""
        self.result.rounds += 1
        admitted: list[int] = []
        refused: list[tuple[int, Decision]] = []
        for (index, _), decision in zip(batch, decisions, strict=True):
            if decision.allowed:
                admitted.append(index)
                self.result.degraded += decision.degraded
            elif decision.retry_after_ms is None:
                self.result.failed[index] = decision  # denied by a rule, or costlier than the capacity
            else:
                self.attempts[index] += 1
                if self.policy.max_retries is not None and self.attempts[index] > self.policy.max_retries:
                    self.result.failed[index] = decision
                else:
                    refused.append((index, decision))
        sent = {index for index, _ in batch}
        self.pending = [index for index, _ in refused] + [index for index in self.pending if index not in sent]
        self.result.admitted.extend(admitted)
        self.result.resubmitted += len(refused)
        delay = self._delay(refused)
        self.result.slept_s += delay
        self.result.elapsed_s = self._clock() - self._started
        return admitted, delay

    def _delay(self, refused: list[tuple[int, Decision]]) -> float:
        if refused:
            floor = min(decision.retry_after_ms or 0 for _, decision in refused) / 1000
            return self.policy.on_throttle(floor)
        if self.pending:
            return self.policy.on_success()
        return 0.0

    def finish(self) -> PutAllResult:
        self.result.elapsed_s = self._clock() - self._started
        self.result.backoff = self.policy.metrics.snapshot()
        return self.result
