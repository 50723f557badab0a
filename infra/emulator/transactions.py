"""Transaction conflicts as DynamoDB makes them, for the emulator (`moto_server.py`).

DynamoDB does not queue a request behind a transaction that holds one of its items: it refuses it
(developer guide, "Amazon DynamoDB Transactions: How it works", section "Transaction conflict
handling in DynamoDB"; API reference, `TransactionCanceledException` and
`TransactionConflictException`):

- an item of a `TransactWriteItems` that is part of another ongoing `TransactWriteItems`: the
  arriving transaction is cancelled, `TransactionCanceledException` whose `CancellationReasons`
  hold, in request order, `{"Code": "TransactionConflict", "Message": ...}` for that item and
  `{"Code": "None"}` for the others;
- a `PutItem`, `UpdateItem` or `DeleteItem` of an item that an ongoing `TransactWriteItems`
  includes: `TransactionConflictException` (HTTP 400), "Transaction is ongoing for the item";
- an item of a `TransactGetItems` that is part of an ongoing `TransactWriteItems`, `PutItem`,
  `UpdateItem`, `DeleteItem` or `BatchWriteItem`: the `TransactGetItems` is cancelled
  (`TransactionCanceledException`, `TransactionConflict` for that item). So is a
  `TransactGetItems` still waiting its turn when such a write arrives for one of its items (the
  API reference: the ongoing `TransactGetItems` fails).

"Ongoing" is real overlap here, never chance: a request registers the items (table and primary
key) it names when it arrives, before it waits for the emulator's DynamoDB lock, and unregisters
them once its answer is produced. A request that arrives while a conflicting one is registered is
refused at once, without waiting for the lock. Under load the wait for the lock is part of a
transaction's time in flight, as the two phases of a commit are in DynamoDB.

Not modelled: a `TransactWriteItems` that meets an ongoing single-item write or `BatchWriteItem`
waits (DynamoDB does not document a conflict there), and a `BatchWriteItem` put or delete of an
item held by a transaction is not refused (DynamoDB documents no per-item outcome for it).

No hold time is added: the test suite's own concurrency makes such overlap (a run of the Rust
tests with conflicts on met over 900 of them).
"""

import json
import threading

ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"
ONGOING = "Transaction is ongoing for the item"
CANCELLED = "Transaction cancelled, please refer cancellation reasons for specific reasons [{}]"
SINGLE_WRITES = ("PutItem", "UpdateItem", "DeleteItem")


class Refusal:
    """A conflict's answer: DynamoDB's HTTP status and JSON body, and the items in conflict
    (`items`, for the emulator's log)."""

    def __init__(self, body, items):
        self.status = "400 Bad Request"
        self.body = json.dumps(body).encode()
        self.items = items


def cancelled(conflicting, count, items=()):
    """`TransactionCanceledException` for a transaction of `count` items whose items at the
    indexes `conflicting` are held by another request (shaped as DynamoDB and moto shape it)."""
    codes = ["TransactionConflict" if i in conflicting else "None" for i in range(count)]
    return Refusal(
        {
            "__type": ERROR_PREFIX + "TransactionCanceledException",
            "Message": CANCELLED.format(", ".join(codes)),
            "CancellationReasons": [
                {"Code": code, "Message": ONGOING} if code != "None" else {"Code": "None"}
                for code in codes
            ],
        },
        items,
    )


def conflict_exception(items=()):
    """`TransactionConflictException`: a single-item write to an item a transaction holds."""
    return Refusal(
        {"__type": ERROR_PREFIX + "TransactionConflictException", "message": ONGOING}, items
    )


class Ticket:
    """One request's registration: `refused` (a `Refusal`, or None when it may run), `doomed()`
    once it holds the lock (a `Refusal` for a
    `TransactGetItems` that a later write cancelled, else None), `leave()` when its answer is
    produced."""

    def __init__(self, registry, refused=None, writes=(), singles=(), reads=()):
        self.registry = registry
        self.refused = refused
        self.writes = list(writes)
        self.singles = list(singles)
        self.reads = list(reads)
        self.count = 0
        self.conflicting = set()

    def doomed(self):
        if not self.conflicting:
            return None
        return cancelled(
            self.conflicting, self.count, [i for n, i in self.reads if n in self.conflicting]
        )

    def leave(self):
        self.registry.leave(self)


