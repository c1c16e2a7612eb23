"""Datasette plugin: the hooks that make the browse database the auditor's pages.

Registered by ``web.make_app``; never loaded by plain ``datasette`` runs.

- ``register_routes``: the home, cohort, object/result and find pages (``pages``);
- ``extra_template_vars``: URL and link helpers for every template;
- ``render_cell``: digests link to their object page, cohort ids to their cohort page,
  key ids to their identities; a result's own status reads as its claim;
- ``asgi_wrapper``: a request path that is not ASCII gets a 404 that says why;
- ``handle_exception``: every error answered without a traceback on the server's output,
  except an internal one (a 500), whose traceback goes to stderr; a bad table parameter
  Datasette raises as a 500 is a 400.

Every value shown comes from the browse database and is escaped by Jinja (or
``markupsafe``) before it is placed in HTML.
"""

from __future__ import annotations

import sqlite3
import traceback
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import TYPE_CHECKING

from datasette import hookimpl
from markupsafe import Markup

from cohorts.browse.addresses import cohort_url, link_digests, object_url
from cohorts.browse.names import DATABASE, DIGEST_RE, KEY_ID_RE

if TYPE_CHECKING:
    # Datasette ships no types: these name what the hooks are given (untyped to mypy).
    from datasette.app import Datasette
    from datasette.utils.asgi import Request, Response

