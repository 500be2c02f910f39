"""Usage per calling service and API key (issue 18 item 6): every usage table gains `service` (the calling service's
name) and `api_key` (the calling key's prefix), and its unique constraint becomes (customer, operation, bucket,
service, api_key), which the flush's and the rollup's upserts name in ON CONFLICT.

Cheap on PostgreSQL, also on the partitioned usage_usageminute: each column is added with a constant database
default (''), which PostgreSQL 11+ records in the catalog without rewriting a row, on the parent and every day
partition at once; existing rows read as service '' and api_key ''. The one real cost is the new unique index,
built once per table (per partition for minutes) under the migration's lock, like any index of that size; the old
one is dropped in the same transaction, so there is no moment without a constraint. The default stays in the
database (db_default), so a worker still running the previous code while the migration lands keeps inserting.

Reversible: the reverse first adds each row of a service or key into the row of its customer x operation x bucket
without them (the counts summed, the costs unit by unit), then restores the old constraint and drops the columns.
"""

from django.db import migrations, models

MODELS = ("usageday", "usagehour", "usageminute")
NEW = ("customer", "operation", "bucket", "service", "api_key")
AMOUNTS = ("allowed", "denied", "shadow_denied", "degraded", "rule_denied", "unavailable", "session_ms", "logged")
FIELDS = {
    "service": models.CharField(
        max_length=100, default="", db_default="", blank=True, help_text="The calling service's name; '' for none."
    ),
    "api_key": models.CharField(
        max_length=16, default="", db_default="", blank=True, help_text="The calling API key's prefix; '' for none."
    ),
}


def _constraint_name(model: str) -> str:
    return f"usage_{model.removeprefix('usage')}_unique"


def merge_callers(apps, schema_editor):
    """Reverse only: fold every row of a service or key into its row without them."""
    for name in MODELS:
        model = apps.get_model("usage", name)
        for row in model.objects.exclude(service="", api_key="").order_by("bucket", "customer", "operation").iterator():
            target, _ = model.objects.get_or_create(
                customer=row.customer, operation=row.operation, bucket=row.bucket, service="", api_key="",
                defaults={"costs": {}},
            )
            for amount in AMOUNTS:
                setattr(target, amount, getattr(target, amount) + getattr(row, amount))
            target.costs = {unit: target.costs.get(unit, 0) + row.costs.get(unit, 0) for unit in target.costs | row.costs}
            target.save()
            row.delete()


class Migration(migrations.Migration):
    dependencies = [
        ("usage", "0009_logged"),
    ]

    operations = [
        *(
            migrations.AlterModelOptions(name=name, options={"ordering": ["-bucket", "customer", "operation", "service", "api_key"]})
            for name in MODELS
        ),
        *(migrations.AddField(model_name=name, name=field, field=FIELDS[field].clone()) for name in MODELS for field in FIELDS),
        *(migrations.RemoveConstraint(model_name=name, name=_constraint_name(name)) for name in MODELS),
        migrations.RunPython(migrations.RunPython.noop, merge_callers, elidable=False),
        *(
            migrations.AddConstraint(
                model_name=name, constraint=models.UniqueConstraint(fields=list(NEW), name=_constraint_name(name))
            )
            for name in MODELS
        ),
    ]
