"""moto's server picks the backend of each request from its `Host` header
(`DomainDispatcherApplication.get_backend_for_host`), and to do it lists moto's package directory
on disk (`backends.list_of_moto_modules`, an `isdir` per module) before it tries its URL patterns:
for every request, though the answer for one host never changes while the process runs. In the
test command's run this was 6 % of the emulator's time (py-spy).

`install()` keeps each host's answer after its first request (per dispatcher, under the lock moto
already holds there), so every later request of that host skips the listing. The answers are
moto's own (test_host_dispatch.py). Once per process.

Then, to find the handler method of the request's action, moto lists every function of the
response class (`method_names_from_class`, `inspect.getmembers` over a few hundred members,
sorted) on every request: 3 % of the emulator's time in the test command (cProfile). A class's
functions do not change while the process runs; `install()` keeps each class's list after its
first request (moto only asks whether the action is in it).
"""

from moto.core import responses
from moto.moto_server.werkzeug_app import DomainDispatcherApplication

_installed = False


def install():
    """Puts the per-host memo on `DomainDispatcherApplication.get_backend_for_host` and the
    per-class one on the response classes' method listing."""
    global _installed
    if _installed:
        return
    original = DomainDispatcherApplication.get_backend_for_host

    def get_backend_for_host(self, host):
        memo = self.__dict__.setdefault("_backend_by_host", {})
        if host not in memo:
            memo[host] = original(self, host)
        return memo[host]

    DomainDispatcherApplication.get_backend_for_host = get_backend_for_host

    listed = responses.method_names_from_class
    by_class = {}

    def method_names_from_class(clazz):
        names = by_class.get(clazz)
        if names is None:
            names = by_class[clazz] = listed(clazz)
        return names

    responses.method_names_from_class = method_names_from_class
    _installed = True
