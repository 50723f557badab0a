"""`transaction_backup.py` changes what a `TransactWriteItems` costs, not what it does: a
transaction that commits writes every item, one that is cancelled (a failed condition on its last
item) or refused (an item named twice) leaves every table it named as it was, over one table and
over two, its puts, updates and deletes undone, and no table is copied whole.

Run: .venv/bin/python -m unittest discover -s infra/emulator -p 'test_*.py'
(test.sh runs it). Serves the wrapper on a free loopback port in a thread of its own.
"""

import os
import sys
import unittest

import botocore

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import emulator_testing  # noqa: E402
import transaction_backup  # noqa: E402

ONE, TWO = "backup-one", "backup-two"


def put(table, pk, condition=None):
    action = {"TableName": table, "Item": {"PK": {"S": pk}, "SK": {"S": "A"}, "n": {"N": "1"}}}
    if condition:
        action["ConditionExpression"] = condition
    return {"Put": action}


def update(table, pk):
    return {
        "Update": {
            "TableName": table,
            "Key": {"PK": {"S": pk}, "SK": {"S": "A"}},
            "UpdateExpression": "SET v = :v, extra = :v",
            "ExpressionAttributeValues": {":v": {"S": "changed"}},
        }
    }


def delete(table, pk):
    return {"Delete": {"TableName": table, "Key": {"PK": {"S": pk}, "SK": {"S": "A"}}}}


class ItemBackup(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server, cls.db = emulator_testing.serve()
        for table in (ONE, TWO):
            emulator_testing.create_single_table(cls.db, table)
            for i in range(50):
                cls.db.put_item(
                    TableName=table,
                    Item={"PK": {"S": f"seed{i}"}, "SK": {"S": "A"}, "v": {"S": "x" * 100}},
                )

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()

    def scan(self, table):
        items = self.db.scan(TableName=table)["Items"]
        return sorted(items, key=lambda i: i["PK"]["S"])

    def test_a_committed_transaction_writes_every_item_copying_no_table(self):
        self.db.transact_write_items(TransactItems=[put(ONE, f"ok{i}") for i in range(8)])
        self.assertEqual(transaction_backup.copies_made, 0)
        written = {i["PK"]["S"] for i in self.scan(ONE)}
        self.assertTrue({f"ok{i}" for i in range(8)} <= written)

    def test_a_cancelled_transaction_leaves_its_tables_as_they_were(self):
        for tables in ([ONE], [ONE, TWO]):
            before = {t: self.scan(t) for t in (ONE, TWO)}
            items = [put(tables[i % len(tables)], f"no{i}") for i in range(7)]
            # The last item's condition fails (the seed item exists): everything is undone.
            items.append(put(tables[-1], "seed3", "attribute_not_exists(PK)"))
            with self.assertRaises(botocore.exceptions.ClientError) as raised:
                self.db.transact_write_items(TransactItems=items)
            reasons = raised.exception.response["CancellationReasons"]
            self.assertEqual([r["Code"] for r in reasons][-1], "ConditionalCheckFailed")
            self.assertEqual(transaction_backup.copies_made, 0)
            self.assertEqual({t: self.scan(t) for t in (ONE, TWO)}, before, tables)

    def test_cancelled_updates_and_deletes_are_undone(self):
        before = {t: self.scan(t) for t in (ONE, TWO)}
        items = [update(ONE, "seed10"), delete(ONE, "seed11"), update(TWO, "fresh"), delete(TWO, "seed12")]
        items.append(put(TWO, "seed13", "attribute_not_exists(PK)"))
        with self.assertRaises(botocore.exceptions.ClientError) as raised:
            self.db.transact_write_items(TransactItems=items)
        self.assertEqual(raised.exception.response["Error"]["Code"], "TransactionCanceledException")
        self.assertEqual({t: self.scan(t) for t in (ONE, TWO)}, before)

    def test_a_refused_transaction_naming_an_item_twice_is_undone(self):
        before = {t: self.scan(t) for t in (ONE, TWO)}
        items = [update(ONE, "seed20"), put(ONE, "twice"), delete(ONE, "seed21"), put(ONE, "twice")]
        with self.assertRaises(botocore.exceptions.ClientError) as raised:
            self.db.transact_write_items(TransactItems=items)
        self.assertEqual(raised.exception.response["Error"]["Code"], "ValidationException")
        self.assertEqual({t: self.scan(t) for t in (ONE, TWO)}, before)

    def test_an_item_is_still_copied_as_moto_copies_it(self):
        # A conditional single-item write (moto deep-copies the item it checks) is unchanged.
        self.db.put_item(**put(ONE, "single")["Put"])
        with self.assertRaises(botocore.exceptions.ClientError):
            self.db.put_item(**put(ONE, "single", "attribute_not_exists(PK)")["Put"])


if __name__ == "__main__":
    unittest.main()
