# Each counter record carries its own expiry (its limit's reach) instead of one retention for all.

from django.db import migrations, models

# Rows written before this migration keep the retention they were written under (QUOTA_COUNTER_RECORD_DAYS' default).
OLD_RETENTION_MS = 35 * 86_400_000


class Migration(migrations.Migration):
    dependencies = [
        ("usage", "0004_decision_counters"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="counterrecord", name="counter_record_start"),
        migrations.AddField(
            model_name="counterrecord",
            name="until_ms",
            field=models.BigIntegerField(default=0, help_text="Until when the row can matter to a rebuild, epoch ms."),
            preserve_default=False,
        ),
        migrations.RunSQL(
            sql=[("UPDATE usage_counterrecord SET until_ms = start_ms + %s", [OLD_RETENTION_MS])],
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.AddIndex(
            model_name="counterrecord",
            index=models.Index(fields=["until_ms"], name="counter_record_until"),
        ),
    ]
