"""`table_query.py` changes what a `Query` costs, not what it answers: every query is sent twice,
with the shortcut off (moto's own `Table.query`) and on, and the two answers must be the same
bytes (items, their order, `Count`, `ScannedCount`, `LastEvaluatedKey`), over sort key
conditions of every kind, both directions, `Limit`, `ExclusiveStartKey`, filters, projections,
the 1 MB page cut, a missing partition, a numeric sort key, and the queries it leaves to moto
(indexes), whose sorts, and a scan's, give the same order by values as moto's by `DynamoType`.

Run: .venv/bin/python -m unittest discover -s infra/emulator -p 'test_*.py'
(test.sh runs it). Serves the wrapper on a free loopback port in a thread of its own.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import emulator_testing  # noqa: E402
import table_query  # noqa: E402

TABLE = "queries"
NUMBERED = "numbered"
SORTED = "sorted"
SORTED_NUMBERED = "sorted-numbered"


class SameQueryAnswers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server, cls.db = emulator_testing.serve()
        cls.raw = emulator_testing.record_raw_answers(cls.db)
        emulator_testing.create_single_table(cls.db, TABLE)
        emulator_testing.create_numbered_table(cls.db, NUMBERED)
        put = cls.db.put_item
        # Three partitions, written interleaved and out of order (moto keeps insertion order).
        for n in [7, 3, 41, 0, 19, 25, 12, 33, 48, 5] + list(range(50)):
            for pk in ("a", "b", "c"):
                put(
                    TableName=TABLE,
                    Item={
                        "PK": {"S": pk},
                        "SK": {"S": f"DISPATCH#{n:03d}"},
                        "GSI1PK": {"S": f"g{pk}"},
                        "GSI1SK": {"S": f"{n % 7}#{n:03d}"},
                        "n": {"N": str(n)},
                        "note": {"S": f"{pk}{n}"},
                        "map": {"M": {"x": {"N": str(n)}, "tags": {"SS": ["t", f"u{n}"]}}},
                    },
                )
        for label in ("ROUTER", "DRAFT", "REVISION#001", "ZZZ"):
            put(TableName=TABLE, Item={"PK": {"S": "b"}, "SK": {"S": label}, "kind": {"S": label}})
        # Partition `big`: 30 items of about 100 KB, so a page is cut at 1 MB.
        for n in range(30):
            put(
                TableName=TABLE,
                Item={"PK": {"S": "big"}, "SK": {"S": f"{n:02d}"}, "blob": {"S": "x" * 100_000}},
            )
        for n in [-3, 10, 2, 0.5, 100, -20, 7]:
            put(TableName=NUMBERED, Item={"PK": {"S": "p"}, "n": {"N": str(n)}})

    @classmethod
    def tearDownClass(cls):
        table_query.enabled = True
        cls.server.shutdown()

    def answer(self, request, shortcut):
        """The raw body of the Query `request`'s answer, shortcut on or off, and whether taken."""
        raw, taken = emulator_testing.answer_with_shortcut(
            table_query, "_applies", self.raw, lambda: self.db.query(**request), shortcut
        )
        self.assertEqual(len(raw), 1)
        return raw[0], taken

    def assert_same(self, name, request, taken=True):
        with self.subTest(name):
            before, _ = self.answer(request, shortcut=False)
            after, was_taken = self.answer(request, shortcut=True)
            self.assertEqual(before, after)
            self.assertEqual(was_taken, taken, "whether the shortcut was taken")

    @staticmethod
    def query(pk, condition="", values=None, table=TABLE, **more):
        names = {"#pk": "PK"}
        text = "#pk = :pk"
        if condition:
            text += " AND " + condition
            names["#sk"] = "n" if table == NUMBERED else "SK"
        request = {
            "TableName": table,
            "KeyConditionExpression": text,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": {":pk": {"S": pk}, **(values or {})},
        }
        for key, value in more.items():
            if key in ("ExpressionAttributeNames", "ExpressionAttributeValues"):
                request[key].update(value)
            else:
                request[key] = value
        return request

    def test_table_queries_answer_the_same_bytes(self):
        s = lambda v: {"S": v}  # noqa: E731
        between = {":a": s("DISPATCH#010"), ":b": s("DISPATCH#030")}
        cases = {
            "the whole partition": self.query("b"),
            "BETWEEN": self.query("b", "#sk BETWEEN :a AND :b", between),
            "BETWEEN, pages of 4": self.query("b", "#sk BETWEEN :a AND :b", between, Limit=4),
            "BETWEEN, pages of 4, newest first": self.query(
                "b", "#sk BETWEEN :a AND :b", between, Limit=4, ScanIndexForward=False
            ),
            "BETWEEN after an ExclusiveStartKey": self.query(
                "b",
                "#sk BETWEEN :a AND :b",
                between,
                Limit=5,
                ExclusiveStartKey={"PK": s("b"), "SK": s("DISPATCH#014")},
            ),
            "newest first after an ExclusiveStartKey": self.query(
                "a",
                ScanIndexForward=False,
                Limit=6,
                ExclusiveStartKey={"PK": s("a"), "SK": s("DISPATCH#040")},
            ),
            "begins_with": self.query(
                "b", "begins_with(#sk, :prefix)", {":prefix": s("DISPATCH#01")}, Limit=3
            ),
            "<": self.query("c", "#sk < :v", {":v": s("DISPATCH#005")}),
            "<=": self.query("c", "#sk <= :v", {":v": s("DISPATCH#005")}, ScanIndexForward=False),
            ">": self.query("c", "#sk > :v", {":v": s("DISPATCH#045")}),
            ">=": self.query("c", "#sk >= :v", {":v": s("DISPATCH#045")}, Limit=2),
            "=": self.query("b", "#sk = :v", {":v": s("ROUTER")}),
            "a range holding nothing": self.query(
                "b", "#sk BETWEEN :a AND :b", {":a": s("E"), ":b": s("F")}
            ),
            "a missing partition": self.query("nobody"),
            "a filter": self.query(
                "a",
                "#sk BETWEEN :a AND :b",
                {**between, ":n": {"N": "20"}},
                FilterExpression="#n > :n",
                ExpressionAttributeNames={"#n": "n"},
                Limit=9,
            ),
            "a projection": self.query(
                "a",
                "#sk >= :v",
                {":v": s("DISPATCH#040")},
                ProjectionExpression="SK, note, #m.tags",
                ExpressionAttributeNames={"#m": "map"},
            ),
            "Select COUNT": self.query("a", Select="COUNT"),
            "the 1 MB cut": self.query("big"),
            "the 1 MB cut in a range, newest first": self.query(
                "big", "#sk BETWEEN :a AND :b", {":a": s("05"), ":b": s("28")}, ScanIndexForward=False
            ),
            "after the 1 MB cut": self.query(
                "big", ExclusiveStartKey={"PK": s("big"), "SK": s("09")}
            ),
            "a numeric sort key, BETWEEN": self.query(
                "p", "#sk BETWEEN :a AND :b", {":a": {"N": "-5"}, ":b": {"N": "10"}}, table=NUMBERED
            ),
            "a numeric sort key, newest first": self.query(
                "p", ScanIndexForward=False, Limit=3, table=NUMBERED
            ),
        }
        for name, request in cases.items():
            self.assert_same(name, request)

    def test_an_index_query_is_left_to_moto(self):
        self.assert_same(
            "GSI1",
            {
                "TableName": TABLE,
                "IndexName": "GSI1",
                "KeyConditionExpression": "GSI1PK = :pk AND begins_with(GSI1SK, :p)",
                "ExpressionAttributeValues": {":pk": {"S": "ga"}, ":p": {"S": "3#"}},
                "Limit": 4,
            },
            taken=False,
        )

    def test_a_page_walk_by_moving_the_lower_bound_reads_every_item_once(self):
        """What the history walk does: pages of 7 over `a`, each from the last one read."""
        low, seen = "DISPATCH#000", []
        while True:
            request = self.query(
                "a", "#sk BETWEEN :a AND :b", {":a": {"S": low}, ":b": {"S": "DISPATCH#999"}}, Limit=7
            )
            before, _ = self.answer(request, shortcut=False)
            after, taken = self.answer(request, shortcut=True)
            self.assertEqual(before, after)
            self.assertTrue(taken)
            items = self.db.query(**request)["Items"]
            fresh = [i["SK"]["S"] for i in items if i["SK"]["S"] not in seen]
            seen += fresh
            if len(items) < 7:
                break
            low = items[-1]["SK"]["S"]
        self.assertEqual(seen, [f"DISPATCH#{n:03d}" for n in range(50)])


