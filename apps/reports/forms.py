"""The usage export form: the admin page shows it and `manage.py export_usage` validates its options with it."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django import forms

from apps.enforcement.decisions.parsing import MAX_CUSTOMER_LENGTH, MAX_OPERATION_LENGTH
from apps.reports.exports import FORMATS
from apps.reports.filters import API_KEY_LENGTH, MAX_NAMES, SERVICE_LENGTH, UsageFilters

DAY_ERRORS = {"invalid": "Enter a day as YYYY-MM-DD, e.g. 2026-03-01."}
GRANULARITIES = [("minute", "Minute"), ("hour", "Hour"), ("day", "Day (UTC)")]


class NameListField(forms.CharField):
    """Names, one per line: blank lines and repeats are dropped; empty means "all"."""

    widget = forms.Textarea(attrs={"rows": 3, "cols": 40})

    def __init__(self, *, max_length_each: int, noun: str, **kwargs: Any) -> None:
        super().__init__(required=False, strip=False, **kwargs)
        self.max_length_each = max_length_each
        self.noun = noun

    def clean(self, value: Any) -> tuple[str, ...]:
        text = super().clean(value)
        names = tuple(dict.fromkeys(line.strip() for line in text.splitlines() if line.strip()))
        if len(names) > MAX_NAMES:
            raise forms.ValidationError(f"At most {MAX_NAMES} {self.noun}s per export (got {len(names)}).")
        too_long = [name for name in names if len(name) > self.max_length_each]
        if too_long:
            raise forms.ValidationError(
                f"Each {self.noun} has at most {self.max_length_each} characters; {too_long[0][:40]}… is longer."
            )
        return names


class UsageExportForm(forms.Form):
    customers = NameListField(
        max_length_each=MAX_CUSTOMER_LENGTH,
        noun="customer",
        help_text="Customer ids, one per line. Leave empty for every customer.",
    )
    operations = NameListField(
        max_length_each=MAX_OPERATION_LENGTH,
        noun="operation",
        help_text="Operation names, one per line. Leave empty for every operation.",
    )
    services = NameListField(
        max_length_each=SERVICE_LENGTH,
        noun="service",
        help_text="Calling services' names, one per line. Leave empty for every service (and checks made without one).",
    )
    api_keys = NameListField(
        max_length_each=API_KEY_LENGTH,
        noun="API key",
        label="API keys",
        help_text="API key prefixes (the part before the dot), one per line. Leave empty for every key.",
    )
    start = forms.DateField(
        label="From",
        help_text="First day included (UTC), e.g. 2026-03-01.",
        widget=forms.DateInput(attrs={"type": "date"}),
        error_messages=DAY_ERRORS,
    )
    end = forms.DateField(
        label="To",
        help_text="Last day included (UTC).",
        widget=forms.DateInput(attrs={"type": "date"}),
        error_messages=DAY_ERRORS,
    )
    granularity = forms.ChoiceField(
        choices=GRANULARITIES, initial="hour", help_text="One row per customer, operation and minute, hour or UTC day."
    )
    format = forms.ChoiceField(choices=[(name, f.label) for name, f in FORMATS.items()], initial="csv")

    def clean_end(self) -> dt.date:
        end: dt.date = self.cleaned_data["end"]
        if end >= dt.date.max:
            raise forms.ValidationError("Pick a day before 9999-12-31.")
        return end

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        start, end = cleaned.get("start"), cleaned.get("end")
        if start and end and end < start:
            self.add_error("end", f"The last day ({end}) is before the first day ({start}): swap them.")
        return cleaned

    def filters(self) -> UsageFilters:
        """The validated form as filters: from midnight UTC of the first day to midnight after the last."""
        data = self.cleaned_data
        return UsageFilters(
            granularity=data["granularity"],
            start=_midnight_utc(data["start"]),
            end=_midnight_utc(data["end"] + dt.timedelta(days=1)),
            customers=data["customers"],
            operations=data["operations"],
            services=data["services"],
            api_keys=data["api_keys"],
        )


def _midnight_utc(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)
