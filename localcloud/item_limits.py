"""DynamoDB's item size quota (400 KB), enforced on every update moto applies.

moto already refuses a put, a batch or transaction write, and an update that sets a top-level attribute
when the item would pass its bound (405,000 bytes, below DynamoDB's 409,600) with DynamoDB's
``ValidationException``. An update that sets a path inside a map or a list (``SET #files.#label = :key``)
grows the item without that check, so an item can swell past 400 KB locally and fail only on AWS.
And moto's own refusal of an update can leave the item half updated, or created with only its key.
While active, :class:`ItemSizeLimit` checks the item after every ``update_item`` (the backend method,
private to moto: moto is pinned) and, when it passed the bound, puts the item back as it was (or
removes the one the update created) and answers as DynamoDB does: ``ValidationException`` "Item size
to update has exceeded the maximum allowed size".
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

from localcloud.patches import Patch, Patches

# moto's bound for a put (moto.dynamodb.models.dynamo_type.LimitedSizeDict), so that every write meets
# the same one; DynamoDB's own is 400 KiB, attribute names and values counted in UTF-8 bytes.
MAX_ITEM_BYTES = 405_000


class ItemSizeLimit(Patches):
    """Context manager: while active, an update that makes an item too large fails and changes nothing.

    Enter it before :class:`localcloud.atomic_writes.AtomicItemWrites`, so that the check and the
    restore happen inside that lock, with no other write in between."""

    def declare(self) -> Iterator[Patch]:
        from moto.dynamodb.models import DynamoDBBackend

        yield Patch(DynamoDBBackend, "update_item", _bounded(DynamoDBBackend.update_item))


def _bounded(update_item: Callable[..., Any]) -> Callable[..., Any]:
    from moto.dynamodb.exceptions import ItemSizeToUpdateTooLarge
    from moto.dynamodb.models.dynamo_type import DynamoType

    def bounded(backend: Any, table_name: str, key: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        table = backend.get_table(table_name)
        if table.hash_key_attr not in key:
            return update_item(backend, table_name, key, *args, **kwargs)
        hash_value = DynamoType(key[table.hash_key_attr])
        range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr in key else None
        # The Item's own deep copy: copying its attributes alone would re-measure them one by one.
        kept = copy.deepcopy(table.get_item(hash_value, range_value))
        try:
            updated = update_item(backend, table_name, key, *args, **kwargs)
            if updated.size() > MAX_ITEM_BYTES:
                raise ItemSizeToUpdateTooLarge()
        except ItemSizeToUpdateTooLarge:
            # moto's own refusal (of a top-level attribute) can leave the item half updated, or created
            # with its key alone: DynamoDB changes nothing.
            if kept is None:
                table.delete_item(hash_value, range_value)
            else:
                table.get_item(hash_value, range_value).attrs = kept.attrs
            raise
        return updated

    return bounded
