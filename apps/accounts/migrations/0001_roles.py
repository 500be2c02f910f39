"""The three roles of the admin, as groups: Operators, Analysts and Read-only.

Django creates permissions only after `migrate` finishes (post_migrate), and the reports app's
ExportJob may not be migrated yet, so the content types and permissions this needs are created
here by app label, model and codename, with the names Django itself would give them. The tables
below are frozen on purpose: a migration says what it did on the day it ran. A later change of a
role is a new migration.
"""

from django.db import migrations

ACTIONS = ("add", "change", "delete", "view")

# app_label.model -> verbose name, for the permission names ("Can view access rule").
CONFIG_MODELS = {
    "limits.operation": "operation",
    "limits.limit": "limit",
    "limits.override": "override",
    "limits.accessrule": "access rule",
    "customers.plan": "plan",
    "customers.customer": "customer",
    "apikeys.service": "service",
    "apikeys.apikey": "API key",
    "toggles.featuretoggle": "feature toggle",
    # A periodic task is edited together with its schedule.
    "django_celery_beat.periodictask": "periodic task",
    "django_celery_beat.crontabschedule": "crontab",
    "django_celery_beat.intervalschedule": "interval",
    "django_celery_beat.solarschedule": "solar event",
    "django_celery_beat.clockedschedule": "clocked",
}
USAGE_MODELS = {
    "usage.usageminute": "usage minute",
    "usage.usagehour": "usage hour",
    "usage.usageday": "usage day",
}
HISTORY = {"history.changeevent": "change"}
EXPORTS = {"reports.exportjob": "usage export"}
EXPORT_USAGE = ("reports.exportjob", "export_usage", "Can export usage reports")


def _default(models, *actions):
    return [(label, f"{action}_{label.split('.')[1]}", f"Can {action} {name}") for label, name in models.items()
            for action in actions]


ROLES = {
    # Edit the configuration; read usage (to see who is throttled) and the history.
    "Operators": _default(CONFIG_MODELS, *ACTIONS) + _default(USAGE_MODELS | HISTORY, "view"),
    # Read usage and customers, export reports, read the history.
    "Analysts": _default(USAGE_MODELS | {"customers.customer": "customer"} | HISTORY | EXPORTS, "view")
    + [EXPORT_USAGE],
    # Look at everything, change nothing, export nothing.
    "Read-only": _default(CONFIG_MODELS | USAGE_MODELS | HISTORY, "view"),
}


def roles_create(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    ContentType = apps.get_model("contenttypes", "ContentType")
    for role, grants in ROLES.items():
        group, _ = Group.objects.get_or_create(name=role)
        permissions = []
        for label, codename, name in grants:
            app_label, model = label.split(".")
            content_type, _ = ContentType.objects.get_or_create(app_label=app_label, model=model)
            permission, _ = Permission.objects.get_or_create(
                content_type=content_type, codename=codename, defaults={"name": name}
            )
            permissions.append(permission)
        group.permissions.set(permissions)


def roles_delete(apps, schema_editor):
    # Permissions and content types stay: Django recreates them after every migrate anyway.
    apps.get_model("auth", "Group").objects.filter(name__in=ROLES).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(roles_create, roles_delete)]
