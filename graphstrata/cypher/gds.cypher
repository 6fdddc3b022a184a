// Graph Data Science catalogue operations used by graphstrata/gds.py.

// name: graph_info
CALL gds.graph.list($name) YIELD graphName, nodeCount, relationshipCount, creationTime
RETURN graphName AS name, nodeCount AS nodes, relationshipCount AS rels, creationTime AS created;

// name: graph_drop
CALL gds.graph.drop($name, false) YIELD graphName RETURN graphName;

// name: graph_list_prefix
CALL gds.graph.list() YIELD graphName WHERE graphName STARTS WITH $prefix RETURN graphName AS name;

// name: project_native
// A native projection: node and relationship projections as maps (see the GDS manual).
CALL gds.graph.project($name, $nodes, $rels, $config)
YIELD graphName, nodeCount, relationshipCount
RETURN graphName AS name, nodeCount AS nodes, relationshipCount AS rels;

// name: stale_since
// True when the graph changed after the projection was made.
MATCH (m:GraphStrata {id: 'meta'})
RETURN m.updated_at > $created AS stale;
