"""Interactive API docs at /docs, the spec at /openapi.json: no CDN, nothing fetched.

flask-smorest renders the Swagger UI page; its scripts and styles come from the
`swagger-ui-bundle` package (Swagger UI's release files, installed with the service) and
are served here under /docs/assets/. So the docs work on a machine with no internet
access, and the page loads nothing from another origin.
"""

from __future__ import annotations

from flask import Flask, Response, redirect, request, send_from_directory
from swagger_ui_bundle import swagger_ui_path
from werkzeug.wrappers import Response as Redirect

ASSETS = "/docs/assets/"

SETTINGS = {
    "OPENAPI_URL_PREFIX": "/",
    "OPENAPI_JSON_PATH": "openapi.json",
    "OPENAPI_SWAGGER_UI_PATH": "docs",
    "OPENAPI_SWAGGER_UI_URL": ASSETS,
    # Swagger UI otherwise sends the spec to validator.swagger.io for a badge.
    "OPENAPI_SWAGGER_UI_CONFIG": {"validatorUrl": None},
}
"""flask-smorest's settings for the spec and the docs page; read when Api(app) is made."""


def register(app: Flask) -> None:
    @app.get("/docs/")
    def docs_slash() -> Redirect:
        # The page is /docs; /docs/ is what many type, and was a 404.
        query = request.query_string.decode("latin-1")
        return redirect("/docs" + (f"?{query}" if query else ""), 308)

    @app.get(f"{ASSETS}<path:filename>")
    def docs_asset(filename: str) -> Response:
        # send_from_directory refuses any path that leaves the directory (a 404).
        return send_from_directory(swagger_ui_path, filename, max_age=3600)
