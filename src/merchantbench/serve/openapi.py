"""The server's OpenAPI document says what each route answers. FastAPI documents a 422 for
invalid input, but this server answers 400 (`app._install_error_handlers`), and it knows
nothing of the answers every route shares: the body limit (413), and the token checks of the
dependencies `require_run` (401, 403, 404) and `require_admin` (401, 403). Those are added
here from each route's dependencies; what only one route answers (409, 410, 425, 429, ...) is
declared on the route itself (`responses=`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute, RouteContext, iter_route_contexts

from merchantbench.serve.auth import require_admin, require_run

__all__ = ["ADMIN_ROUTE", "ERROR_SCHEMA", "GUARD_ANSWERS", "document_answers"]

ERROR_SCHEMA: dict[str, Any] = {
    "title": "Error",
    "type": "object",
    "description": "A refused request: nothing was changed.",
    "properties": {
        "ok": {"type": "boolean", "enum": [False]},
        "error": {"type": "string", "description": "what went wrong, as a stable code"},
        "message": {"type": "string"},
    },
    "required": ["ok", "error"],
}
EVERY_ROUTE = {
    400: "malformed request: a parameter or the body is not what the route takes",
    413: "the request body is over the server's limit",
}
RUN_ROUTE = {
    401: "no token",
    403: "the token may not reach this run (an unknown run answers the same to an agent)",
    404: "no such run (to the operator), or no such agent in the run",
}
ADMIN_ROUTE = {401: "no token", 403: "the operator's (admin) token is required"}


def _dependency_calls(dependant: Dependant) -> set[Callable[..., Any]]:
    calls: set[Callable[..., Any]] = set()
    stack = [dependant]
    while stack:
        node = stack.pop()
        if node.call is not None:
            calls.add(node.call)
        stack.extend(node.dependencies)
    return calls


# What a dependency may answer, for every route that runs it; a module with a guard of its own
# (the dashboard's operator check) adds it here.
GUARD_ANSWERS: dict[Callable[..., Any], dict[int, str]] = {
    require_run: RUN_ROUTE,
    require_admin: ADMIN_ROUTE,
}


def _answers(route: RouteContext) -> dict[int, str]:
    answers = dict(EVERY_ROUTE)
    for call in _dependency_calls(route.dependant):
        answers.update(GUARD_ANSWERS.get(call, {}))
    return answers


def document_answers(app: FastAPI) -> None:
    """Make `app.openapi()` document the answers above (call once the routes are in)."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = generate()
        error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
        for route in iter_route_contexts(app.routes):
            if not isinstance(route.original_route, APIRoute) or not route.include_in_schema:
                continue
            operations = schema["paths"].get(route.path_format, {})
            for method in route.methods or ():
                responses = operations.get(method.lower(), {}).get("responses")
                if responses is None:
                    continue
                responses.pop("422", None)
                for status, description in _answers(route).items():
                    answer = responses.setdefault(str(status), {"description": description})
                    answer.setdefault("content", error)
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        components.pop("HTTPValidationError", None)
        components.pop("ValidationError", None)
        components["Error"] = ERROR_SCHEMA
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
