"""The API docs a newcomer reads at /api/docs/: every operation of /api/schema/ has a summary and a description
written for callers (no view docstring), examples for its request body and its answers, the one error shape
for its error answers, and examples that hold to their own schemas and to what the real API answers."""

from __future__ import annotations

import copy
import io
import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command
from django.urls import URLPattern, URLResolver, get_resolver
from drf_spectacular.generators import SchemaGenerator
from jsonschema import Draft202012Validator, FormatChecker

from apps.limits.models import Algorithm
from tests.limits.factories import LimitFactory, OperationFactory

METHODS = ("get", "post", "put", "patch", "delete")
ERROR_REF = "#/components/schemas/Error"


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    # The generator the /api/schema/ view uses, with the postprocessing hooks (strict bodies) applied.
    return SchemaGenerator().get_schema(request=None, public=True)


def operations(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for path, item in schema["paths"].items():
        for method in METHODS:
            if method in item:
                yield f"{method.upper()} {path}", item[method]


def api_view_classes() -> Iterator[type]:
    def walk(patterns: list[Any], prefix: str) -> Iterator[type]:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, route)
            elif isinstance(pattern, URLPattern) and route.startswith("api/"):
                view = getattr(pattern.callback, "cls", None)
                if view is not None:
                    yield view

    yield from walk(get_resolver().url_patterns, "")


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def view_docstrings() -> set[str]:
    """Docstrings of every API view class, its bases and its handlers: text for maintainers, not callers."""
    docs = set()
    for view in api_view_classes():
        for owner in view.__mro__:
            docs.add(owner.__doc__)
            docs.update(getattr(owner, method, None).__doc__ for method in METHODS if hasattr(owner, method))
    return {flat(doc) for doc in docs if isinstance(doc, str) and flat(doc)}


def test_every_operation_has_a_summary_and_a_description_for_callers(schema) -> None:
    docstrings = view_docstrings()
    assert len(docstrings) >= 3  # the comparison below compares with something
    ops = dict(operations(schema))
    assert len(ops) >= 12
    for name, operation in ops.items():
        summary, description = operation.get("summary", ""), flat(operation.get("description", ""))
        assert 0 < len(summary) <= 100, name
        assert len(description) >= 200, name
        assert description != flat(summary), name
        for doc in docstrings:
            assert doc not in description, (name, doc)
            assert doc.split(". ")[0] not in description, (name, doc)


def test_the_lease_endpoints_have_summaries(schema) -> None:
    paths = schema["paths"]
    assert paths["/api/v1/leases/{lease_id}/renew"]["post"]["summary"] == "Extend a lease before it expires"
    assert paths["/api/v1/leases/{lease_id}"]["delete"]["summary"] == "Release a lease or an allocation (idempotent)"


def json_content(part: dict[str, Any]) -> dict[str, Any] | None:
    return part.get("content", {}).get("application/json")


def test_every_body_and_every_success_answer_has_an_example(schema) -> None:
    for name, operation in operations(schema):
        if "requestBody" in operation:
            assert json_content(operation["requestBody"]).get("examples"), name
        successes = {code: answer for code, answer in operation["responses"].items() if code.startswith("2")}
        assert successes, name
        for code, answer in successes.items():
            content = json_content(answer)
            if content is not None:  # 204 and 304 have no body
                assert content.get("examples"), (name, code)


def refers_to_error(schema: dict[str, Any], part: dict[str, Any]) -> bool:
    ref = part.get("$ref")
    if ref == ERROR_REF:
        return True
    if ref:
        return refers_to_error(schema, schema["components"]["schemas"][ref.rsplit("/", 1)[1]])
    return any(option.get("$ref") == ERROR_REF for option in part.get("oneOf", ()))


