// HippoRAG 2 retrieval (graphstrata/retrieval/hipporag.py).
//
// HippoRAG 2's graph (arXiv:2502.14802 §3.1): passage nodes joined to the phrase (entity) nodes
// they contain (MENTIONS from chunks: the KG's provenance), relation edges between entities
// (RELATED) and synonym edges (SYNONYM, entity resolution). The retriever keeps it in memory as a
// sparse matrix (graphstrata/walkgraph.py), read again when the graph's `updated_at` moves.

// name: passage_graph_nodes
CALL () {
  MATCH (c:Chunk) WHERE c.id IS NOT NULL RETURN c.id AS id, 'Chunk' AS label
  UNION ALL
  MATCH (e:Entity) WHERE e.id IS NOT NULL RETURN e.id AS id, 'Entity' AS label
}
RETURN id, label, false AS own_text;

// name: passage_graph_edges
CALL () {
  MATCH (a:Chunk)-[:MENTIONS]->(b:Entity) RETURN a.id AS a, b.id AS b, 'MENTIONS' AS type
  UNION ALL
  MATCH (a:Entity)-[r:RELATED|SYNONYM]->(b:Entity) RETURN a.id AS a, b.id AS b, type(r) AS type
}
WITH a, b, type WHERE a IS NOT NULL AND b IS NOT NULL
RETURN a, b, type;