class Registry:
    """The items of the requests in flight. `enter(operation, request)` registers a request (or
    refuses it) and answers its `Ticket`; `tables` (`limits.Tables`) tells which attributes of a
    put item form its primary key."""

    def __init__(self, tables):
        self.tables = tables
        self.guard = threading.Lock()
        self.transactions = {}  # item -> the Ticket of the TransactWriteItems holding it
        self.singles = {}  # item -> number of single-item or batch writes in flight
        self.readers = {}  # item -> {Ticket: index} of the TransactGetItems waiting for it

    def item(self, table, attributes):
        """The identity of an item: its table and primary key (None when the table is unknown)."""
        hash_key, range_key = self.tables.keys_of(table)
        if hash_key is None or not isinstance(attributes, dict):
            return None
        key = {name: attributes.get(name) for name in (hash_key, range_key) if name}
        return table, json.dumps(key, sort_keys=True, separators=(",", ":"))

    def transact_write_items(self, request):
        items = []
        for action in request.get("TransactItems") or []:
            # One of Put, Update, Delete, ConditionCheck; a Put names its item by its attributes.
            pairs = action.items() if isinstance(action, dict) else ()
            kind, body = next(iter(pairs), (None, None))
            body = body if isinstance(body, dict) else {}
            attributes = body.get("Item") if kind == "Put" else body.get("Key")
            items.append(self.item(body.get("TableName"), attributes))
        return items

    def transact_get_items(self, request):
        items = []
        for action in request.get("TransactItems") or []:
            body = action.get("Get") if isinstance(action, dict) else None
            body = body if isinstance(body, dict) else {}
            items.append(self.item(body.get("TableName"), body.get("Key")))
        return items

    def batch_write_items(self, request):
        items = []
        for table, writes in (request.get("RequestItems") or {}).items():
            for write in writes or []:
                put = (write.get("PutRequest") or {}).get("Item")
                key = (write.get("DeleteRequest") or {}).get("Key")
                items.append(self.item(table, put if put is not None else key))
        return items

    def doom_readers(self, items):
        """Cancels the waiting TransactGetItems that read one of `items` (guard held)."""
        for item in items:
            for reader, index in self.readers.get(item, {}).items():
                reader.conflicting.add(index)

    def enter(self, operation, request):
        if operation == "TransactWriteItems":
            items = self.transact_write_items(request)
            with self.guard:
                held = {i for i, item in enumerate(items) if item in self.transactions}
                if held:
                    return Ticket(
                        self, refused=cancelled(held, len(items), [items[i] for i in sorted(held)])
                    )
                ticket = Ticket(self, writes=[i for i in items if i])
                for item in ticket.writes:
                    self.transactions[item] = ticket
                self.doom_readers(ticket.writes)
                return ticket
        if operation in SINGLE_WRITES or operation == "BatchWriteItem":
            if operation == "BatchWriteItem":
                items = [i for i in self.batch_write_items(request) if i]
            else:
                key = request.get("Item") if operation == "PutItem" else request.get("Key")
                items = [i for i in [self.item(request.get("TableName"), key)] if i]
            with self.guard:
                held = [i for i in items if i in self.transactions]
                if operation != "BatchWriteItem" and held:
                    return Ticket(self, refused=conflict_exception(held))
                for item in items:
                    self.singles[item] = self.singles.get(item, 0) + 1
                self.doom_readers(items)
                return Ticket(self, singles=items)
        if operation == "TransactGetItems":
            items = self.transact_get_items(request)
            with self.guard:
                held = {
                    i
                    for i, item in enumerate(items)
                    if item in self.transactions or item in self.singles
                }
                if held:
                    return Ticket(
                        self, refused=cancelled(held, len(items), [items[i] for i in sorted(held)])
                    )
                ticket = Ticket(self, reads=[(i, item) for i, item in enumerate(items) if item])
                ticket.count = len(items)
                for index, item in ticket.reads:
                    self.readers.setdefault(item, {})[ticket] = index
                return ticket
        return Ticket(self)

    def leave(self, ticket):
        with self.guard:
            for item in ticket.writes:
                if self.transactions.get(item) is ticket:
                    del self.transactions[item]
            for item in ticket.singles:
                left = self.singles.get(item, 0) - 1
                if left > 0:
                    self.singles[item] = left
                else:
                    self.singles.pop(item, None)
            for _, item in ticket.reads:
                waiting = self.readers.get(item)
                if waiting is not None:
                    waiting.pop(ticket, None)
                    if not waiting:
                        del self.readers[item]
            ticket.writes, ticket.singles, ticket.reads = [], [], []
