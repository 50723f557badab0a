"""moto's validation of an UpdateExpression in linear time, the same answers.

moto validates every UpdateExpression (of an UpdateItem, or of an Update in a
TransactWriteItems) by walking its syntax tree once per check, ten walks. Two parts of that are
work done again and again:

- each walk asks the walker for its node-to-handler table twice per node
  (`DepthFirstTraverser.nodes_to_be_processed` and `process` rebuild it every time), where the
  table never changes during a walk, and matches each node against it with `isinstance` on
  abstract base classes;
- the check that an expression has at most one SET, one REMOVE and one ADD clause
  (`ActionCountValidator`) runs at every node of the tree and searches the node's whole subtree
  three times (`Node.find_clauses`): quadratic in the number of actions, and the store's write
  builders send updates of a few to a few dozen actions.

`install()` replaces both with equivalents that compute the same thing once: the walk reads the
table once per walk and matches each node class once; the clause check counts the clauses of
every subtree in one bottom-up pass and raises where moto's does (the first node, in moto's
bottom-up order, with two clauses of a kind below it), naming the kind moto names (at one node:
ADD, then REMOVE, then SET). Measured on the integration suite's DynamoDB tests, the emulator's
CPU about 9 % lower: docs/performance.md, "Less work for the same checks".
"""

from moto.dynamodb.exceptions import TooManyClauses
from moto.dynamodb.parsing import ast_nodes, validators

CLAUSE_KINDS = (
    ("ADD", ast_nodes.UpdateExpressionAddClause),
    ("REMOVE", ast_nodes.UpdateExpressionRemoveClause),
    ("SET", ast_nodes.UpdateExpressionSetClause),
)


DECIDED = {}
"""(walker class, node class) -> (is a node, the index of its handler in the walker's table, or
None): what moto's `isinstance` checks decide, kept across walks (every walker's table is a
constant of its class)."""


def decide(walker, kinds, cls):
    """Which handler of `kinds` (the walker's table, in order) takes a node of class `cls`."""
    if not issubclass(cls, ast_nodes.Node):
        decision = (False, None)
    else:
        decision = (True, next((i for i, kind in enumerate(kinds) if issubclass(cls, kind)), None))
    DECIDED[(type(walker), cls)] = decision
    return decision


def traverse(self, node):
    """`DepthFirstTraverser.traverse`: moto's depth-first, bottom-up walk, its handler table read
    once per walk, and which handler (if any) takes a node decided once per node class (moto's
    nodes are abstract-base-class instances, whose `isinstance` is slow)."""
    table = self._processing_map()
    kinds = tuple(table)
    handlers = tuple(table.values())
    pre_processing_of_child = self.pre_processing_of_child
    walker = type(self)

    def visit(node, child_id):
        cls = type(node)
        is_node, handler = DECIDED.get((walker, cls)) or decide(self, kinds, cls)
        if is_node:
            parent_node = node.parent
            if node.children is not None:
                for i, child_node in enumerate(node.children):
                    pre_processing_of_child(node, i)
                    visit(child_node, i)
            if handler is not None:
                node = handlers[handler](node)
                node.parent = parent_node
                if parent_node:
                    parent_node.children[child_id] = node
        return node

    return visit(node, -1)


def clause_counts(node):
    """How many clauses of each kind (`CLAUSE_KINDS`) `node.find_clauses` finds under `node`,
    computed for every node of the subtree in one post-order walk; `check` runs on each
    UpdateExpression node in the order moto's walk processes them."""

    def counts(node, check):
        found = [0, 0, 0]
        for child in node.children or []:
            is_node = isinstance(child, ast_nodes.Node)
            below = counts(child, check) if is_node else None
            kind = type(child)
            searched = below is not None and isinstance(
                child, (ast_nodes.Expression, ast_nodes.UpdateExpressionFunction)
            )
            for index, (_, clause_type) in enumerate(CLAUSE_KINDS):
                if kind is clause_type:
                    found[index] += 1
                elif searched:
                    found[index] += below[index]
        if isinstance(node, ast_nodes.UpdateExpression):
            check(found)
        return found

    return counts


def verify_action_counts_once(root):
    """`ActionCountValidator.traverse`: raises `TooManyClauses` at the first node, in moto's
    order, that has more than one clause of a kind below it; the tree itself is unchanged."""

    def check(found):
        for (name, _), count in zip(CLAUSE_KINDS, found):
            if count > 1:
                raise TooManyClauses(name)

    if isinstance(root, ast_nodes.Node):
        clause_counts(root)(root, check)
    return root


def action_count_traverse(self, node):
    """`ActionCountValidator.traverse`, linear (`verify_action_counts_once`)."""
    return verify_action_counts_once(node)


MOTO = {
    "DepthFirstTraverser.traverse": ast_nodes.DepthFirstTraverser.traverse,
    "ActionCountValidator.traverse": validators.ActionCountValidator.traverse,
}
"""moto's own walks, as they were before `install()` (its tests compare the two)."""


def install(on=True):
    """Puts the linear walks in place of moto's (`on`), or moto's own back (`on=False`)."""
    if on:
        ast_nodes.DepthFirstTraverser.traverse = traverse
        validators.ActionCountValidator.traverse = action_count_traverse
    else:
        ast_nodes.DepthFirstTraverser.traverse = MOTO["DepthFirstTraverser.traverse"]
        validators.ActionCountValidator.traverse = MOTO["ActionCountValidator.traverse"]
