"""moto's `TransactWriteItems` backing up each table once, not once per item: the same answers at a
fraction of the cost.

Before it runs a transaction, moto (5.x, `DynamoDBBackend.transact_write_items`) deep-copies every
table the transaction names, so that a cancelled transaction can restore it; but it makes that
copy once per item of the transaction, keeping the last: an 8-item transaction on one table copied
the whole table eight times. On a table of 300 items of 0.5 KB a 2-item transaction took 90 ms and
an 8-item one 317 ms (a 1-item `PutItem`, 14 ms), all of it under the wrapper's one lock, so every
other DynamoDB request of the run waited behind it.

`install()` runs moto's own `transact_write_items` with the `copy` module its code uses replaced,
for that call, by one whose `deepcopy` of a `Table` answers the copy it made of that table first
in the call (any other value is copied as before). The copies are made before the transaction
writes anything (moto's backup loop comes first), so the one kept is the one moto would have
kept. The swap is safe because the wrapper runs one DynamoDB request at a time
(`moto_server.DYNAMODB_LOCK`). `test_transaction_backup.py` shows a cancelled transaction still
leaving its tables as they were, and the number of copies made.
"""

import copy as _copy

from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.models.table import Table

_installed = False
# Tables deep-copied by the last transaction (the tests read it).
copies_made = 0


class _OnceCopy:
    """The `copy` module as one transaction sees it: a `Table` is deep-copied once."""

    def __init__(self):
        self.tables = {}

    def deepcopy(self, value, *args, **kwargs):
        global copies_made
        if not isinstance(value, Table):
            return _copy.deepcopy(value, *args, **kwargs)
        if id(value) not in self.tables:
            self.tables[id(value)] = _copy.deepcopy(value, *args, **kwargs)
            copies_made += 1
        return self.tables[id(value)]

    def __getattr__(self, name):
        return getattr(_copy, name)


def install():
    """Puts the once-per-table backup on moto's `transact_write_items`; once per process."""
    global _installed
    if _installed:
        return
    original = dynamodb_models.DynamoDBBackend.transact_write_items

    def transact_write_items(self, transact_items):
        global copies_made
        copies_made = 0
        dynamodb_models.copy = _OnceCopy()
        try:
            return original(self, transact_items)
        finally:
            dynamodb_models.copy = _copy

    dynamodb_models.DynamoDBBackend.transact_write_items = transact_write_items
    _installed = True
