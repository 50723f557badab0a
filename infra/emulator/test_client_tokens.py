"""The emulator answers a repeated `TransactWriteItems` as DynamoDB does (`client_tokens.py`): the
same client request token and parameters within 10 minutes is done already (answered, nothing
applied again), other parameters with that token are `IdempotentParameterMismatchException`, and a
cancelled transaction leaves nothing behind. Through real HTTP and boto3.

Run: .venv/bin/python -m unittest discover -s infra/emulator -p 'test_*.py'
"""

import os
import sys
import unittest

import botocore

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import client_tokens  # noqa: E402
import emulator_testing  # noqa: E402

TABLE = "tokens"


def put_new(pk, value):
    return {
        "Put": {
            "TableName": TABLE,
            "Item": {"PK": {"S": pk}, "SK": {"S": "s"}, "v": {"S": value}},
            "ConditionExpression": "attribute_not_exists(PK)",
        }
    }


def add_one(pk):
    return {
        "Update": {
            "TableName": TABLE,
            "Key": {"PK": {"S": pk}, "SK": {"S": "s"}},
            "UpdateExpression": "ADD n :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        }
    }


class ClientTokenTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server, cls.db = emulator_testing.serve()
        emulator_testing.create_single_table(cls.db, TABLE)

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()

    def count(self, pk):
        item = self.db.get_item(TableName=TABLE, Key={"PK": {"S": pk}, "SK": {"S": "s"}})
        return int(item["Item"]["n"]["N"]) if "Item" in item and "n" in item["Item"] else 0

    def test_a_repeated_transaction_with_its_token_is_answered_as_done_and_applies_nothing(self):
        items = [put_new("created", "x"), add_one("counter")]
        self.db.transact_write_items(TransactItems=items, ClientRequestToken="token-1")
        self.assertEqual(self.count("counter"), 1)
        # The SDK's retry of a lost answer: same token, same items. Without the token rule, the
        # put's condition would cancel it; with it, done, and the counter is not added to again.
        self.db.transact_write_items(TransactItems=items, ClientRequestToken="token-1")
        self.assertEqual(self.count("counter"), 1)
        # Another token is another request: the put's condition cancels it.
        with self.assertRaises(botocore.exceptions.ClientError) as raised:
            self.db.transact_write_items(TransactItems=items, ClientRequestToken="token-2")
        self.assertEqual(
            raised.exception.response["Error"]["Code"], "TransactionCanceledException"
        )

    def test_the_same_token_with_other_parameters_is_a_mismatch(self):
        self.db.transact_write_items(
            TransactItems=[add_one("mismatch")], ClientRequestToken="token-3"
        )
        with self.assertRaises(botocore.exceptions.ClientError) as raised:
            self.db.transact_write_items(
                TransactItems=[add_one("mismatch"), add_one("other")],
                ClientRequestToken="token-3",
            )
        self.assertEqual(
            raised.exception.response["Error"]["Code"], "IdempotentParameterMismatchException"
        )
        self.assertEqual(self.count("mismatch"), 1)
        self.assertEqual(self.count("other"), 0)

    def test_a_cancelled_transaction_leaves_its_token_free(self):
        self.db.put_item(TableName=TABLE, Item={"PK": {"S": "taken"}, "SK": {"S": "s"}})
        items = [put_new("taken", "x"), add_one("after-cancel")]
        with self.assertRaises(botocore.exceptions.ClientError):
            self.db.transact_write_items(TransactItems=items, ClientRequestToken="token-4")
        self.db.delete_item(TableName=TABLE, Key={"PK": {"S": "taken"}, "SK": {"S": "s"}})
        self.db.transact_write_items(TransactItems=items, ClientRequestToken="token-4")
        self.assertEqual(self.count("after-cancel"), 1)

    def test_a_token_is_remembered_for_ten_minutes(self):
        now = [0.0]
        tokens = client_tokens.ClientTokens(clock=lambda: now[0])
        request = {"TransactItems": [add_one("t")], "ClientRequestToken": "token-5"}
        tokens.remember(request, "200 OK", b"{}")
        now[0] = 599.0
        self.assertEqual(tokens.repeat(request), ("200 OK", b"{}"))
        now[0] = 601.0
        self.assertIsNone(tokens.repeat(request))

    def test_tokens_expire_in_the_order_they_were_last_remembered(self):
        """A token remembered again (its first transaction was not applied, say) counts from
        the second time: the tokens remembered between the two expire before it."""
        now = [0.0]
        tokens = client_tokens.ClientTokens(clock=lambda: now[0])
        requests = {
            name: {"TransactItems": [add_one(name)], "ClientRequestToken": name}
            for name in ("first", "second", "third")
        }
        for at, name in ((0.0, "first"), (100.0, "second"), (200.0, "first"), (300.0, "third")):
            now[0] = at
            tokens.remember(requests[name], "200 OK", name.encode())
        now[0] = 750.0  # second is 650 s old; first 550 s, third 450 s
        self.assertIsNone(tokens.repeat(requests["second"]))
        self.assertEqual(tokens.repeat(requests["first"]), ("200 OK", b"first"))
        self.assertEqual(tokens.repeat(requests["third"]), ("200 OK", b"third"))
        self.assertEqual(list(tokens.applied), ["first", "third"])
        now[0] = 850.0  # first is 650 s old
        self.assertIsNone(tokens.repeat(requests["first"]))
        self.assertEqual(list(tokens.applied), ["third"])


if __name__ == "__main__":
    unittest.main()
