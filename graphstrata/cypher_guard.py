"""What model-written Cypher may do: a plain read of the graph, nothing else.

A language model's query is untrusted input (a prompt can steer it, a model can be wrong). Three
checks stand between it and the database, each an allow-list:

1. **The text** (here, before the server sees it): one statement; every clause on
   :data:`ALLOWED_CLAUSES`; every ``CALL`` of a procedure on :data:`ALLOWED_PROCEDURES`; every
   function either built into Cypher or on :data:`ALLOWED_FUNCTIONS`. So ``LOAD CSV`` (the server
   would fetch a URL), ``TERMINATE``/``SHOW`` commands, ``CALL { … } IN TRANSACTIONS``, writes and
   ``gds.*`` projections never reach the server.
2. **The plan** (``EXPLAIN``, nothing runs): the planner must call it a read (query type ``r``),
   every operator must be one of :data:`READ_OPERATORS`, every procedure call on the allow-list —
   the server's own reading of the query, so a trick the text check misses still fails here.
3. **The run**: a READ transaction with a transaction timeout (``db.transaction.timeout`` is 0 by
   default: the server would let it run forever) and a row cap (the rest is discarded, never sent).

These constants are the one place that says what text-to-Cypher may call. (The database's own
procedure allow-list, ``dbms.security.procedures.allowlist`` in graphstrata/neo4j_dist.py, is a
different, server-wide gate.)
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import Any

from graphstrata.analysts import WriteRefused

# --- the allow-lists -----------------------------------------------------------------------------

#: Clauses (and the words of clauses) a query may use. ``CALL`` is a subquery ``CALL { … }`` /
#: ``CALL (x) { … }`` or a procedure of ALLOWED_PROCEDURES; USING is a planner hint.
ALLOWED_CLAUSES = frozenset(
    {"MATCH", "OPTIONAL", "WHERE", "WITH", "RETURN", "ORDER", "SKIP", "OFFSET", "LIMIT", "UNWIND", "UNION"}
    | {"CALL", "YIELD", "USING", "FILTER", "LET"}
)
#: Words Cypher parses as the start of a clause or command that is not a read: one of these, bare,
#: refuses the query even where it might name a variable. (Words that rarely start anything but often
#: name variables — START, NEXT, FINISH … — are left to the plan check, where an administration
#: command is query type ``s`` and never a read.)
CLAUSE_KEYWORDS = ALLOWED_CLAUSES | frozenset(
    {"USE", "CREATE", "MERGE", "SET", "DELETE", "DETACH", "NODETACH", "REMOVE", "FOREACH", "INSERT"}
    | {"LOAD", "CSV", "PERIODIC", "TRANSACTION", "TRANSACTIONS", "CONCURRENT"}
    | {"TERMINATE", "SHOW", "DROP", "ALTER", "GRANT", "DENY", "REVOKE", "EXPLAIN", "PROFILE", "CYPHER"}
)
#: Procedures a query may CALL: schema and index reads.
ALLOWED_PROCEDURES = frozenset(
    {
        "db.labels",
        "db.relationshipTypes",
        "db.propertyKeys",
        "db.schema.visualization",
        "db.schema.nodeTypeProperties",
        "db.schema.relTypeProperties",
        "db.index.fulltext.queryNodes",
        "db.index.fulltext.queryRelationships",
        "db.index.vector.queryNodes",
        "db.index.vector.queryRelationships",
        "apoc.meta.data",
        "apoc.meta.schema",
        "apoc.meta.stats",
        "apoc.meta.nodeTypeProperties",
        "apoc.meta.relTypeProperties",
    }
)
#: Plugin functions a query may call (patterns; names without a namespace are Cypher's own, which
#: Neo4j reserves to built-ins). apoc.meta.* and apoc.any.* serve LangChain's enhanced schema.
ALLOWED_FUNCTIONS = (
    "apoc.meta.*",
    "apoc.any.property",
    "apoc.any.properties",
    "apoc.coll.*",
    "apoc.map.*",
    "apoc.text.*",
    "gds.similarity.*",
    "gds.util.asNode",
    "gds.util.asNodes",
    "gds.version",
)
#: Cypher's built-in functions that have a namespace.
BUILTIN_FUNCTIONS = (
    "date.*",
    "datetime.*",
    "localdatetime.*",
    "localtime.*",
    "time.*",
    "duration.*",
    "point.distance",
    "point.withinBBox",
    "vector.similarity.*",
)
#: Operators of read plans (without ``@neo4j``, ``(All)``-style variants or ``Partitioned``).
READ_OPERATORS = frozenset(
    """
    ProduceResults EmptyResult DropResult Argument ArgumentTracker EmptyRow Optional NullifyMetadata
    AllNodesScan NodeByLabelScan NodeByIdSeek NodeByElementIdSeek NodeIndexSeek NodeUniqueIndexSeek
    NodeIndexSeekByRange NodeUniqueIndexSeekByRange NodeIndexContainsScan NodeIndexEndsWithScan NodeIndexScan
    MultiNodeIndexSeek AssertingMultiNodeIndexSeek AssertingMultiRelationshipIndexSeek
    IntersectionNodeByLabelsScan SubtractionNodeByLabelsScan UnionNodeByLabelsScan DynamicLabelNodeLookup
    DirectedRelationshipIndexScan UndirectedRelationshipIndexScan DirectedRelationshipIndexSeek
    UndirectedRelationshipIndexSeek DirectedRelationshipIndexSeekByRange UndirectedRelationshipIndexSeekByRange
    DirectedRelationshipIndexContainsScan UndirectedRelationshipIndexContainsScan
    DirectedRelationshipIndexEndsWithScan UndirectedRelationshipIndexEndsWithScan
    DirectedRelationshipByIdSeek UndirectedRelationshipByIdSeek DirectedRelationshipByElementIdSeek
    UndirectedRelationshipByElementIdSeek DirectedAllRelationshipsScan UndirectedAllRelationshipsScan
    DirectedRelationshipTypeScan UndirectedRelationshipTypeScan DirectedUnionRelationshipTypesScan
    UndirectedUnionRelationshipTypesScan DynamicDirectedRelationshipTypeLookup
    DynamicUndirectedRelationshipTypeLookup
    Expand OptionalExpand VarLengthExpand BFSPruningVarLengthExpand Repeat Trail ShortestPath
    StatefulShortestPath ProjectEndpoints AssertSameNode AssertSameRelationship
    Apply SemiApply AntiSemiApply SelectOrSemiApply SelectOrAntiSemiApply LetSemiApply LetAntiSemiApply
    LetSelectOrSemiApply LetSelectOrAntiSemiApply ConditionalApply AntiConditionalApply RollUpApply
    Filter Limit ExhaustiveLimit Skip Sort PartialSort Top PartialTop Union OrderedUnion Unwind Projection
    Eager EagerAggregation Aggregation OrderedAggregation Distinct OrderedDistinct
    NodeCountFromCountStore RelationshipCountFromCountStore CacheProperties
    ValueHashJoin NodeHashJoin NodeLeftOuterHashJoin NodeRightOuterHashJoin CartesianProduct
    TriadicSelection TriadicBuild TriadicFilter ProcedureCall
    """.split()  # noqa: SIM905 (a list of a hundred quoted names reads worse)
)
#: Words that may stand before "(" without being a function call.
_NOT_CALLS = frozenset(
    {"MATCH", "OPTIONAL", "WHERE", "AND", "OR", "XOR", "NOT", "IN", "RETURN", "WITH", "UNWIND", "CALL", "DISTINCT"}
    | {"THEN", "ELSE", "WHEN", "CASE", "BY", "SKIP", "LIMIT", "OFFSET", "CONTAINS", "IS", "AS", "FILTER", "LET"}
    | {"UNION", "ALL", "YIELD", "USING", "ON", "SHORTEST", "ANY", "EXISTS", "COUNT", "COLLECT"}
)
_PATH_FUNCTIONS = frozenset({"shortestpath", "allshortestpaths"})  # patterns, not in SHOW FUNCTIONS

_TOKEN = re.compile(
    r"""(?P<ws>\s+)
      | (?P<comment>//[^\n]*|/\*.*?\*/)
      | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
      | (?P<quoted>`(?:[^`]|``)*`)
      | (?P<param>\$(?:\w+|`(?:[^`]|``)*`))
      | (?P<number>0[xX][0-9a-fA-F_]+|0o[0-7_]+|\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?)
      | (?P<word>[^\W\d]\w*)
      | (?P<punct>.)""",
    re.X | re.S,
)


class CypherRefused(WriteRefused):
    """The query is not a plain read of the graph; ``code`` is ``write_refused`` for a write,
    ``cypher_refused`` for anything else off the allow-lists."""

    def __init__(self, message: str, code: str = "cypher_refused") -> None:
        super().__init__(message)
        self.code = code


_WRITES = frozenset({"CREATE", "MERGE", "SET", "DELETE", "DETACH", "NODETACH", "REMOVE", "FOREACH", "INSERT"})


def tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) of every token but white space and comments; an unterminated string, quoted
    name or comment is refused (the server would read the rest differently from us)."""
    out = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "punct"
        value = m.group()
        if kind in ("ws", "comment"):
            continue
        if kind == "punct" and (value in "'\"`" or text.startswith("/*", m.start())):
            raise CypherRefused("refused: an unterminated string, quoted name or comment")
        out.append((kind, value))
    return out


