"""moto writes the request id into every answer with a regular expression over the whole body,
`(?<=<RequestId>).*(?=</RequestId>)` (`BaseResponse._enrich_response`), looking for an XML
`<RequestId>` element that a DynamoDB answer (JSON) never holds. The lookbehind is tried at every
character: over a `BatchGetItem` of 100 items of 30 KB (3 MB of JSON) it was a third of the
emulator's time (py-spy, `cargo bench -p shared --bench replay` on the emulator;
docs/performance.md).

`install()` runs the same substitution only when the body holds `<RequestId>`; a body without it
cannot match, so every answer is the same as moto's (test_request_id.py). Once per process.
"""

from moto.core import responses

_installed = False
_original = None


def _enrich_response(headers, body):
    if isinstance(body, str) and "<RequestId>" not in body:
        # What moto does besides the substitution, in its order: the status as a string, then the
        # request id it generates (kept in the headers it returns).
        if "status" in headers:
            headers["status"] = str(headers["status"])
        responses.gen_amzn_requestid_long(headers)
        return headers, body
    return _original(headers, body)


def install():
    """Puts the shortcut on moto's `BaseResponse._enrich_response`; once per process."""
    global _installed, _original
    if _installed:
        return
    _original = responses.BaseResponse._enrich_response
    responses.BaseResponse._enrich_response = staticmethod(_enrich_response)
    _installed = True
