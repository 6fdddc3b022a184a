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
// Weights as HippoRAG 2's graph has them: a synonym edge its similarity, a relation edge the number of
// chunks asserting it, a passage-phrase edge 1.
CALL () {
  MATCH (a:Chunk)-[:MENTIONS]->(b:Entity) RETURN a.id AS a, b.id AS b, 'MENTIONS' AS type, 1.0 AS weight
  UNION ALL
  MATCH (a:Entity)-[r:RELATED|SYNONYM]->(b:Entity)
  RETURN a.id AS a, b.id AS b, type(r) AS type, CASE type(r) WHEN 'SYNONYM' THEN r.score ELSE r.weight END AS weight
}
WITH a, b, type, weight WHERE a IS NOT NULL AND b IS NOT NULL
RETURN a, b, type, weight;

// name: query_facts
// HippoRAG 2's query-to-triple matching (§3.2): the $k facts (Relation nodes with a vector: an LLM's
// or the user's triples) nearest the question, and their subject and object entities, each with the
// best score of a fact it is in and its passage count (node specificity's |P_i|).
CALL db.index.vector.queryNodes('relation_embedding', $candidates, $vector) YIELD node, score
WITH node, score WHERE node.id IS NOT NULL
ORDER BY score DESC, node.id LIMIT $k
MATCH (e:Entity)-[:SUBJECT_OF|OBJECT]-(node) WHERE e.id IS NOT NULL
WITH e, max(score) AS score, collect(DISTINCT coalesce(node.text, node.id)) AS facts
RETURN e.id AS id, e.name AS name, score, facts, COUNT { (:Chunk)-[:MENTIONS]->(e) } AS chunks
ORDER BY score DESC, id;
