from django.db import models

# What the amounts of a usage row are (the counters, session_ms) and what counts as a check: apps/usage/vocabulary.py.
# What tells one usage row from another in a table (the unique constraints, the upserts' ON CONFLICT): the bucket
# third, so the index still serves a customer's (and a customer x operation's) range of buckets.
UNIQUE_FIELDS = ("customer", "operation", "bucket", "service", "api_key")


LOCAL_DENIED_HELP = "Checks an SDK local limiter refused in the caller's process and reported; a part of denied."


class UsageBucket(models.Model):
    """Abstract: usage of one customer × operation × calling service × API key in one time bucket.

    Customers, operations and services are stored by name, not by foreign key: usage is history and
    must survive a customer, operation or service being renamed away or deleted. `service` is the calling
    service's name and `api_key` the calling key's prefix (never its secret), "" for checks made without them
    (the admin's session, the SDK's local limiter reporting without a key) and for rows counted before they
    were recorded.
    Every check the API answered is counted in exactly one of `allowed`, `denied`, `rule_denied` and
    `unavailable`; `shadow_denied` and `degraded` count a part of those again.
    `costs` holds the admitted cost per unit, e.g. {"requests": 12, "records": 3400}. `session_ms` is the time
    the customer's leases on the operation were held within the bucket (engine/store/sessions.py). `logged` counts
    the decisions whose entry the check script wrote into the decision log (limits with audit on, apps/quality): the
    loss check compares it with the entries drained. Not activity on its own: such decisions are in allowed or denied.
    """

    customer = models.CharField(max_length=200)
    operation = models.CharField(max_length=100)
    service = models.CharField(
        max_length=100, default="", db_default="", blank=True, help_text="The calling service's name; '' for none."
    )
    api_key = models.CharField(
        max_length=16, default="", db_default="", blank=True, help_text="The calling API key's prefix; '' for none."
    )
    bucket = models.DateTimeField(help_text="Start of the bucket, UTC.")
    allowed = models.PositiveBigIntegerField(default=0, help_text="Checks admitted (an access rule's allow included).")
    denied = models.PositiveBigIntegerField(default=0, help_text="Checks refused by a limit.")
    shadow_denied = models.PositiveBigIntegerField(
        default=0, help_text="Admitted checks that a shadow-mode limit would have refused (a part of allowed)."
    )
    degraded = models.PositiveBigIntegerField(
        default=0,
        help_text="Checks decided without Redis, by the limits' failure policies; also counted in allowed or denied.",
    )
    rule_denied = models.PositiveBigIntegerField(
        default=0, help_text="Checks refused by an access rule (a deny rule or an inactive customer); not in denied."
    )
    unavailable = models.PositiveBigIntegerField(
        default=0,
        help_text="Checks refused with 503: a limit's failure policy is `closed` and Redis was away; not in denied.",
    )
    costs = models.JSONField(default=dict, blank=True)
    session_ms = models.PositiveBigIntegerField(
        default=0,
        help_text="Milliseconds leases were held in the bucket (measured from their lifetimes, not reported).",
    )
    logged = models.PositiveBigIntegerField(
        default=0, help_text="Decisions written into the decision log (limits with audit on); a part of allowed+denied."
    )
    local_denied = models.PositiveBigIntegerField(default=0, help_text=LOCAL_DENIED_HELP)

    # Each table gets this manager anyway; declared on the base, code given any of the three can query it.
    objects = models.Manager()

    class Meta:
        abstract = True
        ordering = ["-bucket", "customer", "operation", "service", "api_key"]

    def __str__(self) -> str:
        caller = f" ({self.service or 'no service'}{f', key {self.api_key}' if self.api_key else ''})"
        return f"{self.customer} {self.operation}{caller} @ {self.bucket:%Y-%m-%d %H:%M}"


class UsageMinute(UsageBucket):
    """Usage per minute, flushed from Redis and added by the decisions made without it; kept for the minute
    retention."""

    class Meta(UsageBucket.Meta):
        constraints = [
            models.UniqueConstraint(fields=[*UNIQUE_FIELDS], name="usage_minute_unique"),
        ]
        indexes = [models.Index(fields=["bucket"], name="usage_minute_bucket")]


class UsageHour(UsageBucket):
    """Usage per hour, rolled up from minutes."""

    class Meta(UsageBucket.Meta):
        constraints = [
            models.UniqueConstraint(fields=[*UNIQUE_FIELDS], name="usage_hour_unique"),
        ]
        indexes = [models.Index(fields=["bucket"], name="usage_hour_bucket")]


class UsageDay(UsageBucket):
    """Usage per UTC day, rolled up from hours; kept forever by default."""

    class Meta(UsageBucket.Meta):
        constraints = [
            models.UniqueConstraint(fields=[*UNIQUE_FIELDS], name="usage_day_unique"),
        ]
        indexes = [models.Index(fields=["bucket"], name="usage_day_bucket")]