def _name(toks: list[tuple[str, str]], i: int) -> tuple[str, int]:
    """The dotted name starting at token i (quoted parts unquoted), and the index after it."""
    parts = []
    while i < len(toks) and toks[i][0] in ("word", "quoted"):
        kind, value = toks[i]
        parts.append(value[1:-1].replace("``", "`") if kind == "quoted" else value)
        if i + 2 < len(toks) and toks[i + 1] == ("punct", ".") and toks[i + 2][0] in ("word", "quoted"):
            i += 2
            continue
        i += 1
        break
    return ".".join(parts), i


def function_allowed(name: str) -> bool:
    if "." not in name:
        return True  # Neo4j keeps the root namespace for its own functions
    return any(fnmatchcase(name, p) for p in (*BUILTIN_FUNCTIONS, *ALLOWED_FUNCTIONS))


def check_text(cypher: str) -> None:
    """Refuse (:class:`CypherRefused`) anything but one read statement of allowed clauses, procedures
    and functions. Runs nothing."""
    toks = tokens(cypher)
    if not toks:
        raise CypherRefused("refused: the query is empty")
    allowed = "MATCH, OPTIONAL MATCH, WHERE, WITH, RETURN, ORDER BY, SKIP, LIMIT, UNWIND, UNION, CALL { }"
    i = 0
    while i < len(toks):
        kind, value = toks[i]
        before = toks[i - 1][1] if i else ""
        if kind == "punct" and value == ";":
            raise CypherRefused("refused: one statement only")
        if kind not in ("word", "quoted") or before in (".", ":", "$"):
            i += 1
            continue
        upper = value.upper() if kind == "word" else ""
        after = toks[i + 1][1] if i + 1 < len(toks) else ""
        if upper in CLAUSE_KEYWORDS and upper not in ALLOWED_CLAUSES and after not in (":", "."):
            code = "write_refused" if upper in _WRITES else "cypher_refused"
            what = "writes data" if code == "write_refused" else f"uses {upper}, which is not a read of the graph"
            raise CypherRefused(f"refused: this statement {what}; text-to-Cypher runs only {allowed}", code)
        if upper == "CALL" and i + 1 < len(toks) and toks[i + 1][0] in ("word", "quoted"):
            proc, i = _name(toks, i + 1)
            if proc not in ALLOWED_PROCEDURES:
                raise CypherRefused(
                    f"refused: procedure {proc} is not on the allow-list ({', '.join(sorted(ALLOWED_PROCEDURES))})"
                )
            continue
        name, j = _name(toks, i)
        called = j < len(toks) and toks[j] == ("punct", "(") and upper not in _NOT_CALLS
        if called and name.lower() not in _PATH_FUNCTIONS and not function_allowed(name):
            raise CypherRefused(f"refused: function {name} is not on the allow-list")
        i = j


