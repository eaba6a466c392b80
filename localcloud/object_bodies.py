"""A PUT's body is stored as sent, whatever its Content-Type says, as S3 stores it.

`curl --data-binary @file <upload_url>` and Python's urllib send `application/x-www-form-urlencoded` by
default. S3 keeps the bytes (and that content type). moto reads such a body as a form twice over: its
server's dispatcher decodes it as UTF-8 to look for a query-protocol `Action` (a body that is not UTF-8 is
then consumed and never given back, and the request waits forever for bytes already read), and werkzeug
parses it into form fields, leaving moto's S3 an empty body: the object was stored empty.

No AWS API takes a form-encoded PUT (the query protocol is POST), so for PUT only: the dispatcher routes
without seeing the content type, and the request does not parse a form. POST keeps moto's form handling:
S3's browser uploads (POST Object) are multipart forms. Both hooks patch moto internals (moto is pinned);
tests/integration/test_object_bodies.py proves them through real HTTP PUTs to presigned URLs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from localcloud.patches import Patch
from localcloud.server_dispatch import Dispatch, DispatchHook

_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
_FORM_SWITCH = "want_form_data_parsed"


def _is_form_put(environ: dict[str, Any]) -> bool:
    content_type = str(environ.get("CONTENT_TYPE", "")).strip().lower()
    return environ.get("REQUEST_METHOD") == "PUT" and content_type.startswith(_FORM_TYPES)


class RawPutBodies(DispatchHook):
    """Context manager: while active, moto stores the exact bytes of every PUT."""

    def declare(self) -> Iterator[Patch]:
        from moto.core.request import Request

        # werkzeug's switch (a property: "is a Content-Type sent"), which moto's request inherits.
        parses_forms = getattr(Request, _FORM_SWITCH).fget

        def want_form_data_parsed(request: Any) -> bool:
            return request.method != "PUT" and bool(parses_forms(request))

        yield Patch(Request, _FORM_SWITCH, property(want_form_data_parsed))
        yield from super().declare()

    def wrap(self, dispatch: Dispatch) -> Dispatch:
        def route_without_reading_the_body(
            dispatcher: Any, environ: dict[str, Any], start_response: Any
        ) -> Iterable[bytes]:
            if not _is_form_put(environ):
                return dispatch(dispatcher, environ, start_response)
            content_type = environ.pop("CONTENT_TYPE")
            try:
                application = dispatcher.get_application(environ)
            finally:
                environ["CONTENT_TYPE"] = content_type
            routed: Iterable[bytes] = application(environ, start_response)
            return routed

        return route_without_reading_the_body
