"""The checks an SDK local limiter refused in the caller's process and reported (issue 27): a part of denied, kept
apart so the dashboard's most throttled customers are the ones the platform refused. Like 0009, AddField on the
partitioned usage_usageminute adds the column to every partition, with a constant default and no row rewritten.
"""

from django.db import migrations, models

HELP = "Checks an SDK local limiter refused in the caller's process and reported; a part of denied."


class Migration(migrations.Migration):
    dependencies = [
        ("usage", "0011_usage_writer"),
    ]

    operations = [
        migrations.AddField(
            model_name=model,
            name="local_denied",
            field=models.PositiveBigIntegerField(default=0, help_text=HELP),
        )
        for model in ("usageday", "usagehour", "usageminute")
    ]
