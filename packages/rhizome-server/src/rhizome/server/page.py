"""The web page at ``/``: a single static page (``page/index.html``, ``page/app.js``,
``page/style.css``) and the vendored graph library (``page/vendor/``), served from the
package so the page works offline. It holds no data: it calls the REST API from the browser,
with the API key the person types in (kept in the browser's session storage), so ``/`` and
``/ui/...`` need no key, as ``/docs`` needs none.

Every response of the page carries a Content-Security-Policy that allows scripts, styles and
requests to this server only."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse
from starlette.staticfiles import StaticFiles
from starlette.types import Message, Receive, Scope, Send

FOLDER = Path(__file__).with_name("page")
PREFIX = "/ui"
"""Where the page's files are served (``ui`` is a name no workspace may take)."""

CYTOSCAPE_STYLE = "pgvDUBa4IjFA2yuSJ2cqcyxmNYJMborsd0ORcRv9vw8="
"""The sha256 of the one style rule Cytoscape.js adds to the page itself
(``.__________cytoscape_container { position: relative; }``): the policy allows that rule and no
other inline style. A new Cytoscape that changes the rule shows up as a console error in the
page's test."""

POLICY = (f"default-src 'self'; script-src 'self'; style-src 'self' 'sha256-{CYTOSCAPE_STYLE}'; img-src 'self' data: blob:; "
          "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
HEADERS = {"Content-Security-Policy": POLICY, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}

router = APIRouter(include_in_schema=False)


@router.get("/")
async def index() -> FileResponse:
    return FileResponse(FOLDER / "index.html", media_type="text/html", headers={**HEADERS, "Cache-Control": "no-cache"})


class PageFiles(StaticFiles):
    """The page's files, with the page's headers."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *((k.lower().encode(), v.encode()) for k, v in HEADERS.items())]
            await send(message)

        await super().__call__(scope, receive, with_headers)


def files() -> PageFiles:
    return PageFiles(directory=FOLDER, check_dir=True)
