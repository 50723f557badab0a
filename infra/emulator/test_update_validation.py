"""`update_validation.py` changes what validating an UpdateExpression costs, not what it does:
for updates that pass and updates that moto refuses (two clauses of a kind, in any order and
mix, a path that does not exist, a key attribute, an undefined value, overlapping paths), moto's
own walks and the linear ones leave the same item or raise the same error with the same message;
and the clause check no longer searches a subtree per node (quadratic in the actions).

Run: .venv/bin/python -m unittest discover -s infra/emulator -p 'test_*.py'
(test.sh runs it).
"""

import os
import sys
import unittest

from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.dynamodb.models.table import Table
from moto.dynamodb.parsing import ast_nodes, validators
from moto.dynamodb.parsing.executors import UpdateExpressionExecutor
from moto.dynamodb.parsing.expressions import UpdateExpressionParser
from moto.dynamodb.parsing.validators import UpdateExpressionValidator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import update_validation

KEY = [{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}]
KEY_TYPES = [
    {"AttributeName": "PK", "AttributeType": "S"},
    {"AttributeName": "SK", "AttributeType": "S"},
]
VALUES = {
    ":v": {"S": "value"},
    ":one": {"N": "1"},
    ":zero": {"N": "0"},
    ":list": {"L": [{"S": "x"}, {"N": "2"}]},
    ":set": {"SS": ["a", "b"]},
    ":map": {"M": {"inner": {"S": "deep"}}},
}
NAMES = {"#n": "count", "#l": "list", "#m": "map", "#i": "inner", "#pk": "PK"}


def many_actions(n):
    return "SET " + ", ".join(f"a{i} = :v" for i in range(n))


CASES = [
    "SET a = :v",
    "SET a = :v, #n = if_not_exists(#n, :zero) + :one",
    "SET #l = list_append(#l, :list) REMOVE gone",
    "SET #m.#i = :v, #l[0] = :v",
    "SET fresh = :map, fresh2 = list_append(:list, :list)",
    "ADD #n :one, tags :set DELETE labels :set",
    "REMOVE #l[1], #m.#i",
    many_actions(40),
    many_actions(40) + " REMOVE x ADD #n :one",
    # refused, each with moto's own error and message
    "SET a = :v SET b = :v",
    "REMOVE a REMOVE b",
    "ADD n :one ADD m :one SET a = :v SET b = :v",
    "SET a = :v SET b = :v ADD n :one ADD m :one",
    "SET a = :v REMOVE b SET c = :v REMOVE d",
    "SET absent.inner = :v",
    "SET #pk = :v",
    "SET a = :undefined",
    "SET a = :v, a = :v",
    "SET a = :v REMOVE a",
    "SET #l = list_append(:v, #l)",
    "SET a = :v + :one",
]


def stored_item():
    return Item(
        hash_key=DynamoType({"S": "p"}),
        range_key=DynamoType({"S": "s"}),
        attrs={
            "PK": {"S": "p"},
            "SK": {"S": "s"},
            "count": {"N": "5"},
            "list": {"L": [{"S": "first"}, {"S": "second"}]},
            "map": {"M": {"inner": {"S": "old"}}},
            "labels": {"SS": ["a", "c"]},
            "gone": {"S": "bye"},
        },
    )


def table():
    return Table("t", account_id="123456789012", region="us-east-1", schema=KEY, attr=KEY_TYPES)


def outcome(expression, linear):
    """What validating and applying `expression` to `stored_item()` gives: the item's JSON, or
    the error's class and message."""
    update_validation.install(linear)
    try:
        item = stored_item()
        ast = UpdateExpressionParser.make(expression)
        validated = UpdateExpressionValidator(
            ast,
            expression_attribute_names=NAMES,
            expression_attribute_values=VALUES,
            item=item,
            table=table(),
        ).validate()
        validated.normalize()
        UpdateExpressionExecutor(validated, item, NAMES).execute()
        return ("item", item.to_json())
    except Exception as error:  # noqa: BLE001 - the error is what is compared
        return ("error", type(error).__name__, str(error))
    finally:
        update_validation.install(False)


class SameAnswers(unittest.TestCase):
    def test_every_case_gives_moto_s_item_or_moto_s_error(self):
        refused = 0
        for expression in CASES:
            with self.subTest(expression=expression[:60]):
                mine = outcome(expression, linear=True)
                self.assertEqual(mine, outcome(expression, linear=False))
                refused += mine[0] == "error"
        # the list holds both kinds, so the comparison covers refusals as well as changes
        self.assertGreaterEqual(refused, 8)
        self.assertGreaterEqual(len(CASES) - refused, 8)


class Cost(unittest.TestCase):
    def test_the_clause_check_searches_no_subtree(self):
        """moto's check searches the subtree of every UpdateExpression node three times
        (`Node.find_clauses`, recursive): for 160 actions, tens of thousands of searches. The
        linear one counts in its one walk and searches none."""
        searches = []
        original = ast_nodes.Node.find_clauses

        def counted(node, clause_types):
            searches.append(node)
            return original(node, clause_types)

        ast_nodes.Node.find_clauses = counted
        try:
            ast = UpdateExpressionParser.make(many_actions(160))
            update_validation.verify_action_counts_once(ast)
            linear = len(searches)
            update_validation.MOTO["ActionCountValidator.traverse"](
                validators.ActionCountValidator(), ast
            )
            moto = len(searches) - linear
        finally:
            ast_nodes.Node.find_clauses = original
        self.assertEqual(linear, 0)
        self.assertGreater(moto, 160 * 160 / 2, "moto's own check was expected to be quadratic")


if __name__ == "__main__":
    unittest.main()
