from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils import timezone


class ChangeAction(models.TextChoices):
    CREATED = "created", "created"
    CHANGED = "changed", "changed"
    DELETED = "deleted", "deleted"


class ChangeEvent(models.Model):
    """One entry of the change history: who changed what, when, through which door, and each field before → after.

    Saves and deletes of configuration objects land here whatever wrote them (admin, import_limits,
    services, jobs); so do events that are not a save, such as unblocking a customer (`action` is then
    the event's own name, `content_type` is empty, `object_repr` names the target and `details` holds
    its data). Rows are written in the transaction of the change, so a rolled-back change leaves none.
    """

    at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.CharField(
        max_length=150, help_text='Who: a user name, or a command or job such as "import_limits (command)".'
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    via = models.CharField(max_length=200, blank=True, help_text="Through which doors: admin, config import, ...")
    action = models.CharField(max_length=30, help_text="created, changed, deleted, or an event such as unblock.")
    content_type = models.ForeignKey(
        ContentType, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", verbose_name="model"
    )
    object_id = models.CharField(max_length=64, blank=True)
    object_repr = models.CharField("object", max_length=300)
    customer = models.CharField(
        max_length=200, blank=True, db_index=True, help_text="The external id of the customer concerned, if any."
    )
    changes = models.JSONField(
        default=dict, blank=True, encoder=DjangoJSONEncoder, help_text='{"field": {"before": ..., "after": ...}}'
    )
    details = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name = "change"
        verbose_name_plural = "changes"
        indexes = [
            models.Index(fields=["content_type", "object_id", "-at"], name="history_object_idx"),
            models.Index(fields=["actor", "-at"], name="history_actor_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.actor} {self.action} {self.object_repr}"
