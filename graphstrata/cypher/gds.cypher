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

