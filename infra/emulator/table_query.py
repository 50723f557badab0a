"""moto's `Query` on a table's primary key, reading one partition instead of the whole table:
the same answers, without the cost that grows with the table and with the page's position.

moto (5.x) answers every `Query` by sorting every item of the table (`Table.all_items`), keeping
those of the asked partition, sorting them by sort key, then walking them from the first one,
computing each walked item's size (`Item.size`, a walk over all its attributes) and comparing it
with the asked sort key range. A caller that pages through a range by moving its lower bound (or
with `ExclusiveStartKey`) therefore pays, for page k, a sort of the whole table and the size and
comparison of every item of the k - 1 pages before it: a 10-page walk over a 10,000-item partition
of a 20,000-item table sorted 200,000 items and sized 65,000 (a profile: about 70 % of the walk).

`install()` answers a `Query` on the table's own key (no index, no legacy `KeyConditions`
filter) from the asked partition alone (`Table.items[hash_key]`, sorted by sort key: the same
items in the same order as `all_items` filtered); an ascending walk with a lower bound (`=`, `>=`,
`>`, `BETWEEN`, `begins_with`) starts at the first item not below it (found by halving), since the
items before fail the comparison; and it skips the size of an item walked while the page is still
empty. That size only feeds the 1 MB page check `result_size + size > 1,000,000`, which cannot
hold before the first item is taken (`result_size` is 0 and no item exceeds
400 KB: moto refuses a larger one on every write, and so does `limits.py`). Everything else is
moto's own code, in its order: the `ExclusiveStartKey` skip, the count limit, the size limit once
the page holds an item, the sort key comparison, `ScannedCount`, the filter expression, the
projection, `LastEvaluatedKey`; but for the deep copy of the page, which nothing needs (see the
comment where moto makes it). Any other `Query` goes moto's way unchanged.
`test_table_query.py` shows the same answers (items, order, counts, `LastEvaluatedKey`, bytes)
with and without it, the 1 MB cut included.

A `Query` on an index stays moto's, but its two sorts are made cheap: moto sorts the whole table
(`Table.all_items`, by table key), keeps the items of the asked index partition, and sorts those
by index key then table key (`Table.sorted_items`), each comparison of two keys computing both
values' `cast_value` again (a `Decimal` for a number). Where every key of a sort holds one type in
each position (the key schema makes it so), `install()` sorts by those values, computed once per
item: the same order, the same ties (both sorts are stable). A key of mixed types, or of a type
that is not a string, a number or a binary, is sorted moto's way. Scans (`all_items` too) get the
same order, cheaper. The test compares both sorts with moto's on string and numeric keys.
"""

import bisect

from moto.dynamodb.models import table as table_module
from moto.dynamodb.models.dynamo_type import Item

# Sort key comparisons that no item below their first operand passes (`=`, `>=`, `>`,
# `BETWEEN`, `begins_with`): such items can be skipped at the start of an ascending walk.
_FROM_LOWER_BOUND = ("EQ", "=", "GE", ">=", "GT", ">", "BETWEEN", "BEGINS_WITH")

_installed = False
_original = None
# Whether the shortcut is taken (the tests compare answers with it on and off).
enabled = True
# Whether sorts compare key values computed once per item (the tests compare orders both ways).
sort_by_values = True
_original_all_items = None
_original_sorted_items = None
# Key types whose `cast_value` (a `str`, a `Decimal`, the binary's value) compares as moto
# compares two of them.
_SORTABLE = ("S", "N", "B")


def values_order(items, key_of):
    """`sorted(items, key=key_of)`, where `key_of` gives a `DynamoType` or a tuple of them, with
    the values of the keys compared directly (each computed once) when every position holds one
    sortable type across the items; None when not (the caller then sorts moto's way)."""
    keys = [key_of(item) for item in items]
    if not keys:
        return []
    first = keys[0]
    if isinstance(first, tuple):
        types = tuple(value.type for value in first)
        if any(kind not in _SORTABLE for kind in types):
            return None
        for key in keys:
            if not isinstance(key, tuple) or tuple(value.type for value in key) != types:
                return None
        values = [tuple(value.cast_value for value in key) for key in keys]
    else:
        kind = getattr(first, "type", None)
        if kind not in _SORTABLE:
            return None
        for key in keys:
            if isinstance(key, tuple) or key.type != kind:
                return None
        values = [key.cast_value for key in keys]
    order = sorted(range(len(items)), key=values.__getitem__)
    return [items[i] for i in order]


def _all_items(self):
    """`Table.all_items`: every item in table key order."""
    if not sort_by_values:
        return _original_all_items(self)
    items = []
    for hash_set in self.items.values():
        if self.range_key_attr:
            items.extend(hash_set.values())
        else:
            items.append(hash_set)
    ordered = values_order(
        items, lambda x: (x.hash_key, x.range_key) if x.range_key else x.hash_key
    )
    return ordered if ordered is not None else _original_all_items(self)