def test_every_error_answer_is_the_error_shape_described_with_an_example(schema) -> None:
    error = schema["components"]["schemas"]["ErrorDetail"]
    assert set(error["required"]) == {"code", "message", "fields"}
    for name, operation in operations(schema):
        answers = operation["responses"]
        # Anything may answer these: bad input, a bad key, the bad-key guard, the configuration unreadable.
        assert {"400", "401", "429", "503"} <= set(answers), name
        for code, answer in answers.items():
            if code >= "400":
                content = json_content(answer)
                assert content is not None, (name, code)
                assert refers_to_error(schema, content["schema"]), (name, code)
                assert answer.get("description"), (name, code)
                assert content.get("examples"), (name, code)
        assert "409" not in answers, name  # nothing answers 409: a conflicting request id is a 422


def closed(schema: dict[str, Any]) -> dict[str, Any]:
    """The components with every object closed: an example may not show a field the schema does not name."""
    components = copy.deepcopy(schema["components"])

    def close(node: Any) -> None:
        if isinstance(node, dict):
            if "properties" in node:
                node.setdefault("additionalProperties", False)
            for value in node.values():
                close(value)
        elif isinstance(node, list):
            for value in node:
                close(value)

    close(components["schemas"])
    return components


def examples_with_schemas(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], Any]]:
    for name, operation in operations(schema):
        parts = [("request", operation.get("requestBody", {}))]
        parts += [(code, answer) for code, answer in operation["responses"].items()]
        for where, part in parts:
            for media_type, content in part.get("content", {}).items():
                for title, example in content.get("examples", {}).items():
                    yield f"{name} {where} {media_type} {title}", content["schema"], example["value"]


def test_every_example_validates_against_its_own_schema(schema) -> None:
    components = closed(schema)
    examples = list(examples_with_schemas(schema))
    assert len(examples) >= 40
    for where, part_schema, value in examples:
        validator = Draft202012Validator(
            {"allOf": [part_schema], "components": components}, format_checker=FormatChecker()
        )
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(value)]
        assert not errors, (where, errors)


def test_an_example_that_breaks_its_schema_is_caught(schema) -> None:
    """The validator above can fail: an example with a misspelt field or a wrong type does not pass."""
    components = closed(schema)
    check = schema["paths"]["/api/v1/check"]["post"]
    decision = check["responses"]["200"]["content"]["application/json"]
    value = next(iter(decision["examples"].values()))["value"]
    validator = Draft202012Validator({"allOf": [decision["schema"]], "components": components})
    assert validator.is_valid(value)
    assert not validator.is_valid({**value, "retry_after": 0})
    assert not validator.is_valid({**value, "allowed": "yes"})


@pytest.fixture
def demo(db) -> None:
    """The demo set (the seed scenarios), and the concurrency limit the allocation examples use."""
    call_command("load_demo", stdout=io.StringIO())
    LimitFactory(
        name="streams-per-account",
        operation=OperationFactory(name="CreateStream"),
        algorithm=Algorithm.CONCURRENCY,
        quantity=50,
        period_seconds=3600,
        key_by=["customer"],
    )


SENT = (
    "/api/v1/check",
    "/api/v1/check/batch",
    "/api/v1/leases",
    "/api/v1/customers/acct-1/allocations/streams-per-account",
)


@pytest.mark.django_db
def test_request_examples_sent_to_the_api_get_answers_shaped_like_the_examples(schema, api, demo) -> None:
    """Each request example, sent for real over the demo set, is answered with a documented status, and the
    answer carries the very fields the examples of that status show."""
    templates = {
        "/api/v1/customers/acct-1/allocations/streams-per-account": "/api/v1/customers/{customer}/allocations/{limit}"
    }
    sent = 0
    for path in SENT:
        item = schema["paths"][templates.get(path, path)]
        method = "put" if "put" in item else "post"
        for title, example in json_content(item[method]["requestBody"])["examples"].items():
            response = getattr(api, method)(path, example["value"], format="json")
            code = str(response.status_code)
            assert code in item[method]["responses"], (path, title, code)
            assert code < "400", (path, title, code, response.content)
            shown = json_content(item[method]["responses"][code])["examples"].values()
            assert set(response.json()) in [set(e["value"]) for e in shown], (path, title)
            sent += 1
    assert sent >= 8
