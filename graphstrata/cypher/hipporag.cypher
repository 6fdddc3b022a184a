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

// name: seeds
// The passages nearest the question (dense scores, HippoRAG 2's passage seeds), the entities of
// the nearest one with the number of passages that mention each (node specificity), and the
// graph's version (when it last changed), in one round trip.
CALL db.index.vector.queryNodes('chunk_embedding', $candidates, $vector) YIELD node, score
WHERE node.id IS NOT NULL
WITH node, score ORDER BY score DESC LIMIT $k
WITH collect({id: node.id, score: score}) AS passages, head(collect(node)) AS best
CALL (best) {
  OPTIONAL MATCH (best)-[:MENTIONS]->(e:Entity)
  WITH e WHERE e.id IS NOT NULL AND e.name IS NOT NULL
  RETURN collect({id: e.id, name: e.name, chunks: COUNT { (e)<-[:MENTIONS]-(:Chunk) }}) AS feedback
}
OPTIONAL MATCH (m:GraphStrata {id: 'meta'})
RETURN passages, feedback, m.updated_at AS version;