def _operators(plan: dict[str, Any]) -> list[tuple[str, str]]:
    out = [(plan.get("operatorType", ""), str(plan.get("args", {}).get("Details", "")))]
    for child in plan.get("children", []):
        out.extend(_operators(child))
    return out


def operator_name(raw: str) -> str:
    """``Expand(All)@neo4j`` → ``Expand``; ``PartitionedAllNodesScan`` → ``AllNodesScan``."""
    return raw.split("@")[0].split("(")[0].removeprefix("Partitioned")


def check_plan(query_type: str | None, plan: dict[str, Any] | None) -> None:
    """Refuse unless the planner's reading (``EXPLAIN``) is a read of allowed operators and procedures."""
    if query_type != "r":
        what = {"w": "writes data", "rw": "reads and writes data", "s": "changes the schema"}.get(query_type or "")
        raise CypherRefused(
            f"refused: the planner says this statement {what or f'is of type {query_type!r}'}", "write_refused"
        )
    for raw, details in _operators(plan or {}):
        op = operator_name(raw)
        if op not in READ_OPERATORS:
            raise CypherRefused(f"refused: the plan has operator {op}, which is not a plain read of the graph")
        if op == "ProcedureCall":
            proc = details.split("(")[0].strip()
            if proc not in ALLOWED_PROCEDURES:
                raise CypherRefused(f"refused: procedure {proc} is not on the allow-list")
