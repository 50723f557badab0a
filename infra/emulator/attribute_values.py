"""A shortcut through moto's response serializer for DynamoDB attribute values, same bytes out.

moto (5.x) writes every response through a generic, model-driven serializer. For a DynamoDB
`AttributeValue` (a structure of ten members, `S` to `BOOL`, of which a value holds exactly one)
it looks each of the ten members up in the value under every alias its alias providers suggest
(the member's name, its shape's name, their snake_case forms, prefixes, ...): some forty
look-ups, each building a context object, for every attribute of every item it returns. That
search is most of the emulator's time on a read that returns many items (a profile of a
`Query` page of 1,000 history entries and of `BatchGetItem`s of 100 records: about three
quarters of the DynamoDB samples, in `AttributePicker.get_possible_keys` and below).

Its outcome is known in advance: moto hands the serializer an attribute value as a plain dict
of one type key (`{"S": "..."}`, `{"M": {...}}`, ..., built by `dynamo_to_dict`), and of the
forty aliases only the member's own name can be a key of such a dict (the others are shape
names such as `StringSetAttributeValue`, snake_case forms such as `s`, or prefixes of
`AttributeValue`, none of them a type key). So the serializer always finds the one member the
dict holds, under its own name, and nothing else. `install()` makes the serializer go there
directly for such a dict, and then serialize the member exactly as before (the same
`_serialize` call with the same shape and key: strings, base64 of binary, sets, nested maps and
lists through the same code). Anything else (a dict of several keys or of a key that is not a
member, a value that is not a dict, response transformers or alias providers other than moto's
defaults) goes the original way. `test_attribute_values.py` shows the answers are the same
bytes with and without it.

Nothing about what the emulator accepts or refuses changes: requests, moto's checks and ours
(`limits.py`) are untouched; only the writing of answers is quicker.
"""

from moto.core import serialize

_installed = False
_original = None
# Whether the shortcut is taken (the tests compare answers with it on and off).
enabled = True


def _shortcut_applies(serializer, value, shape):
    if shape.name != "AttributeValue" or not isinstance(value, dict) or len(value) != 1:
        return False
    if serializer.service_model.service_name != "dynamodb":
        return False
    picker = serializer._value_picker
    if type(picker) not in (
        serialize.XFormedAttributePicker,
        serialize.AttributePicker,
        serialize.DefaultAttributePicker,
    ):
        return False
    if getattr(picker, "response_transformers", None):
        return False
    providers = getattr(picker, "alias_providers", serialize.DEFAULT_ALIAS_PROVIDERS)
    if providers is not serialize.DEFAULT_ALIAS_PROVIDERS:
        return False
    (member,) = value
    return member in shape.members


def _serialize_type_structure(self, serialized, value, shape, key):
    if not (enabled and _shortcut_applies(self, value, shape)):
        return _original(self, serialized, value, shape, key)
    # What the original does for a one-key dict whose key is a member: every member gets its
    # parent, the one present is serialized under its own name (a None value is left out), and
    # the result is stored under `key` (or written in place at the top level).
    members = shape.members
    for member_shape in members.values():
        member_shape.parent = shape
    wrapper = self.MAP_TYPE() if key else serialized
    ((member, member_value),) = value.items()
    if member_value is not None:
        self._serialize(wrapper, member_value, members[member], member)
    if key:
        self._default_serialize(serialized, wrapper, shape, key)


def install():
    """Puts the shortcut on moto's JSON serializer (DynamoDB's protocol); once per process."""
    global _installed, _original
    if _installed:
        return
    _original = serialize.JSONSerializer._serialize_type_structure
    serialize.JSONSerializer._serialize_type_structure = _serialize_type_structure
    _installed = True
