"""Operators, Analysts and Read-only may look at quarantined usage (rows the flush set aside, issue 13)."""

from django.db import migrations

GRANT = ("usage", "quarantinedusage", "view_quarantinedusage", "Can view quarantined usage")
ROLES = ("Operators", "Analysts", "Read-only")


def grant(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    ContentType = apps.get_model("contenttypes", "ContentType")
    app_label, model, codename, name = GRANT
    content_type, _ = ContentType.objects.get_or_create(app_label=app_label, model=model)
    permission, _ = Permission.objects.get_or_create(
        content_type=content_type, codename=codename, defaults={"name": name}
    )
    for group in Group.objects.filter(name__in=ROLES):
        group.permissions.add(permission)


def revoke(apps, schema_editor):
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    for permission in Permission.objects.filter(codename=GRANT[2], content_type__app_label=GRANT[0]):
        for group in Group.objects.filter(name__in=ROLES):
            group.permissions.remove(permission)


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_roles"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [migrations.RunPython(grant, revoke)]
