"""Rows as the driver's ``Record.data()`` gives them, without its walk when nothing would change."""

from __future__ import annotations

from graphstrata.db import Database, record_dict

ROWS = """
CREATE (a:Probe {name: 'a', vec: [0.5, -1.0, 2.0], when: date('2026-11-26')})-[r:LINKS {w: 1}]->(b:Probe {name: 'b'})
WITH a, r, b
MATCH p = (a)-[:LINKS]->(b)
RETURN 1 AS int, 'x' AS str, null AS nothing, true AS flag, a.vec AS vector, [] AS empty,
       [1, 'two', 3.0, null] AS mixed, {k: a.vec, nested: {deep: [b.name]}} AS map, a.when AS date,
       a AS node, r AS rel, p AS path, [a, b] AS nodes, {who: a} AS node_in_map, [[1, 2], [a]] AS deep_node,
       [[0.1, 0.2], [0.3]] AS matrix
"""


def test_rows_equal_the_drivers_own_conversion(graph: Database) -> None:
    with graph.driver.session(database=graph.database) as session:
        records = list(session.run(ROWS))
    (record,) = records
    assert record_dict(record) == record.data()
    assert list(record_dict(record)) == list(record.keys())
    # the shortcut is taken for plain values and not for graph ones
    from graphstrata.db import _plain

    keys = record.keys()  # (iterating a Record gives its values)
    plain = {k for k in keys if _plain(record[k])}
    assert plain == {"int", "str", "nothing", "flag", "vector", "empty", "mixed", "map", "matrix"}
    # and the database's reads use it
    (row,) = graph.read("MATCH (a:Probe {name: 'a'}) RETURN a.vec AS vector, a AS node")
    node = {"name": "a", "vec": [0.5, -1.0, 2.0], "when": row["node"]["when"]}
    assert row == {"vector": [0.5, -1.0, 2.0], "node": node}