class FlushedMinute(models.Model):
    """The claim that one UTC minute of usage was moved from the counter store into UsageMinute.

    The flush inserts it in the same transaction as the minute's rows, so a minute is added at most
    once: a second flush of the same minute (a concurrent run, or a retry after a crash between commit
    and the store's discard) finds the claim and only discards. `rolled_up` turns true once the hours
    and days the minute falls in have been recomputed. Claims outlive the store's usage TTL, then are purged.
    """

    minute = models.BigIntegerField(unique=True, help_text="epoch_ms // 60000 (UTC).")
    rows = models.PositiveIntegerField(default=0, help_text="Customer x operation rows added.")
    flushed_at = models.DateTimeField(auto_now_add=True)
    rolled_up = models.BooleanField(default=False)

    class Meta:
        ordering = ["-minute"]
        indexes = [
            models.Index(fields=["minute"], condition=models.Q(rolled_up=False), name="flushed_minute_pending"),
        ]

    def __str__(self) -> str:
        return f"minute {self.minute}: {self.rows} rows{'' if self.rolled_up else ' (not rolled up)'}"


class CounterRecord(models.Model):
    """What checks spent on one durable counter in one bucket (its window, or a UTC minute for logs and
    buckets), flushed with the usage: a counter lost with Redis is rebuilt from these rows.

    `counter` is the counter's key without the store prefix (apps/engine/keys.py); `until_ms` is the bucket's
    start plus its limit's reach (apps/engine/durability.reach_ms), after which the purge deletes the row. The
    `database` failure policy adds what it admits while Redis is away to the same rows, so the rebuild after the
    outage counts it.
    """

    counter = models.TextField()
    start_ms = models.BigIntegerField(help_text="Start of the bucket, epoch ms.")
    until_ms = models.BigIntegerField(help_text="Until when the row can matter to a rebuild, epoch ms.")
    amount = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["counter", "start_ms"], name="counter_record_unique"),
        ]
        indexes = [models.Index(fields=["until_ms"], name="counter_record_until")]

    def __str__(self) -> str:
        return f"{self.counter} @ {self.start_ms}: {self.amount}"


class RollupMark(models.Model):
    """A UTC minute whose UsageMinute rows changed outside a flush (decisions made without Redis,
    services/decisions.py), so the hour and day it falls in must be recomputed by the next rollup.

    It is not a FlushedMinute claim: a claim says the counter store's usage of the minute is already in
    the database, and the flush would discard that usage unread. `version` grows with every write into
    the minute; the rollup deletes a mark only if its version is still the one it read before recomputing,
    so a write that lands while a rollup runs is rolled up by the next one.
    """

    minute = models.BigIntegerField(unique=True, help_text="epoch_ms // 60000 (UTC).")
    version = models.PositiveBigIntegerField(default=1)

    class Meta:
        ordering = ["minute"]

    def __str__(self) -> str:
        return f"minute {self.minute} to roll up (version {self.version})"


class QuarantinedUsage(models.Model):
    """A usage row the database refused on its own, set aside so it stops blocking the others.

    A customer or operation holding a NUL byte (PostgreSQL text cannot store one), a name too long, a cost
    unit jsonb cannot hold: retried, such a row would fail every flush until its usage expires from Redis,
    and every other row of its minute and of the minutes after it with it. The flush and the ledger of
    decisions made without Redis store it here instead (apps/common/quarantine.py), in the same transaction
    as the rest of the batch, so it is neither counted twice nor lost without a trace. Its values are kept as
    repr() text, which any text column holds; an operator can read what it counted and decide what to do.
    """

    writer = models.CharField(max_length=40, help_text="What set it aside: usage_flush or decision_ledger.")
    minute = models.BigIntegerField(help_text="The UTC minute it counted, epoch_ms // 60000.")
    key = models.TextField(help_text="repr() of (customer, operation, minute).")
    row = models.TextField(help_text="repr() of everything the row held: counts, costs, counter records.")
    error = models.TextField(help_text="Why the database refused it.")
    quarantined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-quarantined_at"]
        indexes = [models.Index(fields=["quarantined_at"], name="quarantined_usage_at")]
        verbose_name_plural = "quarantined usage"

    def __str__(self) -> str:
        return f"{self.writer}: {self.key}"


class UsageWriter(models.Model):
    """A process that writes usage from its decision ledger (apps/enforcement/ledger), and when it last did.

    Each round of a ledger writes its heartbeat (`flushed_at`) in the same transaction as its usage, even when it
    has nothing to write; a graceful exit writes the last round and sets `stopped_at`. A writer whose heartbeat
    stops without that (SIGKILL, the OOM killer, a lost host) may have taken up to one interval of decisions with
    it: the usage flush job finds it (`silent_since`, services/writers.py), counts and logs it, and the minutes
    around its last heartbeat are reported as possibly incomplete by the usage API, the exports and the admin. A
    writer that was only cut off from PostgreSQL writes again later: its next heartbeat clears `silent_since`.
    """

    name = models.CharField(max_length=200, unique=True, help_text="host:pid:random, one per process.")
    started_at = models.DateTimeField(auto_now_add=True)
    flushed_at = models.DateTimeField(help_text="Its last round written (its heartbeat).")
    interval_s = models.FloatField(help_text="Its rounds' interval (QUOTA_LEDGER_FLUSH_S).")
    stopped_at = models.DateTimeField(null=True, blank=True, help_text="Deregistered on a graceful exit.")
    silent_since = models.DateTimeField(
        null=True, blank=True, help_text="Found silent without a graceful exit: its last interval may be lost."
    )

    class Meta:
        ordering = ["-flushed_at"]
        indexes = [models.Index(fields=["silent_since"], name="usage_writer_silent")]

    def __str__(self) -> str:
        state = "stopped" if self.stopped_at else "SILENT" if self.silent_since else "writing"
        return f"{self.name} ({state}, last round {self.flushed_at:%Y-%m-%d %H:%M:%S})"
