// HippoRAG 2 retrieval (graphstrata/retrieval/hipporag.py).

// name: project_passage_graph
// HippoRAG 2's graph (arXiv:2502.14802 §3.1): passage nodes joined to the phrase (entity) nodes
// they contain (MENTIONS from chunks: the KG's provenance), relation edges between entities
// (RELATED) and synonym edges (SYNONYM, entity resolution). One undirected GDS graph whose
// relationship types stay apart, so a query can walk without the relation edges.
CALL () {
  MATCH (a:Chunk)-[r:MENTIONS]->(b:Entity)
  RETURN a AS source, b AS target, 'MENTIONS' AS type
  UNION ALL
  MATCH (a:Entity)-[r:RELATED|SYNONYM]->(b:Entity)
  RETURN a AS source, b AS target, type(r) AS type
  UNION ALL
  MATCH (a) WHERE a:Chunk OR a:Entity
  RETURN a AS source, null AS target, null AS type
}
WITH gds.graph.project($name, source, target,
       {sourceNodeLabels: labels(source), targetNodeLabels: labels(target), relationshipType: type},
       {undirectedRelationshipTypes: ['*']}) AS g
RETURN g.graphName AS name, g.nodeCount AS nodes, g.relationshipCount AS rels;

// name: seeds
// The passages nearest the question (dense scores, HippoRAG 2's passage seeds) and the entities
// of the nearest one with the number of passages that mention each (for node specificity).
CALL db.index.vector.queryNodes('chunk_embedding', $candidates, $vector) YIELD node, score
WHERE node.id IS NOT NULL
WITH node, score ORDER BY score DESC LIMIT $k
WITH collect({id: node.id, score: score}) AS passages, head(collect(node)) AS best
CALL (best) {
  OPTIONAL MATCH (best)-[:MENTIONS]->(e:Entity)
  WITH e WHERE e IS NOT NULL
  RETURN collect({id: e.id, name: e.name, chunks: COUNT { (e)<-[:MENTIONS]-(:Chunk) }}) AS feedback
}
RETURN passages, feedback;

// name: ppr
// Personalized PageRank from weighted passage and entity seeds ($chunks / $entities: [id, weight]
// pairs, looked up by label so the id indexes are used); the passages ranked by their probability.
CALL () {
  UNWIND $chunks AS s MATCH (n:Chunk {id: s[0]}) RETURN collect([n, s[1]]) AS a
}
CALL () {
  UNWIND $entities AS s MATCH (n:Entity {id: s[0]}) RETURN collect([n, s[1]]) AS b
}
CALL gds.pageRank.stream($graph, {sourceNodes: a + b, dampingFactor: $damping, maxIterations: $iterations,
                                  tolerance: 0.0, concurrency: $concurrency, scaler: 'NONE',
                                  relationshipTypes: $types})
YIELD nodeId, score
WHERE score > 0
WITH nodeId, score ORDER BY score DESC LIMIT $scan
WITH gds.util.asNode(nodeId) AS n, score
WHERE n:Chunk AND n.text IS NOT NULL
RETURN n.id AS id, coalesce(n.doc_title, '') AS title, n.text AS text, score
ORDER BY score DESC LIMIT $limit;
