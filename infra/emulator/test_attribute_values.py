"""`attribute_values.py` changes how fast the emulator answers, not what it answers: every read
and write that returns items is sent twice, with the shortcut off (moto's own serializer) and on,
and the two answers must be the same bytes (items, their order, `LastEvaluatedKey`, counts), over
items holding every attribute type DynamoDB has, nested ones and empty ones included.

Run: .venv/bin/python -m unittest discover -s infra/emulator -p 'test_*.py'
(test.sh runs it). Serves the wrapper on a free loopback port in a thread of its own.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import emulator_testing  # noqa: E402
import attribute_values  # noqa: E402

TABLE = "answers"


def item(n):
    """Item `n` of partition `p`: every attribute type, nested and empty values too."""
    return {
        "PK": {"S": "p"},
        "SK": {"S": f"s#{n:03d}"},
        "GSI1PK": {"S": "g"},
        "GSI1SK": {"S": f"{999 - n:03d}"},
        "text": {"S": f"Lead {n} é ✓"},
        "empty": {"S": ""},
        "count": {"N": str(n)},
        "ratio": {"N": "-12.50"},
        "big": {"N": "12345678901234567890123456789012345678"},
        "blob": {"B": bytes([0, 1, 2, n % 256, 255])},
        "tags": {"SS": ["b", "a", f"t{n}"]},
        "scores": {"NS": ["1", "2.5", str(n + 10)]},
        "blobs": {"BS": [b"\x00", b"\xff\x10", bytes([n % 256, 7])]},
        "nothing": {"NULL": True},
        "yes": {"BOOL": True},
        "no": {"BOOL": False},
        "list": {
            "L": [
                {"S": "x"},
                {"N": "1"},
                {"M": {"deep": {"L": [{"BOOL": False}, {"NULL": True}, {"B": b"\x01"}]}}},
                {"SS": ["z"]},
                {"L": []},
            ]
        },
        "map": {
            "M": {
                "values": {"M": {"first_name": {"S": f"Lead {n}"}, "n": {"N": "7"}}},
                "empty_map": {"M": {}},
                "empty_list": {"L": []},
            }
        },
    }


class SameAnswers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server, cls.db = emulator_testing.serve()
        cls.raw = emulator_testing.record_raw_answers(cls.db)
        emulator_testing.create_single_table(cls.db, TABLE)
        for n in range(30):
            cls.db.put_item(TableName=TABLE, Item=item(n))

    @classmethod
    def tearDownClass(cls):
        attribute_values.enabled = True
        cls.server.shutdown()

    def answer(self, call, shortcut):
        """The raw body of `call`'s answer, with the shortcut on or off, and whether it was taken."""
        raw, taken = emulator_testing.answer_with_shortcut(
            attribute_values, "_qualifies", self.raw, call, shortcut
        )
        self.assertEqual(len(raw), 1)
        return raw[0], taken

    def assert_same(self, name, call, holds_items=True):
        """The answers match; when the answer `holds_items`, the shortcut was taken for it."""
        with self.subTest(name):
            before, _ = self.answer(call, shortcut=False)
            after, taken = self.answer(call, shortcut=True)
            self.assertEqual(before, after)
            self.assertEqual(taken, holds_items, "whether the shortcut was taken")

    @staticmethod
    def key(n):
        return {"PK": {"S": "p"}, "SK": {"S": f"s#{n:03d}"}}

    def test_reads_answer_the_same_bytes(self):
        db = self.db
        pages = {
            "Query, a page of 7 and its LastEvaluatedKey": lambda: db.query(
                TableName=TABLE,
                KeyConditionExpression="#pk = :pk AND #sk BETWEEN :a AND :b",
                ExpressionAttributeNames={"#pk": "PK", "#sk": "SK"},
                ExpressionAttributeValues={":pk": {"S": "p"}, ":a": {"S": "s#005"}, ":b": {"S": "s#020"}},
                Limit=7,
                ConsistentRead=True,
            ),
            "Query after an ExclusiveStartKey, newest first": lambda: db.query(
                TableName=TABLE,
                KeyConditionExpression="#pk = :pk",
                ExpressionAttributeNames={"#pk": "PK"},
                ExpressionAttributeValues={":pk": {"S": "p"}},
                ExclusiveStartKey=self.key(20),
                ScanIndexForward=False,
                Limit=9,
            ),
            "Query on an index": lambda: db.query(
                TableName=TABLE,
                IndexName="GSI1",
                KeyConditionExpression="GSI1PK = :pk",
                ExpressionAttributeValues={":pk": {"S": "g"}},
                Limit=5,
            ),
            "Query with a projection and a filter": lambda: db.query(
                TableName=TABLE,
                KeyConditionExpression="PK = :pk",
                FilterExpression="#c > :c",
                ProjectionExpression="SK, #c, #m.#v, blobs, list[2]",
                ExpressionAttributeNames={"#c": "count", "#m": "map", "#v": "values"},
                ExpressionAttributeValues={":pk": {"S": "p"}, ":c": {"N": "10"}},
                ReturnConsumedCapacity="TOTAL",
            ),
            "Scan": lambda: db.scan(TableName=TABLE, Limit=11),
            "GetItem": lambda: db.get_item(TableName=TABLE, Key=self.key(3), ConsistentRead=True),
            "BatchGetItem, missing keys too": lambda: db.batch_get_item(
                RequestItems={
                    TABLE: {"Keys": [self.key(n) for n in (4, 1, 500, 17, 29)], "ConsistentRead": True}
                }
            ),
            "BatchGetItem with a projection": lambda: db.batch_get_item(
                RequestItems={
                    TABLE: {
                        "Keys": [self.key(n) for n in (2, 8)],
                        "ProjectionExpression": "PK, SK, tags, #m",
                        "ExpressionAttributeNames": {"#m": "map"},
                    }
                }
            ),
            "TransactGetItems": lambda: db.transact_get_items(
                TransactItems=[{"Get": {"TableName": TABLE, "Key": self.key(n)}} for n in (6, 500, 9)]
            ),
        }
        for name, call in pages.items():
            self.assert_same(name, call)
        self.assert_same(
            "GetItem of a missing item",
            lambda: db.get_item(TableName=TABLE, Key=self.key(500)),
            holds_items=False,
        )

    def test_writes_returning_items_answer_the_same_bytes(self):
        db = self.db
        calls = {
            "PutItem returning the old item": lambda: db.put_item(
                TableName=TABLE, Item=item(12), ReturnValues="ALL_OLD"
            ),
            "UpdateItem returning the new item": lambda: db.update_item(
                TableName=TABLE,
                Key=self.key(13),
                UpdateExpression="SET #t = :t",
                ExpressionAttributeNames={"#t": "text"},
                ExpressionAttributeValues={":t": {"S": "Lead 13 é ✓"}},
                ReturnValues="ALL_NEW",
            ),
        }
        for name, call in calls.items():
            self.assert_same(name, call)
        # moto's error answer does not carry the item: the same bytes, no attribute values.
        self.assert_same(
            "a failed condition",
            lambda: db.put_item(
                TableName=TABLE,
                Item=item(14),
                ConditionExpression="attribute_not_exists(PK)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            ),
            holds_items=False,
        )


if __name__ == "__main__":
    unittest.main()
