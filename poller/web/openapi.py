"""The OpenAPI 3.1 document of ``/api/v1``, made from :data:`poller.web.api.ROUTES`."""

from __future__ import annotations

import re

from poller import __version__

ERROR_SCHEMA = {"type": "object", "required": ["error", "detail"],
                "properties": {"error": {"type": "string"}, "detail": {"type": "string"}}}
WHY = {400: "Bad input", 401: "No token, or a revoked one", 403: "Not allowed to",
       404: "Not found", 409: "Already exists", 413: "Too large", 429: "Too many posts, sign-ins or typing signals",
       503: "The database is busy or unreachable"}


def document(routes, prefix: str) -> dict:
    paths: dict[str, dict] = {}
    for r in routes:
        op = {"summary": r.summary, "operationId": _op_id(r),
              "parameters": [_path_param(n) for n in re.findall(r"{(\w+)}", r.path)]
              + [_query_param(p) for p in r.query],
              "responses": {str(r.status): {"description": "OK", "content": {
                  r.produces: {"schema": r.returns or {"type": "string"}}}}}}
        if r.need is None:
            op["security"] = []
        if r.body is not None:
            op["requestBody"] = {"required": True,
                                 "content": {"application/json": {"schema": r.body}}}
        codes = set(r.errors) | ({401, 403} if r.need else set()) | ({413} if r.body else set())
        for code in sorted(codes):
            op["responses"][str(code)] = {"description": WHY[code], "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
        paths.setdefault(prefix + r.path, {})[r.method.lower()] = op
    return {"openapi": "3.1.0",
            "info": {"title": "mood-poller", "version": __version__,
                     "description": "Moods, posts, agents and wakes. Authenticate with "
                                    "'Authorization: Bearer <token>' (`mood-poller person "
                                    "token HANDLE`). Errors are {\"error\": code, \"detail\": "
                                    "sentence}."},
            "servers": [{"url": "/"}],
            "security": [{"bearer": []}],
            "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
                           "schemas": {"Error": ERROR_SCHEMA}},
            "paths": paths}


def _op_id(r) -> str:
    words = re.sub(r"[{}]", "", r.path).strip("/").replace("/", "_").replace(".", "_")
    return f"{r.method.lower()}_{words}"


def _path_param(name: str) -> dict:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def _query_param(p) -> dict:
    schema = {"type": "integer"} if p.kind == "integer" else {"type": "string"}
    if p.kind == "time":
        schema["format"] = "date-time"
    if p.enum:
        schema["enum"] = list(p.enum)
    return {"name": p.name, "in": "query", "required": p.required, "description": p.help,
            "schema": schema}
