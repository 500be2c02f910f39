"""The admin's forms for limits and overrides: fields named as in limits.yaml, plain errors on the field at fault.

Why the quantity needed its own field: the model's PositiveBigIntegerField gives a form field whose minimum is
0 ("Ensure this value is greater than or equal to 0."), so 0 passed the form and then failed the database
check constraint `limit_quantity_positive`, which Django reports as a non-field error naming the constraint.
The fields below refuse 0 and negatives themselves, with a sentence, so the constraint is never reached.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms

from apps.engine.registry import ALGORITHMS
from apps.limits.admin_widgets import KeyByField, MatchField
from apps.limits.algorithms import ALGORITHM_DEPENDENT_FIELDS, FIXED_UNITS, algorithm_fields
from apps.limits.models import Limit, Override

BIG = 2**63 - 1
# What the algorithm field explains: each algorithm's own summary (the engine registry's).
ALGORITHM_HELP = "; ".join(f"{entry.label}: {entry.summary}" for entry in ALGORITHMS.values())


def positive_field(label: str, message: str, *, required: bool = True, help_text: str = "") -> forms.IntegerField:
    return forms.IntegerField(
        label=label,
        required=required,
        min_value=1,
        max_value=BIG,
        help_text=help_text,
        error_messages={"min_value": message, "max_value": "That is more than the platform can count."},
    )


class _UnitInput(forms.TextInput):
    # Hidden and not sent for concurrency and session time: the form then sets the unit, rather than the model
    # keeping whatever the limit had before (which a missing input would do).
    def value_omitted_from_data(self, data: Any, files: Any, name: str) -> bool:
        return False


class LimitAdminForm(forms.ModelForm):
    quantity = positive_field(
        "Limit",
        "The limit must be 1 or more: a limit of 0 would refuse every check. To stop a limit from counting, "
        "set its mode to disabled.",
        help_text="How much is admitted per period (for concurrency: leases held at once; for session time: seconds "
        "per period). The same number as <code>limit:</code> in limits.yaml.",
    )
    burst = positive_field(
        "Burst",
        "The burst must be 1 or more; leave it empty to use the limit.",
        required=False,
        help_text="Bucket capacity (<code>burst:</code> in limits.yaml); empty means the limit.",
    )
    period_seconds = positive_field(
        "Period (seconds)",
        "The period must be at least 1 second.",
        required=False,
        help_text="Window length in seconds (<code>period:</code> in limits.yaml; for concurrency: the longest a "
        "lease lives).",
    )
    key_by = KeyByField(
        label="Key by",
        required=False,
        help_text="Which parts make the counter key (<code>key_by:</code> in limits.yaml). Nothing ticked and no "
        "attribute: one counter shared by every check.",
    )
    match = MatchField(
        label="Match",
        required=False,
        help_text="Only checks whose attributes have these values (<code>match:</code> in limits.yaml). No rows: "
        "every check.",
    )

    class Meta:
        model = Limit
        # The admin's fieldsets decide what shows; this list is for the form used on its own.
        fields = (
            "name",
            "operation",
            "plan",
            "description",
            "algorithm",
            "quantity",
            "unit",
            "period_seconds",
            "calendar_period",
            "burst",
            "key_by",
            "match",
            "mode",
            "on_store_failure",
            "sync_ms",
            "audit",
        )
        help_texts = {
            "name": "A unique name; import_limits and export_limits find the limit by it.",
            "operation": "The operation this limit counts.",
            "plan": "Empty: every customer. Otherwise only customers on this plan.",
            "algorithm": f"{ALGORITHM_HELP}. Fields an algorithm does not use are hidden.",
            "mode": "Shadow counts and reports would-be rejections but never rejects; disabled skips the limit.",
            "on_store_failure": "What to do when Redis cannot be reached.",
            "calendar_period": "Only for the calendar algorithm (<code>period: day|week|month</code> in limits.yaml).",
        }
        widgets = {"description": forms.Textarea(attrs={"rows": 2}), "unit": _UnitInput()}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "unit" in self.fields:  # not there for someone who may only view
            self.fields["unit"].required = False
        if "algorithm" in self.fields:
            fields = {algorithm: algorithm_fields(algorithm) for algorithm in ALGORITHMS}
            self.fields["algorithm"].widget.attrs["data-fields"] = json.dumps(
                {"dependent": ALGORITHM_DEPENDENT_FIELDS, "used": fields}
            )

    def clean_key_by(self) -> list[Any]:
        """Entries kept in the order the limit had them: the order makes the counter keys, and ticking boxes
        again must not move every counter to a new key."""
        chosen: list[Any] = self.cleaned_data["key_by"]
        before = self.initial.get("key_by") or []
        if not isinstance(before, list):
            return chosen
        return [entry for entry in before if entry in chosen] + [entry for entry in chosen if entry not in before]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        algorithm = cleaned.get("algorithm")
        if cleaned.get("unit"):
            pass  # a unit that does not fit the algorithm is the model's error, on the unit
        elif algorithm in FIXED_UNITS:
            cleaned["unit"] = FIXED_UNITS[algorithm]  # the page hid the field and sent nothing
        else:
            self.add_error("unit", "Say what is counted: requests, or a cost such as records or bytes.")
        return cleaned


class OverrideAdminForm(forms.ModelForm):
    quantity = positive_field(
        "Quantity",
        "The quantity must be 1 or more. To refuse a customer everything, add a deny access rule instead.",
        required=False,
        help_text="Replaces the limit for this customer (<code>quantity:</code> in limits.yaml).",
    )
    burst = positive_field("Burst", "The burst must be 1 or more; leave it empty to keep the limit's.", required=False)

    class Meta:
        model = Override
        fields = (
            "customer",
            "limit",
            "resource",
            "match",
            "quantity",
            "burst",
            "unlimited",
            "starts",
            "ends",
            "reason",
        )
