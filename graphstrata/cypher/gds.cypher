// Graph Data Science catalogue operations used by graphstrata/gds.py.

// name: graph_info
// The projection's size and whether the stored graph changed after it was made (one round trip:
// this runs before every query that uses a cached projection).
CALL gds.graph.list($name) YIELD graphName, nodeCount, relationshipCount, creationTime
OPTIONAL MATCH (m:GraphStrata {id: 'meta'})
RETURN graphName AS name, nodeCount AS nodes, relationshipCount AS rels, creationTime AS created,
       coalesce(m.updated_at > creationTime, false) AS stale;

// name: graph_drop
CALL gds.graph.drop($name, false) YIELD graphName RETURN graphName;

// name: graph_list_prefix
CALL gds.graph.list() YIELD graphName WHERE graphName STARTS WITH $prefix RETURN graphName AS name;

// name: project_native
// A native projection: node and relationship projections as maps (see the GDS manual).
CALL gds.graph.project($name, $nodes, $rels, $config)
YIELD graphName, nodeCount, relationshipCount
RETURN graphName AS name, nodeCount AS nodes, relationshipCount AS rels;


// name: ordered_ids
// The ids of the nodes project_ordered projects (graphstrata/gds.py ranks them).
MATCH (n:$any($labels)) WHERE NOT $embedding OR n.embedding IS NOT NULL
RETURN n.id AS id;

// name: project_ordered
// The nodes with $labels (those with an `embedding` when $embedding) and the relationships of $types
// between them (undirected), projected in the order $rank (id -> position) gives, then relationships by
// their ends' positions: GDS numbers nodes in the order it receives them, and seeded algorithms
// (Leiden, K-means, KNN, sampled betweenness) depend on that numbering. The store's own order changes
// whenever nodes are re-created (augment re-creates Attributes and HighLevels) or ingested in another
// order, so a native projection would make re-runs on an unchanged graph differ.
CALL () {
  MATCH (n:$any($labels)) WHERE NOT $embedding OR n.embedding IS NOT NULL
  RETURN n AS source, null AS target, $rank[n.id] AS k1, -1 AS k2
  UNION ALL
  MATCH (a:$any($labels))-[r:$any($types)]->(b:$any($labels))
  WHERE NOT $embedding OR (a.embedding IS NOT NULL AND b.embedding IS NOT NULL)
  RETURN a AS source, b AS target, $rank[a.id] AS k1, $rank[b.id] AS k2
}
WITH source, target ORDER BY target IS NOT NULL, k1, k2
WITH gds.graph.project($name, source, target,
       CASE WHEN $embedding THEN {sourceNodeProperties: {embedding: source.embedding},
                                  targetNodeProperties: CASE WHEN target IS NULL THEN null ELSE {embedding: target.embedding} END}
            ELSE {} END,
       {undirectedRelationshipTypes: ['*']}) AS g
RETURN g.graphName AS name, g.nodeCount AS nodes, g.relationshipCount AS rels;
