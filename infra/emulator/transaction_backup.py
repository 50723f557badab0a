"""moto's `TransactWriteItems` backing up the items it names, not whole tables: the same answers
at a fraction of the cost.

Before it runs a transaction, moto (5.x, `DynamoDBBackend.transact_write_items`) deep-copies every
table the transaction names, so that a cancelled transaction can put the copy in the table's place;
and it makes that copy once per item of the transaction. A transaction costs time in proportion to
the size of its tables, not of itself: on a table of 300 items of 0.5 KB a 2-item transaction took
90 ms and an 8-item one 317 ms (a 1-item `PutItem`, 14 ms), and in the test command's run the
copies were a sixth of all the emulator's time, all of it under the wrapper's one lock, so every
other DynamoDB request waited behind them.

`install()` wraps moto's own `transact_write_items`: before it runs, the wrapper deep-copies the
item each action names as it is (or notes that there is none), and runs moto's code with the
`copy` module its code uses replaced, for that call, by one whose `deepcopy` of a `Table` answers
the table itself, so moto's "restore" puts each table back in its own place. When moto raises (a
cancelled transaction, a refused one), the wrapper puts every named item back as it was, in
reverse order, removing those that did not exist. An action only ever writes the item it names,
so the tables end as moto's copies would have left them. A table with a stream keeps moto's
whole-table copy (once per transaction), since its stream records would have to be undone too.

The swap is safe because the wrapper runs one DynamoDB request at a time
(`moto_server.DYNAMODB_LOCK`). `test_transaction_backup.py` shows cancelled transactions (a failed
condition, a refused one) leaving their tables as they were, item updates and deletes included, and
counts the tables copied.
"""

import copy as _copy

from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table

_installed = False
# Whole tables deep-copied by the last transaction (the tests read it): 0 unless one had a stream.
copies_made = 0


class _TableCopy:
    """The `copy` module as one transaction sees it: a `Table` without a stream "copied" as
    itself (its items are backed up one by one instead), one with a stream deep-copied once."""

    def __init__(self):
        self.tables = {}

    def deepcopy(self, value, *args, **kwargs):
        global copies_made
        if not isinstance(value, Table):
            return _copy.deepcopy(value, *args, **kwargs)
        if value.stream_shard is None:
            return value
        if id(value) not in self.tables:
            self.tables[id(value)] = _copy.deepcopy(value, *args, **kwargs)
            copies_made += 1
        return self.tables[id(value)]

    def __getattr__(self, name):
        return getattr(_copy, name)


def _named_key(table, action_type, action):
    """The (hash, range) key of the item an action names, as moto's `Table.items` keys it, or None
    where the action is malformed (moto refuses it and writes nothing)."""
    try:
        attributes = action["Item"] if action_type == "Put" else action["Key"]
        hash_value = DynamoType(attributes[table.hash_key_attr])
        if table.range_key_attr is None:
            return hash_value, None
        return hash_value, DynamoType(attributes[table.range_key_attr])
    except (KeyError, TypeError, AttributeError, ValueError):
        return None


def _backup(backend, transact_items):
    """[(table, hash, range, a deep copy of the item or None)] for each item the transaction
    names in a table without a stream."""
    saved = []
    for entry in transact_items:
        if not isinstance(entry, dict) or len(entry) != 1:
            continue
        action_type, action = next(iter(entry.items()))
        if not isinstance(action, dict):
            continue
        table = backend.tables.get(action.get("TableName"))
        if table is None or table.stream_shard is not None:
            continue
        key = _named_key(table, action_type, action)
        if key is None:
            continue
        hash_value, range_value = key
        if range_value is None:
            current = table.items.get(hash_value)
        else:
            current = table.items.get(hash_value, {}).get(range_value)
        saved.append((table, hash_value, range_value, _copy.deepcopy(current)))
    return saved


def _restore(saved):
    """Puts each backed-up item back (last first, so an item named twice ends as it began)."""
    for table, hash_value, range_value, item in reversed(saved):
        if range_value is None:
            if item is None:
                table.items.pop(hash_value, None)
            else:
                table.items[hash_value] = item
            continue
        partition = table.items.get(hash_value)
        if item is None:
            if partition is not None:
                partition.pop(range_value, None)
                if not partition:
                    del table.items[hash_value]
        else:
            table.items[hash_value][range_value] = item


def install():
    """Puts the item-level backup on moto's `transact_write_items`; once per process."""
    global _installed
    if _installed:
        return
    original = dynamodb_models.DynamoDBBackend.transact_write_items

    def transact_write_items(self, transact_items):
        global copies_made
        copies_made = 0
        saved = _backup(self, transact_items) if isinstance(transact_items, list) else []
        dynamodb_models.copy = _TableCopy()
        try:
            return original(self, transact_items)
        except BaseException:
            _restore(saved)
            raise
        finally:
            dynamodb_models.copy = _copy

    dynamodb_models.DynamoDBBackend.transact_write_items = transact_write_items
    _installed = True
