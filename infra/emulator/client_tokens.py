"""`TransactWriteItems` client request tokens as DynamoDB honours them, for the emulator
(`moto_server.py`); moto ignores `ClientRequestToken` and runs a repeated transaction again.

DynamoDB API reference, `TransactWriteItems`, `ClientRequestToken`: "Providing a
ClientRequestToken makes the call to TransactWriteItems idempotent, meaning that multiple
identical calls have the same effect as one single call. [...] A client request token is valid for
10 minutes after the first request that uses it is completed. [...] If you submit a request with
the same client token but a change in other parameters within the 10-minute idempotency window,
DynamoDB returns an IdempotentParameterMismatch exception."

The AWS SDKs fill the token in when the caller does not, once per call, so the SDK's own retry of
a transaction whose answer was lost (a 500 after DynamoDB applied it, a timeout) carries the same
token: DynamoDB answers it as done, changing nothing. Without this, the emulator would run the
retry again and cancel it on the conditions the first run made false, an answer DynamoDB never
gives. Here:

- a transaction that was applied is remembered by its token for 10 minutes with a fingerprint of
  its other parameters (`TransactItems`, `ReturnConsumedCapacity`,
  `ReturnItemCollectionMetrics`), and its answer;
- a repeat with the same token and fingerprint within that window gets the remembered answer and
  changes nothing; with another fingerprint, `IdempotentParameterMismatchException` (HTTP 400);
- a transaction that was not applied (cancelled, refused) leaves nothing behind: its repeat runs
  as a new request, as nothing of it happened.
"""

import hashlib
import json
import time

WINDOW_SECONDS = 600
ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"
MISMATCH = (
    "Request parameters do not match the parameters of the previous request with the same "
    "client token"
)


def fingerprint(request):
    """The parameters a repeat must match, as a digest (the token itself aside)."""
    kept = {k: v for k, v in request.items() if k != "ClientRequestToken"}
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()


class ClientTokens:
    """The applied transactions of the last 10 minutes, by client request token."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.applied = {}

    def clear(self):
        self.applied.clear()

    def _forget_expired(self):
        """Drops the tokens older than the window. `applied` is kept in the order the tokens
        were remembered (`remember` moves a token remembered again to the end), so the expired
        ones are at its front: the walk stops at the first one still valid, instead of reading
        every token of the last 10 minutes on every transaction."""
        now = self.clock()
        while self.applied:
            token, (_, at, _) = next(iter(self.applied.items()))
            if now - at <= WINDOW_SECONDS:
                break
            del self.applied[token]

    def repeat(self, request):
        """For a `TransactWriteItems` request: `None` when it must run, else the answer to give
        instead, `(status, body)`: the remembered one, or the mismatch error."""
        token = request.get("ClientRequestToken")
        if not isinstance(token, str):
            return None
        self._forget_expired()
        seen = self.applied.get(token)
        if seen is None:
            return None
        digest, _, answer = seen
        if digest != fingerprint(request):
            body = json.dumps(
                {"__type": ERROR_PREFIX + "IdempotentParameterMismatchException", "message": MISMATCH}
            ).encode()
            return "400 Bad Request", body
        return "200 OK", answer

    def remember(self, request, status, answer):
        """Keeps an applied transaction's answer (status 200) by its token."""
        token = request.get("ClientRequestToken")
        if isinstance(token, str) and status.startswith("200"):
            self.applied.pop(token, None)
            self.applied[token] = (fingerprint(request), self.clock(), answer)
