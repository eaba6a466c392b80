"""What a route answers for a path id no resource can have: 404, as for an id nothing has, saying why.

Every id in a path has a fixed shape (the routes declare it, :mod:`benchgen.api.parameters`), so an id of
another shape names nothing: it is not found, never looked up, and the answer says what an id is. A run id
is also the folder of a submission key, so whoever asks about one that no run can have is told as well why
an upload under it was refused (the same answer for every such id: it tells nobody about anyone's uploads).
"""

from __future__ import annotations

from urllib.parse import unquote

from benchgen.bucket_layout import NAME_RULE
from benchgen.records.bounds import MAX_KEY_CHARS, clip_text

RUN_ID = "run_id"
# The shape of every other id in a path (benchgen.requests.schemas.common.ID_PATTERN), as a sentence.
ID_RULE = "1-160 letters, digits, '.', '_' or '-', starting with a letter or digit"


def no_such_id(parameter: str, value: str) -> str:
    """The 404's message for ``value``, given as the path parameter ``parameter`` (``dataset_id``...)."""
    shown = clip_text(unquote(value), MAX_KEY_CHARS)
    if parameter == RUN_ID:
        return (
            f"no run {shown!r}: no run can have this id (a run id is {NAME_RULE}), so a submission uploaded "
            f"under submissions/{shown}/ is refused and never scored; create a run with POST /runs and "
            "upload to the URL it returns"
        )
    noun = parameter.removesuffix("_id").replace("_", " ")
    return f"no {noun} {shown!r}: no {noun} can have this id (an id is {ID_RULE}); check the id"
