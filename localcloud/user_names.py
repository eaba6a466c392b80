"""Sign-in names as a user pool created case-insensitive reads them.

A user pool whose ``UsernameConfiguration`` sets ``CaseSensitive`` to false treats ``Ada@Example.com``
and ``ada@example.com`` as the same user, for the user name and its email alias alike. moto keeps the
setting but looks users up by the exact name. While active, :class:`CaseInsensitiveUserNames` makes the
lookup of such a pool's users (``CognitoIdpUserPool._get_user``, private to moto: moto is pinned) find a
user whose name, or the attribute a pool signs in with, differs from the one given only in case.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from localcloud.patches import Patch, Patches


class CaseInsensitiveUserNames(Patches):
    """Context manager: while active, a case-insensitive pool finds its users whatever the case given."""

    def declare(self) -> Iterator[Patch]:
        from moto.cognitoidp.models import CognitoIdpUserPool

        yield Patch.wrapping(CognitoIdpUserPool, "_get_user", _case_insensitive)


def _case_insensitive(get_user: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    from moto.cognitoidp.utils import flatten_attrs

    def found(pool: Any, username: str) -> Any:
        user = get_user(pool, username)
        config = pool.extended_config
        if user is not None or config.get("UsernameConfiguration", {}).get("CaseSensitive", True):
            return user
        wanted = username.casefold()
        signs_in_with = [*config.get("UsernameAttributes", []), *config.get("AliasAttributes", [])]
        for candidate in pool.users.values():
            attributes = flatten_attrs(candidate.attributes)
            names = [candidate.username, *(attributes.get(name) for name in signs_in_with)]
            if any(isinstance(name, str) and name.casefold() == wanted for name in names):
                return candidate
        return None

    return found
