"""`host_dispatch.py` answers each host with the backend moto's own lookup gives it, and looks up
each host once.

Run: .venv/bin/python -m unittest discover -s infra/emulator -p 'test_*.py' (test.sh runs it).
"""

import os
import sys
import unittest
from unittest import mock

from moto import backends
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host_dispatch  # noqa: E402

HOSTS = [
    None,
    "moto_api",
    "dynamodb",
    "dynamodb.us-east-1.amazonaws.com",
    "sqs.eu-west-1.amazonaws.com",
    "127.0.0.1:4566",
    "localhost",
    "not-a-service.example",
]


class HostDispatch(unittest.TestCase):
    def test_each_host_gets_motos_backend_and_is_looked_up_once(self):
        original = DomainDispatcherApplication.get_backend_for_host
        expected = {host: original(DomainDispatcherApplication(create_backend_app), host) for host in HOSTS}
        self.assertEqual(expected["dynamodb.us-east-1.amazonaws.com"], "dynamodb")
        self.assertEqual(expected["sqs.eu-west-1.amazonaws.com"], "sqs")

        host_dispatch.install()
        dispatcher = DomainDispatcherApplication(create_backend_app)
        listing = mock.Mock(wraps=backends.list_of_moto_modules)
        with mock.patch.object(backends, "list_of_moto_modules", listing):
            for _ in range(3):
                self.assertEqual({host: dispatcher.get_backend_for_host(host) for host in HOSTS}, expected)
        # moto lists its modules for every host but None and "moto_api", once each.
        self.assertEqual(listing.call_count, len(HOSTS) - 2)


class MethodNames(unittest.TestCase):
    def test_each_response_class_gets_motos_method_names_and_is_listed_once(self):
        from moto.core import responses, utils
        from moto.dynamodb.responses import DynamoHandler
        from moto.sqs.responses import SQSResponse

        expected = {cls: utils.method_names_from_class(cls) for cls in (DynamoHandler, SQSResponse)}
        self.assertIn("transact_write_items", expected[DynamoHandler])
        host_dispatch.install()
        with mock.patch.object(utils.inspect, "getmembers", wraps=utils.inspect.getmembers) as listing:
            for _ in range(3):
                for cls, names in expected.items():
                    self.assertEqual(responses.method_names_from_class(cls), names)
        self.assertLessEqual(listing.call_count, 2)


if __name__ == "__main__":
    unittest.main()
