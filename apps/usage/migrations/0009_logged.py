"""The decisions the decision log recorded per usage row (issue 17): the loss check compares them with the
entries drained into apps/quality. Like 0008, AddField on the partitioned usage_usageminute adds the column to
every partition, with a constant default and no row rewritten.
"""

from django.db import migrations, models

HELP = "Decisions written into the decision log (limits with audit on); a part of allowed+denied."


class Migration(migrations.Migration):
    dependencies = [
        ("usage", "0008_session_ms"),
    ]

    operations = [
        migrations.AddField(
            model_name=model,
            name="logged",
            field=models.PositiveBigIntegerField(default=0, help_text=HELP),
        )
        for model in ("usageday", "usagehour", "usageminute")
    ]