# ASGI (the interface Datasette serves through): a request's scope, the callables that
# receive and send its messages, and an application.
Scope = MutableMapping[str, object]
Receive = Callable[[], Awaitable[MutableMapping[str, object]]]
Send = Callable[[MutableMapping[str, object]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@hookimpl  # type: ignore[untyped-decorator]
def render_cell(
    row: sqlite3.Row | Mapping[str, object],
    value: object,
    column: str,
    table: str | None,
    database: str,
) -> Markup | None:
    """Digests link to their object page; key ids link to the identities they belong to;
    cohort ids to their cohort page. A result's own ``status`` is shown as what it is,
    the result's claim, with a link to the page that checks its provenance (the browse
    database holds no verdict of its own)."""
    if not isinstance(value, str):
        return None
    if table in ("results", "result_signatures") and column == "status":
        try:  # a row of chosen columns (?_col=) may lack the digest
            cell = row["digest" if table == "results" else "result_digest"]
            # A foreign key Datasette expanded is {"value", "label"}.
            digest = str(cell["value"] if isinstance(cell, dict) else cell)
        except (IndexError, KeyError):
            return Markup('<span class="claim">states {}</span> <small>(its claim)</small>').format(
                value
            )
        return Markup(
            '<span class="claim">states {}</span> <small>(its claim: <a href="{}">check'
            " provenance</a>)</small>"
        ).format(value, object_url(digest))
    if column in ("cohort_id", "predecessor_id", "successor_id") and value:
        return Markup('<a href="{}">{}</a>').format(cohort_url(value), value)
    if DIGEST_RE.match(value):
        return Markup('<a class="digest" href="{}">{}</a>').format(object_url(value), value)
    if KEY_ID_RE.match(value) and column == "key_id":
        return Markup('<a class="digest" href="/{}/identities?key_id={}">{}</a>').format(
            DATABASE, value, value
        )
    return None


@hookimpl  # type: ignore[untyped-decorator]
def handle_exception(
    datasette: Datasette, request: Request, exception: Exception
) -> Callable[[], Awaitable[Response]]:
    """Answer every error; Datasette's own handler is unregistered (``web.make_app``).

    That handler prints each exception with its local variables (through rich) on
    stdout: some 190 KB for every query past a bound, enough to block ``serve`` on a pipe
    nobody reads. Here a refusal (4xx) is answered with nothing printed, and only an
    unexpected error (500, a bug) prints its traceback, on stderr.
    """
    from datasette.utils.asgi import Base400, Response
    from datasette.views.base import DatasetteError

    title: str | None = None
    message: str
    if bad_parameter(exception):
        status, message = 400, f"Bad request: {exception}"
    elif isinstance(exception, Base400):
        status, message = exception.status, str(exception.args[0])
    elif isinstance(exception, DatasetteError):
        status, title = exception.status, exception.title
        message = Markup(exception.message) if exception.message_is_html else exception.message
    else:
        status, message = 500, str(exception)
    if status >= 500:
        traceback.print_exception(exception)

    async def answer() -> Response:
        info = {"ok": False, "error": message, "status": status, "title": title}
        if request.path.split("?")[0].endswith(".json"):
            return Response.json(info, status=status)
        template = datasette.jinja_env.select_template([f"{status}.html", "error.html"])
        page = await template.render_async(
            {
                **info,
                "urls": datasette.urls,
                "app_css_hash": datasette.app_css_hash(),
                "menu_links": lambda: [],
            }
        )
        return Response.html(page, status=status)

    return answer


@hookimpl  # type: ignore[untyped-decorator]
def register_routes() -> list[tuple[str, Callable[..., Awaitable[object]]]]:
    """Our pages (``pages``); Datasette's own stay under ``/browse`` and ``/-/``."""
    from cohorts.browse import pages

    return [
        (r"^/$", pages.home_page),
        (r"^/-/cohort/(?P<ref>.*)$", pages.cohort_page),
        (r"^/-/object/(?P<ref>.*)$", pages.object_address),
        (r"^/-/find$", pages.find_page),
        (r"^/-/provenance/(?P<digest>sha256:[0-9a-f]{64})\.json$", pages.provenance_json),
    ]


@hookimpl  # type: ignore[untyped-decorator]
def extra_template_vars() -> dict[str, object]:
    """Helpers every template may use: page URLs (quoted) and escaped digest links."""
    return {
        "object_url": object_url,
        "cohort_url": cohort_url,
        "link_digests": link_digests,
        "database": DATABASE,
    }


#: Datasette 0.65 raises these for a bad table parameter with DatasetteError's default
#: status, 500; they are the visitor's mistake, not the server's.
BAD_PARAMETER = ("Cannot sort table by ", "Cannot use _sort and _sort_desc")


def bad_parameter(exception: BaseException) -> bool:
    """Whether ``exception`` is Datasette refusing a table parameter (``BAD_PARAMETER``)."""
    from datasette.views.base import DatasetteError

    return (
        isinstance(exception, DatasetteError)
        and exception.status == 500
        and str(exception.message).startswith(BAD_PARAMETER)
    )


def refusal(scope: Mapping[str, object]) -> tuple[int, bytes] | None:
    """Why a request is refused before Datasette sees it, or None.

    A path that is not ASCII: Datasette's router decodes the raw path as ASCII and would
    fail with an internal error (a browser percent-encodes such bytes). A NUL anywhere in
    the path or query, raw or percent-encoded: SQLite refuses a query parameter holding
    one with an internal error, and no id, digest or search needs it. ``_through``:
    Datasette fails on one that is not JSON naming a foreign key with an internal error,
    and no page of ours links one."""
    if scope.get("type") != "http":
        return None
    raw = scope.get("raw_path")
    query = scope.get("query_string")
    path = raw if isinstance(raw, bytes) else str(scope.get("path", "")).encode()
    wire = path + b"?" + (query if isinstance(query, bytes) else b"")
    if not path.isascii():
        return 404, b"Not found: the address holds bytes that are not ASCII; percent-encode them"
    if b"\0" in wire or b"%00" in wire:
        return 400, b"Bad request: the address holds a NUL character (%00)"
    names = urllib.parse.parse_qs(wire.partition(b"?")[2].decode("latin-1"), True)
    if "_through" in names:
        return 400, b"Bad request: _through is not offered by this server"
    return None


@hookimpl  # type: ignore[untyped-decorator]
def asgi_wrapper() -> Callable[[ASGIApp], ASGIApp]:
    """Answer a request ``refusal`` names with its status and one line, as plain text."""

    def wrap(app: ASGIApp) -> ASGIApp:
        async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
            refused = refusal(scope)
            if refused is None:
                await app(scope, receive, send)
                return
            status, line = refused
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8")],
                }
            )
            await send({"type": "http.response.body", "body": line + b"\n"})

        return guarded

    return wrap
