# Usage rows the database refuses on their own (a NUL byte in a customer id) are set aside here instead of
# blocking every flush after them.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('usage', '0005_counter_record_until'),
    ]

    operations = [
        migrations.CreateModel(
            name='QuarantinedUsage',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('writer', models.CharField(help_text='What set it aside: usage_flush or decision_ledger.', max_length=40)),
                ('minute', models.BigIntegerField(help_text='The UTC minute it counted, epoch_ms // 60000.')),
                ('key', models.TextField(help_text='repr() of (customer, operation, minute).')),
                ('row', models.TextField(help_text='repr() of everything the row held: counts, costs, counter records.')),
                ('error', models.TextField(help_text='Why the database refused it.')),
                ('quarantined_at', models.DateTimeField(auto_now_add=True)),
            ],
            options={
                'verbose_name_plural': 'quarantined usage',
                'ordering': ['-quarantined_at'],
                'indexes': [models.Index(fields=['quarantined_at'], name='quarantined_usage_at')],
            },
        ),
    ]
