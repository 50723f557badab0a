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
directly for such a dict, and then serialize the member exactly as before: a string (`S`, `N`)
as the string serializer writes it (itself, under the member's name), anything else through the
same `_serialize` call with the same shape and key (base64 of binary, sets, booleans, nested maps
and lists through the same code). A map of attribute values (an item) is written the way moto's
JSON map serializer writes it, each plain string entry directly as `{member: value}`, any other
entry through the same `_serialize` call. Anything else (a dict of several keys or of a key that
is not a member, a value that is not a dict, response transformers or alias providers other
than moto's defaults, a serialization name on a shape) goes the original way.
`test_attribute_values.py` shows the answers are the same bytes with and without it.

Before that, moto turns its answer into plain dicts (`dynamo_to_dict`: for every value a chain of
`isinstance` checks and a `hasattr(value, "to_json")`). `install()` also gives it a quicker first
look at the types such an answer is made of (exactly `dict` or moto's `LimitedSizeDict` of an
item's attributes, `list`, `str`, or moto's `DynamoType` of a type other than binary), each
converted as moto converts it; every other value (binary, datetimes, objects with `to_json`,
subclasses) goes to moto's own function.

Nothing about what the emulator accepts or refuses changes: requests, moto's checks and ours
(`limits.py`) are untouched; only the writing of answers is quicker.
"""

from moto.core import serialize
from moto.dynamodb import responses
from moto.dynamodb.models import utilities
from moto.dynamodb.models.dynamo_type import DynamoType, LimitedSizeDict

_installed = False
_original = None
_original_map = None
_original_to_dict = None
# Whether the shortcut is taken (the tests compare answers with it on and off).
enabled = True


def _qualifies(serializer, shape):
    """Whether `serializer` writing `shape` (an `AttributeValue`, or a map of them) is the case
    the shortcut knows: DynamoDB, moto's default attribute picker, no response transformer, no
    serialization name on the shapes involved."""
    if shape.type_name == "map":
        if "name" in shape.serialization:
            return False
        shape = shape.value
    if shape.name != "AttributeValue" or "name" in shape.serialization:
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
    return providers is serialize.DEFAULT_ALIAS_PROVIDERS


def _held_member(value, members):
    """The (member, value) an attribute value dict holds when it holds exactly one member."""
    if type(value) is not dict or len(value) != 1:
        return None
    ((member, member_value),) = value.items()
    return (member, member_value) if member in members else None


def _plain_string(member_value, member_shape):
    """Whether the member is a string (`S`, `N`) the string serializer writes as itself: it
    writes `str(value)` for a value other than None, {} and [] (a str is none of them) under
    the member's name (none of these members has a serialization name)."""
    return (
        type(member_value) is str
        and member_shape.type_name == "string"
        and "name" not in member_shape.serialization
    )


def _set_parents(shape):
    # moto's structure serializer gives every member its parent before looking it up.
    for member_shape in shape.members.values():
        member_shape.parent = shape


def _serialize_type_structure(self, serialized, value, shape, key):
    held = _held_member(value, shape.members) if shape.name == "AttributeValue" else None
    if not (enabled and held and _qualifies(self, shape)):
        return _original(self, serialized, value, shape, key)
    # What the original does for a one-key dict whose key is a member: the one present is
    # serialized under its own name (a None value is left out), and the result is stored under
    # `key` (or written in place at the top level).
    _set_parents(shape)
    wrapper = self.MAP_TYPE() if key else serialized
    member, member_value = held
    member_shape = shape.members[member]
    if _plain_string(member_value, member_shape):
        wrapper[member] = member_value
    elif member_value is not None:
        self._serialize(wrapper, member_value, member_shape, member)
    if key:
        self._default_serialize(serialized, wrapper, shape, key)


def _serialize_type_map(self, serialized, value, shape, key):
    if not (enabled and shape.value.name == "AttributeValue" and _qualifies(self, shape)):
        return _original_map(self, serialized, value, shape, key)
    # moto's JSON map serializer: a new dict stored under the map's name, then each entry
    # serialized into it under its own key as an `AttributeValue`, which for a plain string
    # member is `{member: value}` (the structure shortcut above, inlined); any other entry goes
    # through `_serialize` as before.
    map_obj = self.MAP_TYPE()
    self._default_serialize(serialized, map_obj, shape, key)
    attribute_value = shape.value
    members = attribute_value.members
    _set_parents(attribute_value)
    for sub_key, sub_value in value.items():
        held = _held_member(sub_value, members) if type(sub_key) is str and sub_key else None
        if held and _plain_string(held[1], members[held[0]]):
            map_obj[sub_key] = {held[0]: held[1]}
        else:
            self._serialize(map_obj, sub_value, attribute_value, sub_key)


def _to_dict(value):
    """moto's `dynamo_to_dict(value)`, the common types first (same results)."""
    if not enabled:
        return _original_to_dict(value)
    kind = type(value)
    if kind is str:
        # Not a datetime, a DynamoType, nor a dict or list, and no `to_json`: itself.
        return value
    if kind is dict or (kind is LimitedSizeDict and not hasattr(value, "to_json")):
        # An item's attributes are a LimitedSizeDict: moto converts it as any dict.
        return {k: _to_dict(v) for k, v in value.items()}
    if kind is list:
        return [_to_dict(v) for v in value]
    if kind is DynamoType and value.type not in ("B", "BS"):
        return {value.type: _to_dict(value.value)}
    return _original_to_dict(value)


def install():
    """Puts the shortcuts on moto's JSON serializer (DynamoDB's protocol) and on the conversion
    of DynamoDB answers to dicts; once per process."""
    global _installed, _original, _original_map, _original_to_dict
    if _installed:
        return
    _original = serialize.JSONSerializer._serialize_type_structure
    serialize.JSONSerializer._serialize_type_structure = _serialize_type_structure
    _original_map = serialize.JSONSerializer._serialize_type_map
    serialize.JSONSerializer._serialize_type_map = _serialize_type_map
    _original_to_dict = utilities.dynamo_to_dict
    responses.dynamo_to_dict = _to_dict
    _installed = True