class SameSortOrders(unittest.TestCase):
    """The sorts of an index `Query` and of a `Scan` by key values computed once per item
    (`table_query.sort_by_values`) answer the same bytes as moto's, which compares `DynamoType`s
    (`cast_value` on both sides of every comparison)."""

    @classmethod
    def setUpClass(cls):
        cls.server, cls.db = emulator_testing.serve()
        cls.raw = emulator_testing.record_raw_answers(cls.db)
        emulator_testing.create_single_table(cls.db, SORTED)
        for n in [7, 3, 41, 0, 19, 25, 12, 33, 48, 5, 100, 9]:
            for pk in ("a", "b"):
                item = {"PK": {"S": pk}, "SK": {"S": f"S#{n}"}, "n": {"N": str(n)}}
                if n % 5:
                    item.update(GSI1PK={"S": f"g{n % 2}"}, GSI1SK={"S": f"{n % 3}#{pk}"})
                cls.db.put_item(TableName=SORTED, Item=item)
        emulator_testing.create_numbered_table(cls.db, SORTED_NUMBERED)
        for n in ["-3", "10", "9", "0.5", "1e2", "-20", "7", "100.0"]:
            for pk in ("q", "p"):
                cls.db.put_item(TableName=SORTED_NUMBERED, Item={"PK": {"S": pk}, "n": {"N": n}})

    @classmethod
    def tearDownClass(cls):
        table_query.sort_by_values = True
        cls.server.shutdown()

    def answers(self, call, by_values):
        table_query.sort_by_values = by_values
        self.raw.clear()
        try:
            call()
        finally:
            table_query.sort_by_values = True
        self.assertEqual(len(self.raw), 1)
        return self.raw[0]

    def test_index_queries_and_scans_answer_the_same_bytes(self):
        index = {"TableName": SORTED, "IndexName": "GSI1"}
        cases = {
            "an index partition": dict(
                index,
                KeyConditionExpression="GSI1PK = :pk",
                ExpressionAttributeValues={":pk": {"S": "g1"}},
            ),
            "an index range, newest first, pages of 3": dict(
                index,
                KeyConditionExpression="GSI1PK = :pk AND begins_with(GSI1SK, :p)",
                ExpressionAttributeValues={":pk": {"S": "g1"}, ":p": {"S": "1#"}},
                ScanIndexForward=False,
                Limit=3,
            ),
            "an index page after an ExclusiveStartKey": dict(
                index,
                KeyConditionExpression="GSI1PK = :pk",
                ExpressionAttributeValues={":pk": {"S": "g0"}},
                ExclusiveStartKey={
                    "PK": {"S": "a"},
                    "SK": {"S": "S#12"},
                    "GSI1PK": {"S": "g0"},
                    "GSI1SK": {"S": "0#a"},
                },
                Limit=4,
            ),
        }
        for name, request in cases.items():
            with self.subTest(name):
                query = lambda: self.db.query(**request)  # noqa: E731
                self.assertEqual(self.answers(query, False), self.answers(query, True))
        for table in (SORTED, SORTED_NUMBERED):
            with self.subTest(f"a scan of {table}"):
                scan = lambda: self.db.scan(TableName=table)  # noqa: E731
                self.assertEqual(self.answers(scan, False), self.answers(scan, True))

    def test_keys_of_mixed_or_unsortable_types_are_left_to_moto(self):
        from moto.dynamodb.models.dynamo_type import DynamoType

        numbers = [DynamoType({"N": n}) for n in ["10", "9", "-1.5", "1e1"]]
        ordered = table_query.values_order(numbers, lambda v: v)
        self.assertEqual([v.value for v in ordered], ["-1.5", "9", "10", "1e1"])
        self.assertEqual(ordered, sorted(numbers))
        mixed = numbers + [DynamoType({"S": "x"})]
        self.assertIsNone(table_query.values_order(mixed, lambda v: v))
        self.assertIsNone(table_query.values_order([DynamoType({"BOOL": True})], lambda v: v))

    def test_an_index_query_compares_no_dynamo_values_in_its_sorts(self):
        from moto.dynamodb.models.dynamo_type import DynamoType

        compared = []
        original = DynamoType.__lt__

        def counting(self, other):
            compared.append(1)
            return original(self, other)

        request = {
            "TableName": SORTED,
            "IndexName": "GSI1",
            "KeyConditionExpression": "GSI1PK = :pk",
            "ExpressionAttributeValues": {":pk": {"S": "g1"}},
        }
        DynamoType.__lt__ = counting
        try:
            self.answers(lambda: self.db.query(**request), True)
            by_values = len(compared)
            compared.clear()
            self.answers(lambda: self.db.query(**request), False)
            by_moto = len(compared)
        finally:
            DynamoType.__lt__ = original
        self.assertEqual(by_values, 0)
        self.assertGreater(by_moto, 24)


if __name__ == "__main__":
    unittest.main()
