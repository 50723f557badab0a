"""`expression_cache.py` changes what parsing an expression costs, not what it does: every update
(of an UpdateItem and of a transaction), condition and filter below is sent with the kept parses
off (moto's own parsing) and on, each twice, on the same stored item; the answers must be the same
bytes and leave the same item, for writes that pass and writes that moto refuses. The kept tree of
an update is never changed by the updates that use it, and each text is parsed once.

Run: .venv/bin/python -m unittest discover -s infra/emulator -p 'test_*.py'
(test.sh runs it). Serves the wrapper on a free loopback port in a thread of its own.
"""

import os
import pickle
import sys
import unittest

from moto.dynamodb import comparisons
from moto.dynamodb.parsing import expressions

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import emulator_testing  # noqa: E402
import expression_cache  # noqa: E402
from test_update_validation import CASES, NAMES, VALUES  # noqa: E402

TABLE = "expressions"
KEPT_TABLE = "kept-expressions"
KEY = {"PK": {"S": "p"}, "SK": {"S": "s"}}
STORED = {
    **KEY,
    "count": {"N": "5"},
    "list": {"L": [{"S": "first"}, {"S": "second"}]},
    "map": {"M": {"inner": {"S": "old"}}},
    "labels": {"SS": ["a", "c"]},
    "gone": {"S": "bye"},
}
CONDITIONS = [
    "attribute_exists(#pk)",
    "attribute_not_exists(#pk)",
    "#n = :one",
    "#n > :zero AND (begins_with(#m.#i, :v) OR size(#l) >= :one)",
    "NOT contains(labels, :v) AND #n BETWEEN :zero AND :one",
    "#n IN (:zero, :one) OR attribute_type(#m, :v)",
    "#n <> :one",
    "#n = :missing",
]


class SameAnswers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server, cls.db = emulator_testing.serve()
        cls.raw = emulator_testing.record_raw_answers(cls.db)
        emulator_testing.create_single_table(cls.db, TABLE)

    @classmethod
    def tearDownClass(cls):
        expression_cache.enabled = True
        cls.server.shutdown()

    def outcome(self, call, kept):
        """The raw answer of `call` on a freshly stored item, kept parses on or off, and the item
        it leaves."""
        expression_cache.enabled = kept
        try:
            self.db.put_item(TableName=TABLE, Item=STORED)
            self.raw.clear()
            try:
                call()
            except Exception:  # noqa: BLE001 - the error's body is compared
                pass
            answer = list(self.raw)
            item = self.db.get_item(TableName=TABLE, Key=KEY, ConsistentRead=True)["Item"]
            return answer, item
        finally:
            expression_cache.enabled = True

    def assert_same(self, call):
        """Answers with the kept parses off, then on twice (the first on keeps the parse, the
        second uses it): all the same. Returns whether the write was refused."""
        moto = self.outcome(call, kept=False)
        self.assertEqual(self.outcome(call, kept=True), moto)
        self.assertEqual(self.outcome(call, kept=True), moto)
        return b"__type" in moto[0][0]

    @staticmethod
    def used(names, values, *texts):
        """The names and values an expression uses (DynamoDB refuses unused ones)."""
        joined = " ".join(texts)
        return (
            {k: v for k, v in names.items() if k in joined},
            {k: v for k, v in values.items() if k in joined},
        )

    def update(self, expression):
        names, values = self.used(NAMES, VALUES, expression)
        request = {"TableName": TABLE, "Key": KEY, "UpdateExpression": expression}
        if names:
            request["ExpressionAttributeNames"] = names
        if values:
            request["ExpressionAttributeValues"] = values
        return request

    def test_updates_answer_the_same_and_leave_the_same_item(self):
        refused = 0
        for expression in CASES:
            with self.subTest(expression=expression[:60]):
                request = self.update(expression)
                refused += self.assert_same(lambda: self.db.update_item(**request))
                self.assert_same(
                    lambda: self.db.transact_write_items(TransactItems=[{"Update": request}])
                )
        self.assertGreaterEqual(refused, 8)
        self.assertGreaterEqual(len(CASES) - refused, 8)

    def test_conditions_and_filters_answer_the_same(self):
        values = {**VALUES, ":missing": {"N": "9"}}
        names = {**NAMES, "#pk": "PK"}
        refused = 0
        for condition in CONDITIONS:
            with self.subTest(condition=condition):
                used_names, used_values = self.used(names, values, condition, "SET a = :v")
                request = {
                    "TableName": TABLE,
                    "Key": KEY,
                    "UpdateExpression": "SET a = :v",
                    "ConditionExpression": condition,
                    "ExpressionAttributeNames": used_names,
                    "ExpressionAttributeValues": {**used_values, ":v": VALUES[":v"]},
                }
                if not used_names:
                    del request["ExpressionAttributeNames"]
                refused += self.assert_same(lambda: self.db.update_item(**request))
                filter_names, filter_values = self.used(names, values, condition)
                query = {
                    "TableName": TABLE,
                    "KeyConditionExpression": "PK = :p",
                    "FilterExpression": condition,
                    "ExpressionAttributeValues": {**filter_values, ":p": {"S": "p"}},
                }
                if filter_names:
                    query["ExpressionAttributeNames"] = filter_names
                self.assert_same(lambda: self.db.query(**query))
        self.assertGreaterEqual(refused, 3)
        self.assertGreaterEqual(len(CONDITIONS) - refused, 3)


