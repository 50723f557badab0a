"""moto's expression parsing done once per expression text, the same answers.

The store sends the same few dozen expression texts again and again (the values change, the text
does not), and moto parses each one from the start on every request:

- an UpdateExpression is parsed twice per update (`UpdateExpressionParser.make`: once by the
  request handler, to find the placeholders it uses, once by the backend), and the validator then
  deep-copies the tree (`Validator.__init__`, `copy.deepcopy`, a Python walk of every node) before
  its checks rewrite the copy;
- a ConditionExpression or FilterExpression is cut into tokens by trying six regular expressions
  at every token (`ConditionExpressionParser._lex_condition_expression`), each looked up in the
  `re` module's cache every time.

`install()` keeps, by expression text (at most `LIMIT` texts, then it starts again):

- the tree `make` built (the handler only reads it; the backend's validator works on a copy), with
  its pickled form, so the validator's copy is one `pickle.loads` (the same tree: the nodes hold
  strings, lists and moto's `DynamoType`s, which pickle copies as deeply as `deepcopy` does);
  a tree that did not come from here (none does in moto's own code) is deep-copied as before;
- the tokens of a condition (named tuples of strings and empty lists, which no later step of
  moto's parser changes: each builds new nodes), given to each parse as a fresh `deque`.

A text that fails to parse is not kept: it fails again, the same way, every time.
`test_expression_cache.py` compares items, answers and errors with and without it, and shows that
the kept tree is never changed by an update.
"""

import copy
import pickle
from collections import deque

from moto.dynamodb import comparisons
from moto.dynamodb.parsing import expressions, validators

LIMIT = 4096
"""Distinct texts kept of each kind before the cache is emptied (the store uses a few dozen)."""

enabled = True
"""Whether the kept parses are used (the tests compare answers with it on and off)."""

_TREES = {}
"""UpdateExpression text -> (tree, its pickled form)."""

_KEPT_BY_ID = {}
"""id(tree) -> (tree, its pickled form), for every tree in `_TREES`."""

_TOKENS = {}
"""Condition text -> its tokens, as a tuple."""

MOTO = {}
"""moto's own functions, by name, as `install()` found them."""


def make(cls, expression_str):
    """`UpdateExpressionParser.make`: the tree of an UpdateExpression, parsed once per text."""
    if not enabled or cls is not expressions.UpdateExpressionParser:
        return MOTO["make"].__func__(cls, expression_str)
    kept = _TREES.get(expression_str)
    if kept is None:
        tree = MOTO["make"].__func__(cls, expression_str)
        if len(_TREES) >= LIMIT:
            _TREES.clear()
            _KEPT_BY_ID.clear()
        kept = (tree, pickle.dumps(tree, pickle.HIGHEST_PROTOCOL))
        _TREES[expression_str] = kept
        _KEPT_BY_ID[id(tree)] = kept
    return kept[0]


def tree_copy(tree):
    """A copy of an update expression's tree that shares nothing with it: from its pickled form
    when it is a kept tree, else `copy.deepcopy` as moto does."""
    kept = _KEPT_BY_ID.get(id(tree))
    if kept is not None and kept[0] is tree:
        return pickle.loads(kept[1])
    return copy.deepcopy(tree)


def validator_init(
    self, expression, expression_attribute_names, expression_attribute_values, item, table
):
    """`Validator.__init__` (moto's own lines) with the tree copied by `tree_copy`."""
    self.expression_attribute_names = expression_attribute_names
    self.expression_attribute_values = expression_attribute_values
    self.item = item
    self.table = table
    self.processors = self.get_ast_processors()
    self.node_to_validate = tree_copy(expression) if enabled else copy.deepcopy(expression)


def lex_condition_expression(self):
    """`ConditionExpressionParser._lex_condition_expression`: a condition's tokens, cut once per
    text."""
    text = self.condition_expression
    if not enabled or not isinstance(text, str):
        return MOTO["lex"](self)
    tokens = _TOKENS.get(text)
    if tokens is None:
        tokens = tuple(MOTO["lex"](self))
        if len(_TOKENS) >= LIMIT:
            _TOKENS.clear()
        _TOKENS[text] = tokens
    return deque(tokens)


def clear():
    """Forgets every kept parse."""
    _TREES.clear()
    _KEPT_BY_ID.clear()
    _TOKENS.clear()


def install():
    """Puts the kept parses on moto's parsers; once per process."""
    if MOTO:
        return
    MOTO["make"] = expressions.UpdateExpressionParser.__dict__["make"]
    MOTO["validator_init"] = validators.Validator.__init__
    MOTO["lex"] = comparisons.ConditionExpressionParser._lex_condition_expression
    expressions.UpdateExpressionParser.make = classmethod(make)
    validators.Validator.__init__ = validator_init
    comparisons.ConditionExpressionParser._lex_condition_expression = lex_condition_expression
