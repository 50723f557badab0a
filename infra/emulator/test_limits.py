"""The emulator refuses what DynamoDB refuses: one test per limit of `limits.py`, each also showing
that a request just inside the limit is taken (so the check is not merely stricter than DynamoDB).

Run: .venv/bin/python -m unittest discover -s infra/emulator -p 'test_*.py'
(test.sh runs it). Serves the wrapper on a free loopback port in a thread of its own.
"""

import os
import sys
import unittest

import botocore

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import emulator_testing  # noqa: E402
import limits  # noqa: E402

TABLE = "limits"


class Limits(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server, cls.db = emulator_testing.serve()
        emulator_testing.create_single_table(cls.db, TABLE)

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()

    def refused(self, call, fragment):
        with self.assertRaises(botocore.exceptions.ClientError) as caught:
            call()
        error = caught.exception.response["Error"]
        self.assertEqual(error["Code"], "ValidationException")
        self.assertIn(fragment, error["Message"])

    @staticmethod
    def key(pk="p", sk="s"):
        return {"PK": {"S": pk}, "SK": {"S": sk}}

    def test_a_partition_key_over_2048_bytes_is_refused_by_every_request_that_names_it(self):
        inside, outside = "é" * 1024, "é" * 1024 + "x"  # 2048 and 2049 bytes of UTF-8
        db = self.db
        self.assertNotIn("Item", db.get_item(TableName=TABLE, Key=self.key(inside)))
        calls = {
            "GetItem": lambda pk: db.get_item(TableName=TABLE, Key=self.key(pk)),
            "DeleteItem": lambda pk: db.delete_item(TableName=TABLE, Key=self.key(pk)),
            "Query": lambda pk: db.query(
                TableName=TABLE,
                KeyConditionExpression="#pk = :pk",
                ExpressionAttributeNames={"#pk": "PK"},
                ExpressionAttributeValues={":pk": {"S": pk}},
            ),
            "Query on an index": lambda pk: db.query(
                TableName=TABLE,
                IndexName="GSI1",
                KeyConditionExpression="GSI1PK = :pk",
                ExpressionAttributeValues={":pk": {"S": pk}},
            ),
            "TransactGetItems": lambda pk: db.transact_get_items(
                TransactItems=[{"Get": {"TableName": TABLE, "Key": self.key(pk)}}]
            ),
            "TransactWriteItems ConditionCheck": lambda pk: db.transact_write_items(
                TransactItems=[
                    {
                        "ConditionCheck": {
                            "TableName": TABLE,
                            "Key": self.key(pk),
                            "ConditionExpression": "attribute_not_exists(PK)",
                        }
                    }
                ]
            ),
            "TransactWriteItems Delete": lambda pk: db.transact_write_items(
                TransactItems=[{"Delete": {"TableName": TABLE, "Key": self.key(pk)}}]
            ),
            "BatchGetItem": lambda pk: db.batch_get_item(
                RequestItems={TABLE: {"Keys": [self.key(pk)]}}
            ),
            "BatchWriteItem delete": lambda pk: db.batch_write_item(
                RequestItems={TABLE: [{"DeleteRequest": {"Key": self.key(pk)}}]}
            ),
            "PutItem": lambda pk: db.put_item(TableName=TABLE, Item=self.key(pk)),
            "UpdateItem": lambda pk: db.update_item(
                TableName=TABLE,
                Key=self.key(pk),
                UpdateExpression="SET v = :v",
                ExpressionAttributeValues={":v": {"S": "1"}},
            ),
        }
        for name, call in calls.items():
            with self.subTest(name):
                call(inside)
                self.refused(lambda: call(outside), "Size of hashkey has exceeded")

    def test_a_sort_key_over_1024_bytes_is_refused_in_keys_key_conditions_and_index_keys(self):
        inside, outside = "s" * 1024, "s" * 1025
        db = self.db
        calls = {
            "GetItem": lambda sk: db.get_item(TableName=TABLE, Key=self.key("p", sk)),
            "Query begins_with": lambda sk: db.query(
                TableName=TABLE,
                KeyConditionExpression="#pk = :pk AND begins_with(#sk, :prefix)",
                ExpressionAttributeNames={"#pk": "PK", "#sk": "SK"},
                ExpressionAttributeValues={":pk": {"S": "p"}, ":prefix": {"S": sk}},
            ),
            "Query BETWEEN (second bound)": lambda sk: db.query(
                TableName=TABLE,
                KeyConditionExpression="PK = :pk AND SK BETWEEN :a AND :b",
                ExpressionAttributeValues={
                    ":pk": {"S": "p"},
                    ":a": {"S": "a"},
                    ":b": {"S": sk},
                },
            ),
            "PutItem with an index sort key": lambda sk: db.put_item(
                TableName=TABLE,
                Item={**self.key("p", "s"), "GSI1PK": {"S": "g"}, "GSI1SK": {"S": sk}},
            ),
            "UpdateItem setting an index sort key": lambda sk: db.update_item(
                TableName=TABLE,
                Key=self.key("p", "s"),
                UpdateExpression="SET #g = :g, #o = :o",
                ExpressionAttributeNames={"#g": "GSI1SK", "#o": "other"},
                ExpressionAttributeValues={":g": {"S": sk}, ":o": {"S": "o"}},
            ),
        }
        for name, call in calls.items():
            with self.subTest(name):
                call(inside)
                self.refused(lambda: call(outside), "range keys has exceeded")

    def test_an_item_over_400_kb_is_refused_by_puts_updates_transactions_and_batches(self):
        db = self.db
        # The item's size counts attribute names and values (PK, SK, v and their values):
        # DynamoDB takes 409,600 bytes, not one more.
        overhead = len("PK") + len("p") + len("SK") + len("big") + len("v")
        inside = {**self.key("p", "big"), "v": {"S": "x" * (400 * 1024 - overhead)}}
        outside = {**self.key("p", "big"), "v": {"S": "x" * (400 * 1024 - overhead + 1)}}
        calls = {
            "PutItem": lambda item: db.put_item(TableName=TABLE, Item=item),
            "TransactWriteItems Put": lambda item: db.transact_write_items(
                TransactItems=[{"Put": {"TableName": TABLE, "Item": item}}]
            ),
            "BatchWriteItem put": lambda item: db.batch_write_item(
                RequestItems={TABLE: [{"PutRequest": {"Item": item}}]}
            ),
        }
        for name, call in calls.items():
            with self.subTest(name):
                call(inside)
                self.refused(lambda: call(outside), "Item size has exceeded")

    def test_an_update_is_refused_when_the_item_it_leaves_is_over_400_kb(self):
        db = self.db
        overhead = len("PK") + len("p") + len("SK") + len("upd") + len("v")
        db.put_item(TableName=TABLE, Item={**self.key("p", "upd"), "v": {"S": "x" * 300_000}})

        def set_v(length):
            db.update_item(
                TableName=TABLE,
                Key=self.key("p", "upd"),
                UpdateExpression="SET #v = :v",
                ExpressionAttributeNames={"#v": "v"},
                ExpressionAttributeValues={":v": {"S": "y" * length}},
            )

        # The replaced value no longer counts: 300 KB replaced by 409,600 bytes in all is taken.
        set_v(400 * 1024 - overhead)
        with self.assertRaises(botocore.exceptions.ClientError) as caught:
            set_v(400 * 1024 - overhead + 1)
        self.assertEqual(caught.exception.response["Error"]["Code"], "ValidationException")

    def test_numbers_lists_and_maps_are_sized_as_dynamodb_sizes_them(self):
        db = self.db
        # 1 + 1 + 2 + 3 (PK p, SK n) + name "v" (1) + list 3 + n x (1 + 2): single digits take
        # 2 bytes each and 1 more as list elements.
        fixed = len("PK") + len("p") + len("SK") + len("n") + len("v") + 3
        count = (400 * 1024 - fixed) // 3
        self.assertEqual(fixed + 3 * count, 400 * 1024)
        item = {**self.key("p", "n"), "v": {"L": [{"N": "7"}] * count}}
        db.put_item(TableName=TABLE, Item=item)
        item["v"]["L"] = item["v"]["L"] + [{"N": "7"}]
        self.refused(lambda: db.put_item(TableName=TABLE, Item=item), "Item size has exceeded")
        self.assertEqual(
            [limits.number_bytes(n) for n in ("1", "12", "123", "1.5", "-42", "100", "1E125", "0")],
            [2, 2, 3, 3, 3, 2, 2, 1],
        )
        # Base-100 digit pairs aligned on the decimal point: a zero inside a pair is stored.
        self.assertEqual(
            [limits.number_bytes(n) for n in ("110", "12000", "0.011", "1e125", "-0.5", "10.01")],
            [3, 3, 3, 2, 3, 3],
        )

    def test_numbers_out_of_range_and_values_nested_past_32_levels_are_refused(self):
        db = self.db
        for number, fragment in [
            ("1E126", "Number overflow"),
            ("1E-131", "Number underflow"),
            ("1" * 39, "38 significant digits"),
        ]:
            with self.subTest(number):
                self.refused(
                    lambda: db.put_item(
                        TableName=TABLE,
                        Item={**self.key("p", "num"), "v": {"L": [{"N": number}]}},
                    ),
                    fragment,
                )
        for number in ("9.9999999999999999999999999999999999999E+125", "1E-130", "1" * 38):
            db.put_item(TableName=TABLE, Item={**self.key("p", "num"), "v": {"N": number}})

        def wrapped(levels):
            value = {"S": "leaf"}
            for _ in range(levels):
                value = {"L": [value]}
            return {**self.key("p", "deep"), "v": value}

        db.put_item(TableName=TABLE, Item=wrapped(31))
        self.refused(lambda: db.put_item(TableName=TABLE, Item=wrapped(32)), "Nesting Levels")

    def test_a_transaction_of_more_than_100_actions_or_4_mb_is_refused(self):
        db = self.db

        def puts(count, value_bytes):
            return [
                {
                    "Put": {
                        "TableName": TABLE,
                        "Item": {**self.key(f"t{i}", "s"), "v": {"S": "x" * value_bytes}},
                    }
                }
                for i in range(count)
            ]

        db.transact_write_items(TransactItems=puts(100, 1))
        self.refused(lambda: db.transact_write_items(TransactItems=puts(101, 1)), "100")
        self.refused(
            lambda: db.transact_get_items(
                TransactItems=[{"Get": {"TableName": TABLE, "Key": self.key(f"t{i}")}} for i in range(101)]
            ),
            "100",
        )
        # 100 items of 41,000 bytes (4.1 MB in all): each is far below 400 KB, the sum is over 4 MB.
        db.transact_write_items(TransactItems=puts(100, 40_000))
        self.refused(
            lambda: db.transact_write_items(TransactItems=puts(100, 42_000)),
            "Transaction request cannot be larger than 4 MB",
        )

    def test_batch_get_takes_at_most_100_keys_and_batch_write_25_requests(self):
        db = self.db
        keys = [self.key(f"b{i}") for i in range(101)]
        db.batch_get_item(RequestItems={TABLE: {"Keys": keys[:100]}})
        self.refused(
            lambda: db.batch_get_item(RequestItems={TABLE: {"Keys": keys}}),
            "Too many items requested for the BatchGetItem call",
        )
        writes = [{"PutRequest": {"Item": key}} for key in keys]
        db.batch_write_item(RequestItems={TABLE: writes[:25]})
        self.refused(
            lambda: db.batch_write_item(RequestItems={TABLE: writes[:26]}),
            "Too many items requested for the BatchWriteItem call",
        )


    def test_an_unused_expression_placeholder_is_refused_in_transactions_and_queries(self):
        db = self.db

        def update(values):
            return lambda: db.transact_write_items(
                TransactItems=[
                    {
                        "Update": {
                            "TableName": TABLE,
                            "Key": self.key("u"),
                            "UpdateExpression": "SET #v = :v",
                            "ExpressionAttributeNames": {"#v": "v"},
                            "ExpressionAttributeValues": values,
                        }
                    }
                ]
            )

        update({":v": {"S": "1"}})()
        self.refused(
            update({":v": {"S": "1"}, ":unused": {"S": "2"}}),
            "Value provided in ExpressionAttributeValues unused in expressions: keys: {:unused}",
        )

        def query(values):
            return lambda: db.query(
                TableName=TABLE,
                KeyConditionExpression="PK = :p",
                ExpressionAttributeValues=values,
            )

        query({":p": {"S": "u"}})()
        self.refused(query({":p": {"S": "u"}, ":p1": {"S": "x"}}), "keys: {:p1}")


class ItemConstruction(unittest.TestCase):
    """`limits.install()` builds a new item with its size counted once per attribute; moto's own
    construction sizes the whole item again at every attribute. Both keep the same attributes and
    refuse the same items."""

    @classmethod
    def setUpClass(cls):
        limits.install()
        from moto.dynamodb.exceptions import ItemSizeTooLarge
        from moto.dynamodb.models.dynamo_type import DynamoType, Item

        cls.too_large, cls.dynamo_type, cls.item = ItemSizeTooLarge, DynamoType, Item

    def built(self, init, attrs):
        """The attributes `init` leaves on a new item (as JSON), or the error it raises."""
        item = self.item.__new__(self.item)
        try:
            init(item, self.dynamo_type({"S": "p"}), self.dynamo_type({"S": "s"}), attrs)
        except self.too_large:
            return "ItemSizeTooLarge"
        return [(key, value.to_json()) for key, value in item.attrs.items()]

    def test_the_linear_construction_keeps_and_refuses_what_moto_s_does(self):
        base = {"PK": {"S": "p"}, "SK": {"S": "s"}}
        # PK, p, SK, s and v: 7 bytes beside the value.
        limit = limits.MAX_ITEM_BYTES
        cases = {
            "small": {**base, "n": {"N": "110"}, "l": {"L": [{"S": "x"}, {"N": "-0.5"}]}},
            "many": {**base, **{f"a{i}": {"S": "v" * i} for i in range(200)}},
            "nested": {**base, "m": {"M": {"k": {"L": [{"M": {"x": {"NS": ["1", "12000"]}}}]}}}},
            "at the limit": {**base, "v": {"S": "x" * (limit - 7)}},
            "one byte over": {**base, "v": {"S": "x" * (limit - 6)}},
            "over in the middle": {**base, "v": {"S": "x" * limit}, "after": {"S": "y"}},
            "over at the last": {**base, "a": {"S": "x" * (limit - 20)}, "b": {"S": "y" * 30}},
        }
        refused = 0
        for name, attrs in cases.items():
            with self.subTest(name):
                ours = self.built(self.item.__init__, attrs)
                self.assertEqual(ours, self.built(limits.MOTO_ITEM_INIT, attrs))
                refused += ours == "ItemSizeTooLarge"
        self.assertEqual(refused, 3)

    def test_a_new_item_is_sized_once_per_attribute(self):
        attrs = {f"a{i}": {"S": "v"} for i in range(300)}
        sized = []
        original = self.dynamo_type.size

        def counting(value):
            sized.append(1)
            return original(value)

        self.dynamo_type.size = counting
        try:
            self.built(self.item.__init__, attrs)
            linear = len(sized)
            sized.clear()
            self.built(limits.MOTO_ITEM_INIT, attrs)
            quadratic = len(sized)
        finally:
            self.dynamo_type.size = original
        self.assertEqual(linear, 300)
        self.assertGreater(quadratic, 300 * 299 // 2)


if __name__ == "__main__":
    unittest.main()
