"""The toggles API's answers in the docs: its serializers' 200 and 304, and the error answers from the one
shared place (apps.api.schema_errors), with what each means for a reader of toggles."""

from __future__ import annotations

from apps.api.schema_errors import error_example, error_response
from apps.toggles import serializers

CONFIG_UNAVAILABLE = error_example(
    "Configuration not readable yet (503)",
    "config_unavailable",
    "The configuration cannot be read: the database is unreachable and there is no usable last-known-good "
    "snapshot at var/config-snapshot.json (connection refused).",
)
ERRORS = {
    400: error_response(400, "A query parameter (none is accepted) or a malformed toggle name; see `fields`."),
    401: error_response(401),
    429: error_response(429),
    503: error_response(
        503,
        "The platform's configuration could not be read yet (a worker started while the database was down, "
        "with no last-known-good snapshot). Keep your last copy and retry.",
        [CONFIG_UNAVAILABLE],
    ),
}
UNKNOWN_TOGGLE = error_example(
    "No such toggle (or another customer's)",
    "unknown_toggle",
    "There is no feature toggle named “new-shard-plannr”.",
)
LIST_RESPONSES = {**serializers.LIST_RESPONSES, **ERRORS}
ONE_RESPONSES = {
    **serializers.ONE_RESPONSES,
    **ERRORS,
    404: error_response(404, "No toggle of that name for this API key (`unknown_toggle`).", [UNKNOWN_TOGGLE]),
}
# The examples of 200 answers; error examples come with the responses above.
LIST_EXAMPLES = serializers.LIST_EXAMPLES
ONE_EXAMPLES = [example for example in serializers.ONE_EXAMPLES if example.status_codes == ["200"]]