class KeptOnce(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server, cls.db = emulator_testing.serve()
        emulator_testing.create_single_table(cls.db, KEPT_TABLE)

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()

    def test_a_kept_tree_is_parsed_once_and_never_changed_by_the_updates_using_it(self):
        expression = "SET #n = if_not_exists(#n, :zero) + :one, #l = list_append(#l, :list) REMOVE gone"
        names = {"#n": "count", "#l": "list"}
        values = {k: VALUES[k] for k in (":zero", ":one", ":list")}
        tokenized = []
        original = expressions.ExpressionTokenizer.make_list

        def counting(text):
            tokenized.append(text)
            return original(text)

        expression_cache.clear()
        expressions.ExpressionTokenizer.make_list = staticmethod(counting)
        try:
            self.db.put_item(TableName=KEPT_TABLE, Item=STORED)
            before = None
            for _ in range(3):
                self.db.update_item(
                    TableName=KEPT_TABLE,
                    Key=KEY,
                    UpdateExpression=expression,
                    ExpressionAttributeNames=names,
                    ExpressionAttributeValues=values,
                )
                tree, pickled = expression_cache._TREES[expression]
                now = pickle.dumps(tree, pickle.HIGHEST_PROTOCOL)
                self.assertEqual(now, pickled, "the kept tree was changed")
                before = before or now
                self.assertEqual(now, before)
        finally:
            expressions.ExpressionTokenizer.make_list = original
        self.assertEqual(tokenized, [expression])
        item = self.db.get_item(TableName=KEPT_TABLE, Key=KEY, ConsistentRead=True)["Item"]
        self.assertEqual(item["count"], {"N": "8"})
        self.assertEqual(len(item["list"]["L"]), 8)

    def test_a_condition_is_cut_into_tokens_once(self):
        lexed = []
        original = expression_cache.MOTO["lex"]

        def counting(parser):
            lexed.append(parser.condition_expression)
            return original(parser)

        expression_cache.clear()
        expression_cache.MOTO["lex"] = counting
        try:
            for _ in range(3):
                parser = comparisons.ConditionExpressionParser(
                    "attribute_exists(#a) AND #b = :b", {"#a": "a", "#b": "b"}, {":b": {"S": "x"}}
                )
                parser.parse()
        finally:
            expression_cache.MOTO["lex"] = original
        self.assertEqual(lexed, ["attribute_exists(#a) AND #b = :b"])


if __name__ == "__main__":
    unittest.main()
