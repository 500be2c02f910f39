"""Session time per usage row: the milliseconds leases were held, measured from their lifetimes.

On PostgreSQL usage_usageminute is partitioned by day (0007): AddField's ALTER TABLE ... ADD COLUMN on the
parent adds the column (its NOT NULL, DEFAULT 0 and CHECK >= 0) to every partition, the DEFAULT partition and
the ones services/partitions.py creates later alike, and with a constant default it rewrites no rows.
tests/usage/services/test_usage_session_ms.py checks every partition has it.
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('usage', '0007_partition_usage_minute'),
    ]

    operations = [
        migrations.AddField(
            model_name='usageday',
            name='session_ms',
            field=models.PositiveBigIntegerField(default=0, help_text='Milliseconds leases were held in the bucket (measured from their lifetimes, not reported).'),
        ),
        migrations.AddField(
            model_name='usagehour',
            name='session_ms',
            field=models.PositiveBigIntegerField(default=0, help_text='Milliseconds leases were held in the bucket (measured from their lifetimes, not reported).'),
        ),
        migrations.AddField(
            model_name='usageminute',
            name='session_ms',
            field=models.PositiveBigIntegerField(default=0, help_text='Milliseconds leases were held in the bucket (measured from their lifetimes, not reported).'),
        ),
    ]
