"""Cross-origin calls from the web console: allowed for the one origin the console is served from.

Powertools fixes a resolver's CORS configuration when its routes are registered, at import, before the
function has read its settings. :class:`ConsoleOrigin` asks for the allowed origin on each response
instead, so the origin stays a setting (``CONSOLE_ORIGIN``) like every other name the stack hands over.
"""

from __future__ import annotations

from collections.abc import Callable

from aws_lambda_powertools.event_handler import CORSConfig

# The headers the console sends beside powertools' defaults (Authorization, Content-Type, ...).
CONSOLE_HEADERS = ["Idempotency-Key"]


class ConsoleOrigin(CORSConfig):
    """CORS headers on a response only when the request comes from the console's origin.

    ``allowed`` returns that origin, or None where no console is deployed: then no origin is allowed.
    """

    def __init__(self, allowed: Callable[[], str | None]) -> None:
        super().__init__(allow_origin="null", allow_headers=CONSOLE_HEADERS)
        self._allowed = allowed

    def allowed_origin(self, extracted_origin: str) -> str | None:
        allowed = self._allowed()
        return extracted_origin if allowed and extracted_origin == allowed else None

    def to_dict(self, origin: str | None) -> dict[str, str]:
        if origin is None or self.allowed_origin(origin) is None:
            return {}
        return {
            "Access-Control-Allow-Origin": origin,
            "Access-Control-Allow-Headers": CORSConfig.build_allow_methods(self.allow_headers),
            # The answer differs with the caller's origin: caches must keep them apart.
            "Vary": "Origin",
        }
