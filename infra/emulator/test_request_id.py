"""`request_id.py` skips moto's request-id substitution where it cannot match: every answer is
the one moto gives (the body untouched, the status a string, a fresh 52-character request id in
`x-amzn-requestid`), and an XML body with `<RequestId>` still gets the id written in.

Run: .venv/bin/python -m unittest discover -s infra/emulator -p 'test_*.py' (test.sh runs it).
"""

import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import request_id  # noqa: E402
from moto.core import responses  # noqa: E402


class EnrichResponse(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Installed once per process (another test's wrapper may have done it already); moto's
        # own function is the one the shortcut keeps.
        request_id.install()
        cls.moto = staticmethod(request_id._original)
        cls.patched = staticmethod(responses.BaseResponse._enrich_response)

    def both(self, headers, body):
        return (
            self.moto(dict(headers), body),
            self.patched(dict(headers), body),
        )

    def test_the_shortcut_is_installed(self):
        self.assertIsNot(self.moto, self.patched)

    def test_a_json_answer_is_the_same_as_moto_gives(self):
        body = json.dumps({"Responses": {"t": [{"text": {"S": "x" * 30_000}}] * 3}})
        (h1, b1), (h2, b2) = self.both({"status": 200}, body)
        self.assertEqual(b1, body)
        self.assertEqual(b2, body)
        for headers in (h1, h2):
            self.assertEqual(headers["status"], "200")
            self.assertEqual(len(headers["x-amzn-requestid"]), 52)
        self.assertEqual(set(h1), set(h2))

    def test_a_json_body_naming_request_id_without_the_element_is_untouched(self):
        body = '{"RequestId": "abc", "note": "</RequestId>"}'
        (_, b1), (_, b2) = self.both({}, body)
        self.assertEqual(b1, b2)
        self.assertEqual(b2, body)

    def test_an_xml_answer_still_gets_the_request_id_written_in(self):
        body = "<R><ResponseMetadata><RequestId>old</RequestId></ResponseMetadata></R>"
        (h1, b1), (h2, b2) = self.both({"status": 400}, body)
        for headers, out in ((h1, b1), (h2, b2)):
            self.assertEqual(headers["status"], "400")
            written = re.search(r"<RequestId>(.*)</RequestId>", out).group(1)
            self.assertEqual(written, headers["x-amzn-requestid"])

    def test_a_bytes_body_goes_through_moto_unchanged(self):
        (h1, b1), (h2, b2) = self.both({"status": 200}, b"\x00binary")
        self.assertEqual(b1, b"\x00binary")
        self.assertEqual(b2, b"\x00binary")
        self.assertEqual(set(h1), set(h2))


if __name__ == "__main__":
    unittest.main()
