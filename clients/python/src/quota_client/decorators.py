"""The `limited` decorators: check before every call of a function, with values taken from its arguments."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")
ArgValue = Any | Callable[..., Any]


def resolve(value: ArgValue, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A value, or what a callable makes of the decorated function's arguments."""
    return value(*args, **kwargs) if callable(value) else value


def check_fields(
    fields: dict[str, ArgValue], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """(customer, the other check fields that are set) for one call."""
    values = {name: resolve(value, args, kwargs) for name, value in fields.items() if value is not None}
    return values.pop("customer"), values


def limited(
    require: Callable[..., object], operation: str, fields: dict[str, ArgValue], wait: bool
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        if inspect.iscoroutinefunction(function):
            raise TypeError("QuotaClient.limited wraps plain functions; for async def use AsyncQuotaClient.")

        @functools.wraps(function)
        def checked(*args: P.args, **kwargs: P.kwargs) -> R:
            customer, values = check_fields(fields, args, kwargs)
            require(customer, operation, wait=wait, **values)
            return function(*args, **kwargs)

        return checked

    return decorate


def limited_async(
    require: Callable[..., Awaitable[object]], operation: str, fields: dict[str, ArgValue], wait: bool
) -> Callable[[Callable[P, Coroutine[Any, Any, R]]], Callable[P, Coroutine[Any, Any, R]]]:
    def decorate(function: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, R]]:
        if not inspect.iscoroutinefunction(function):
            raise TypeError("AsyncQuotaClient.limited wraps async def functions; use QuotaClient.limited.")

        @functools.wraps(function)
        async def checked(*args: P.args, **kwargs: P.kwargs) -> R:
            customer, values = check_fields(fields, args, kwargs)
            await require(customer, operation, wait=wait, **values)
            return await function(*args, **kwargs)

        return checked

    return decorate
