// The Cypher projections of graphstrata/gds.py. Catalogue operations, native projections, memory
// estimates and algorithms go through the graphdatascience client's own endpoints; these are the
// queries it runs for projections that a native projection cannot express.

// name: ordered_ids
// The ids of the nodes project_ordered projects (graphstrata/gds.py ranks them).
MATCH (n:$any($labels)) WHERE NOT $embedding OR n.embedding IS NOT NULL
RETURN n.id AS id;

// name: project_ordered
// The nodes with $labels (those with an `embedding` when $embedding) and the relationships of $types
// between them (undirected) — of those $rank holds: all of them, or a sample (gds.py project_ordered's
// `limit`) — projected in the order $rank (id -> position) gives, then relationships by
// their ends' positions: GDS numbers nodes in the order it receives them, and seeded algorithms
// (Leiden, K-means, KNN, sampled betweenness) depend on that numbering. The store's own order changes
// whenever nodes are re-created (augment re-creates Attributes and HighLevels) or ingested in another
// order, so a native projection would make re-runs on an unchanged graph differ.
// Run by the client's Cypher projection (`gds.graph.project.cypher`), which wants the aggregation as
// the one column returned.
CALL () {
  MATCH (n:$any($labels)) WHERE (NOT $embedding OR n.embedding IS NOT NULL) AND $rank[n.id] IS NOT NULL
  RETURN n AS source, null AS target, $rank[n.id] AS k1, -1 AS k2
  UNION ALL
  MATCH (a:$any($labels))-[r:$any($types)]->(b:$any($labels))
  WHERE (NOT $embedding OR (a.embedding IS NOT NULL AND b.embedding IS NOT NULL))
    AND $rank[a.id] IS NOT NULL AND $rank[b.id] IS NOT NULL
  RETURN a AS source, b AS target, $rank[a.id] AS k1, $rank[b.id] AS k2
}
WITH source, target ORDER BY target IS NOT NULL, k1, k2
RETURN gds.graph.project($name, source, target,
         CASE WHEN $embedding THEN {sourceNodeProperties: {embedding: source.embedding},
                                    targetNodeProperties: CASE WHEN target IS NULL THEN null ELSE {embedding: target.embedding} END}
              ELSE {} END,
         {undirectedRelationshipTypes: ['*']});

// name: graph_info
// One projection's size and creation time, without the rest of what the catalogue lists: a Cypher
// projection's configuration holds its parameters (project_ordered's $rank, one entry per node), which
// the client's own listing reads into this process (1 GB for NodeRAG's G1 at 10,000 passages).
CALL gds.graph.list($name) YIELD nodeCount, relationshipCount, creationTime
RETURN nodeCount AS node_count, relationshipCount AS relationship_count, creationTime AS creation_time;

// name: project_ordered_remote
// project_ordered for an Aura Graph Analytics session (GRAPHSTRATA_GDS_BACKEND=aura_sessions): the
// same rows in the same order, streamed to the session by the client's remote projection; the
// relationships are typed REL, which the client makes undirected (undirected_relationship_types).
// Whether a session numbers the nodes in the order received is not tested here (no Aura session).
CALL () {
  MATCH (n:$any($labels)) WHERE (NOT $embedding OR n.embedding IS NOT NULL) AND $rank[n.id] IS NOT NULL
  RETURN n AS source, null AS target, $rank[n.id] AS k1, -1 AS k2
  UNION ALL
  MATCH (a:$any($labels))-[r:$any($types)]->(b:$any($labels))
  WHERE (NOT $embedding OR (a.embedding IS NOT NULL AND b.embedding IS NOT NULL))
    AND $rank[a.id] IS NOT NULL AND $rank[b.id] IS NOT NULL
  RETURN a AS source, b AS target, $rank[a.id] AS k1, $rank[b.id] AS k2
}
WITH source, target ORDER BY target IS NOT NULL, k1, k2
RETURN gds.graph.project.remote(source, target,
         CASE WHEN $embedding THEN {sourceNodeProperties: {embedding: source.embedding},
                                    targetNodeProperties: CASE WHEN target IS NULL THEN null ELSE {embedding: target.embedding} END,
                                    relationshipType: 'REL'}
              ELSE {relationshipType: 'REL'} END);

// name: project_native_remote
// A native projection (the nodes with $labels, the relationships of $types among them) as an Aura
// session's remote projection, which has no relationship aggregation: with $single (the native
// UNDIRECTED + SINGLE projection, e.g. core_chunks') each pair joined by a relationship of a type, in
// either direction, is sent once, from the end with the smaller id(), and the client makes the types
// undirected; otherwise every relationship is sent as stored.
CALL () {
  MATCH (n:$any($labels))
  RETURN n AS source, null AS target, null AS type
  UNION ALL
  MATCH (a:$any($labels))-[r:$any($types)]->(b:$any($labels)) WHERE NOT $single
  RETURN a AS source, b AS target, type(r) AS type
  UNION ALL
  MATCH (a:$any($labels))-[r:$any($types)]-(b:$any($labels)) WHERE $single AND id(a) <= id(b)
  RETURN DISTINCT a AS source, b AS target, type(r) AS type
}
RETURN gds.graph.project.remote(source, target, CASE WHEN type IS NULL THEN {} ELSE {relationshipType: type} END);

// name: procedure_outputs
// The columns a procedure yields, in order (graphstrata/gds.py reads GDS streams as one list value).
SHOW PROCEDURES YIELD name, returnDescription
WHERE name = $name
RETURN [r IN returnDescription | r.name] AS names;
