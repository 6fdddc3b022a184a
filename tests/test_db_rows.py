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


class Unprintable(dict):
    def __repr__(self) -> str:
        raise AssertionError("a row was formatted for the driver's debug log")


def test_batched_writes_do_not_format_their_rows(graph: Database) -> None:
    # the driver formats each RUN's parameters for its debug log even when the log is off; a batch
    # of embedding rows costs more to format than to send, so batches stand for themselves in it
    rows = [Unprintable(name=f"row-{i}", vec=[0.25] * 384) for i in range(5)]
    assert graph.write_batches("UNWIND $rows AS r CREATE (:Probe {name: r.name, vec: r.vec})", rows, batch_size=2) == 5
    got = graph.read("MATCH (p:Probe) RETURN p.name AS name, p.vec AS vec ORDER BY name")
    assert [r["name"] for r in got] == [f"row-{i}" for i in range(5)] and all(r["vec"] == [0.25] * 384 for r in got)