def _sorted_items(self, hash_key_attrs, range_key_attrs, items):
    """`Table.sorted_items`: `items` sorted in place by index key, then table key."""
    if sort_by_values:
        attrs = self._generate_attr_to_sort_by(hash_key_attrs, range_key_attrs)
        ordered = values_order(items, lambda x: tuple(x.attrs[key] for key in attrs))
        if ordered is not None:
            items[:] = ordered
            return items
    return _original_sorted_items(self, hash_key_attrs, range_key_attrs, items)


def _applies(table, hash_key, index_name, range_key_conditions, filter_kwargs):
    if not enabled or index_name or filter_kwargs or hash_key is None:
        return False
    if not table.range_key_attr:
        return False
    # One sort key condition at most, on the table's sort key (moto compares that attribute).
    if range_key_conditions and (
        len(range_key_conditions) > 1 or range_key_conditions[0][0] != table.range_key_attr
    ):
        return False
    return True


def _query(
    self,
    hash_key,
    range_comparison,
    range_objs,
    limit,
    exclusive_start_key,
    scan_index_forward,
    projection_expressions,
    index_name=None,
    consistent_read=False,
    filter_expression=None,
    hash_key_conditions=None,
    range_key_conditions=None,
    **filter_kwargs,
):
    if not _applies(self, hash_key, index_name, range_key_conditions, filter_kwargs):
        return _original(
            self,
            hash_key,
            range_comparison,
            range_objs,
            limit,
            exclusive_start_key,
            scan_index_forward,
            projection_expressions,
            index_name=index_name,
            consistent_read=consistent_read,
            filter_expression=filter_expression,
            hash_key_conditions=hash_key_conditions,
            range_key_conditions=range_key_conditions,
            **filter_kwargs,
        )
    hash_attrs = [self.hash_key_attr]
    range_attrs = [self.range_key_attr]
    # The partition's items by sort key: what moto's sort of the whole table, kept to the
    # partition and sorted by sort key again, yields.
    partition = self.items.get(hash_key) or {}
    possible_results = sorted(
        (item for item in partition.values() if isinstance(item, Item)),
        key=lambda item: item.range_key,
    )
    if scan_index_forward is False:
        possible_results.reverse()
    elif (
        range_comparison in _FROM_LOWER_BOUND
        and range_objs
        and possible_results
        and range_objs[0].type == possible_results[0].range_key.type
    ):
        # Oldest first with a lower bound: the items below it fail the comparison while the
        # page is still empty, where moto only walks past them; start at the first one that
        # is not below it (the same order, found by halving).
        keys = [item.range_key for item in possible_results]
        possible_results = possible_results[bisect.bisect_left(keys, range_objs[0]) :]

    results = []
    result_size = 0
    scanned_count = 0
    last_evaluated_key = None
    processing_previous_page = exclusive_start_key is not None
    for result in possible_results:
        if processing_previous_page:
            if self._item_comes_before_dct(
                result, exclusive_start_key, hash_attrs, range_attrs, scan_index_forward
            ):
                continue
            processing_previous_page = False
        reached_length_limit = len(results) == limit
        # moto: (result_size + result.size()) > RESULT_SIZE_LIMIT, never true while the page is
        # empty (result_size 0, items at most 400 KB); its size is only computed once it can be.
        reached_size_limit = bool(results) and (
            result_size + result.size()
        ) > table_module.RESULT_SIZE_LIMIT
        if reached_length_limit or reached_size_limit:
            last_evaluated_key = self._get_last_evaluated_key(results[-1], index_name)
            break
        if not range_comparison:
            results.append(result)
            result_size += result.size()
            scanned_count += 1
        else:
            # moto compares the attribute the condition names when the item holds it, else the
            # item's sort key (the same attribute here).
            named = range_key_conditions and result.attrs.get(self.range_key_attr)
            compared = named if named else result.range_key
            if compared.compare(range_comparison, range_objs):
                results.append(result)
                result_size += result.size()
                scanned_count += 1

    # moto deep-copies the page here, so that the answer cannot share objects with the table.
    # It never does: the filter reads the items, a projection builds new ones, and the handler
    # turns every item into new dicts and lists (`dynamo_to_dict`) before anything else runs,
    # all under the wrapper's lock, so no write can come between. The copy (a third of a
    # page's time) is left out.
    if filter_expression is not None:
        results = [item for item in results if filter_expression.expr(item)]
    if projection_expressions:
        results = [r.project(projection_expressions) for r in results]
    return results, scanned_count, last_evaluated_key


def install():
    """Puts the shortcut on moto's `Table.query` and the sorts on `Table.all_items` and
    `Table.sorted_items`; once per process."""
    global _installed, _original, _original_all_items, _original_sorted_items
    if _installed:
        return
    _original = table_module.Table.query
    _original_all_items = table_module.Table.all_items
    _original_sorted_items = table_module.Table.sorted_items
    table_module.Table.query = _query
    table_module.Table.all_items = _all_items
    table_module.Table.sorted_items = _sorted_items
    _installed = True
