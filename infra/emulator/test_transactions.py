"""With transaction conflicts on, the emulator refuses what DynamoDB refuses to a request that meets
a transaction in flight (`transactions.py`), through real HTTP and boto3 so the wire shape is
proven; with them off (the default), overlapping transactions wait for each other.

Overlap is made, not hoped for: a test holds the emulator's DynamoDB lock, so a transaction sent
from another thread registers its items and then waits; the test sends the conflicting request
meanwhile (refused without waiting for the lock), then lets the first one run.

Run: .venv/bin/python -m unittest discover -s infra/emulator -p 'test_*.py'
"""

import json
import os
import sys
import threading
import time
import unittest
import uuid

import botocore

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import emulator_testing  # noqa: E402
import moto_server  # noqa: E402

TABLE = "conflicts"
PREFIX = "com.amazonaws.dynamodb.v20120810#"
ONGOING = "Transaction is ongoing for the item"


class Background:
    """`call` run in a thread of its own: `join()` answers its result or raises its error."""

    def __init__(self, call):
        self.result, self.error = None, None
        self.thread = threading.Thread(target=self.run, args=(call,), daemon=True)
        self.thread.start()

    def run(self, call):
        try:
            self.result = call()
        except Exception as error:  # noqa: BLE001 (handed to the test by join)
            self.error = error

    def join(self):
        self.thread.join(30)
        if self.thread.is_alive():
            raise AssertionError("the request did not finish")
        if self.error is not None:
            raise self.error
        return self.result


def wait_until(condition, what):
    deadline = time.monotonic() + 10
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.005)


def key(pk, sk="item"):
    return {"PK": {"S": pk}, "SK": {"S": sk}}


def put(pk, value, table=TABLE):
    return {"Put": {"TableName": table, "Item": {**key(pk), "value": {"S": value}}}}


def update(pk, value, table=TABLE):
    return {
        "Update": {
            "TableName": table,
            "Key": key(pk),
            "UpdateExpression": "SET #v = :v",
            "ExpressionAttributeNames": {"#v": "value"},
            "ExpressionAttributeValues": {":v": {"S": value}},
        }
    }


def condition_check(pk):
    return {
        "ConditionCheck": {
            "TableName": TABLE,
            "Key": key(pk),
            "ConditionExpression": "attribute_exists(PK)",
        }
    }


def delete(pk):
    return {"Delete": {"TableName": TABLE, "Key": key(pk)}}


class TransactionConflicts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server, cls.db = emulator_testing.serve(conflicts=True)
        cls.registry = cls.server.app.registry
        cls.raw = emulator_testing.record_raw_answers(cls.db)
        emulator_testing.create_single_table(cls.db, TABLE)

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()

    def setUp(self):
        run = uuid.uuid4().hex[:8]
        self.a, self.b, self.c, self.d = (f"{name}-{run}" for name in "abcd")

    def other(self):
        return emulator_testing.client_of(self.server)

    def held(self, pk):
        item = self.registry.item(TABLE, key(pk))
        with self.registry.guard:
            return item in self.registry.transactions

    def value(self, pk):
        item = self.db.get_item(TableName=TABLE, Key=key(pk), ConsistentRead=True).get("Item")
        return item and item["value"]["S"]

    def in_flight(self, transaction, pk):
        """Sends `transaction` from another thread while the lock is held; returns once it holds
        item `pk` (it then waits for the lock, which the caller holds)."""
        client = self.other()
        first = Background(lambda: client.transact_write_items(TransactItems=transaction))
        wait_until(lambda: self.held(pk), f"the first transaction holds {pk}")
        return first

    def refused(self, call, code):
        self.raw.clear()
        with self.assertRaises(botocore.exceptions.ClientError) as caught:
            call()
        response = caught.exception.response
        self.assertEqual(response["Error"]["Code"], code)
        self.assertEqual(response["ResponseMetadata"]["HTTPStatusCode"], 400)
        body = json.loads(self.raw[-1])
        self.assertEqual(body["__type"], PREFIX + code)
        return response, body

    def test_a_transaction_naming_an_item_another_holds_is_cancelled_at_that_items_index(self):
        self.db.put_item(TableName=TABLE, Item={**key(self.a), "value": {"S": "before"}})
        with moto_server.DYNAMODB_LOCK:
            first = self.in_flight([update(self.a, "first"), put(self.b, "first")], self.a)
            response, body = self.refused(
                lambda: self.db.transact_write_items(
                    TransactItems=[put(self.c, "second"), condition_check(self.a), delete(self.d)]
                ),
                "TransactionCanceledException",
            )
        first.join()
        conflict = {"Code": "TransactionConflict", "Message": ONGOING}
        reasons = [{"Code": "None"}, conflict, {"Code": "None"}]
        self.assertEqual(body["CancellationReasons"], reasons)
        self.assertEqual(
            body["Message"],
            "Transaction cancelled, please refer cancellation reasons for specific reasons "
            "[None, TransactionConflict, None]",
        )
        self.assertEqual(response["CancellationReasons"], reasons)  # as boto3's model reads it
        self.assertEqual(self.value(self.a), "first")
        self.assertEqual(self.value(self.b), "first")
        self.assertIsNone(self.value(self.c), "the cancelled transaction wrote nothing")
        self.assertFalse(self.held(self.a), "the first transaction let go of its items")

        # Once the first has finished, the same transaction goes through.
        self.db.transact_write_items(TransactItems=[put(self.c, "second"), condition_check(self.a)])
        self.assertEqual(self.value(self.c), "second")

    def test_a_put_item_naming_an_item_held_by_another_transaction_is_cancelled_too(self):
        with moto_server.DYNAMODB_LOCK:
            first = self.in_flight([put(self.a, "first")], self.a)
            _, body = self.refused(
                lambda: self.db.transact_write_items(TransactItems=[put(self.a, "second")]),
                "TransactionCanceledException",
            )
        first.join()
        self.assertEqual(
            body["CancellationReasons"], [{"Code": "TransactionConflict", "Message": ONGOING}]
        )
        self.assertEqual(self.value(self.a), "first")

    def test_transactions_on_disjoint_items_both_succeed_while_they_overlap(self):
        with moto_server.DYNAMODB_LOCK:
            first = self.in_flight([put(self.a, "first"), put(self.b, "first")], self.a)
            second = self.in_flight([put(self.c, "second"), update(self.d, "second")], self.c)
            self.assertTrue(self.held(self.a) and self.held(self.c), "both are in flight at once")
        first.join()
        second.join()
        self.assertEqual(
            [self.value(pk) for pk in (self.a, self.b, self.c, self.d)],
            ["first", "first", "second", "second"],
        )

    def test_a_single_write_to_an_item_a_transaction_holds_fails_with_conflict_exception(self):
        writes = {
            "PutItem": lambda: self.db.put_item(
                TableName=TABLE, Item={**key(self.a), "value": {"S": "single"}}
            ),
            "UpdateItem": lambda: self.db.update_item(
                TableName=TABLE,
                Key=key(self.a),
                UpdateExpression="SET #v = :v",
                ExpressionAttributeNames={"#v": "value"},
                ExpressionAttributeValues={":v": {"S": "single"}},
            ),
            "DeleteItem": lambda: self.db.delete_item(TableName=TABLE, Key=key(self.a)),
        }
        with moto_server.DYNAMODB_LOCK:
            first = self.in_flight([put(self.a, "first")], self.a)
            for name, write in writes.items():
                with self.subTest(name):
                    _, body = self.refused(write, "TransactionConflictException")
                    self.assertEqual(body["message"], ONGOING)
        first.join()
        self.assertEqual(self.value(self.a), "first", "no single write went through")

        # After the transaction has finished, the same single writes succeed.
        writes["PutItem"]()
        self.assertEqual(self.value(self.a), "single")
        writes["DeleteItem"]()
        self.assertIsNone(self.value(self.a))

    def test_a_single_item_write_to_another_item_waits_and_succeeds(self):
        client = self.other()
        with moto_server.DYNAMODB_LOCK:
            first = self.in_flight([put(self.a, "first")], self.a)
            single = Background(
                lambda: client.put_item(
                    TableName=TABLE, Item={**key(self.a, "other"), "value": {"S": "single"}}
                )
            )
            time.sleep(0.05)
        first.join()
        single.join()
        item = self.db.get_item(TableName=TABLE, Key=key(self.a, "other"))["Item"]
        self.assertEqual(item["value"]["S"], "single")

    def test_a_transact_get_items_meeting_a_transaction_in_flight_is_cancelled(self):
        self.db.put_item(TableName=TABLE, Item={**key(self.b), "value": {"S": "b"}})
        with moto_server.DYNAMODB_LOCK:
            first = self.in_flight([put(self.a, "first")], self.a)
            _, body = self.refused(
                lambda: self.db.transact_get_items(
                    TransactItems=[
                        {"Get": {"TableName": TABLE, "Key": key(self.b)}},
                        {"Get": {"TableName": TABLE, "Key": key(self.a)}},
                    ]
                ),
                "TransactionCanceledException",
            )
        first.join()
        self.assertEqual(
            body["CancellationReasons"],
            [{"Code": "None"}, {"Code": "TransactionConflict", "Message": ONGOING}],
        )
        got = self.db.transact_get_items(
            TransactItems=[{"Get": {"TableName": TABLE, "Key": key(self.a)}}]
        )
        self.assertEqual(got["Responses"][0]["Item"]["value"]["S"], "first")

    def test_a_waiting_transact_get_items_is_cancelled_by_a_write_that_arrives_for_its_item(self):
        reader, writer = self.other(), self.other()
        with moto_server.DYNAMODB_LOCK:
            get = Background(
                lambda: reader.transact_get_items(
                    TransactItems=[
                        {"Get": {"TableName": TABLE, "Key": key(self.a)}},
                        {"Get": {"TableName": TABLE, "Key": key(self.b)}},
                    ]
                )
            )
            wait_until(lambda: bool(self.registry.readers), "the read waits for the lock")
            write = Background(
                lambda: writer.transact_write_items(TransactItems=[put(self.b, "written")])
            )
            wait_until(lambda: self.held(self.b), "the write is in flight")
        write.join()
        with self.assertRaises(botocore.exceptions.ClientError) as caught:
            get.join()
        self.assertEqual(
            caught.exception.response["CancellationReasons"],
            [{"Code": "None"}, {"Code": "TransactionConflict", "Message": ONGOING}],
        )
        self.assertEqual(self.value(self.b), "written")


class ConflictsOff(unittest.TestCase):
    """Without the flag (the default), a transaction waits for one in flight on its items."""

    def test_overlapping_transactions_on_one_item_both_succeed_one_after_the_other(self):
        server, db = emulator_testing.serve()
        table = "conflicts-off"
        try:
            self.assertIsNone(server.app.registry)
            emulator_testing.create_single_table(db, table)
            clients = [emulator_testing.client_of(server) for _ in range(2)]
            with moto_server.DYNAMODB_LOCK:
                sent = [
                    Background(
                        lambda c=c, n=n: c.transact_write_items(
                            TransactItems=[update("a", n, table), put("b", n, table)]
                        )
                    )
                    for n, c in zip(("first", "second"), clients)
                ]
                time.sleep(0.1)  # both arrive and wait for the lock
            for request in sent:
                request.join()
            self.assertIn(
                db.get_item(TableName=table, Key=key("a"))["Item"]["value"]["S"],
                ("first", "second"),
            )
        finally:
            server.shutdown()


if __name__ == "__main__":
    unittest.main()
