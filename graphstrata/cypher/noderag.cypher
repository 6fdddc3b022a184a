// NodeRAG retrieval (graphstrata/retrieval/noderag.py).

// name: project_heterograph
// The heterograph G of NodeRAG §2 as one undirected GDS graph: T-S (HAS_UNIT), S-N (MENTIONS from
// semantic units; chunk mentions are E2GraphRAG's index, not a NodeRAG edge), N-R (SUBJECT_OF,
// OBJECT), N-A (HAS_ATTRIBUTE), H-S/A (GROUPS), O-H (TITLES) and the semantic (HNSW) edges.
// Every node of these types is projected, isolated ones included, so any entry point can seed PPR.
CALL () {
  MATCH (a)-[r:HAS_UNIT|MENTIONS|SUBJECT_OF|OBJECT|HAS_ATTRIBUTE|GROUPS|TITLES|SEMANTIC]->(b)
  WHERE NOT (a:Chunk AND r:MENTIONS)
  RETURN a AS source, b AS target
  UNION
  MATCH (a)
  WHERE a:Entity OR a:SemanticUnit OR a:Relation OR a:Attribute OR a:HighLevel OR a:Overview OR a:Chunk
  RETURN a AS source, null AS target
}
WITH gds.graph.project($name, source, target, {}, {undirectedRelationshipTypes: ['*']}) AS g
RETURN g.graphName AS name, g.nodeCount AS nodes, g.relationshipCount AS rels;

// name: dual_search
// Entry points in one round trip (§2.5 dual search): accurate search of the query entities on N
// (normalised names) and O (full-text phrase match on overview titles), and similarity search as
// one top-k over all rich nodes S, A, H, T (the paper's single HNSW; cosine scores of one embedder
// are comparable across the per-label indexes, so merging their top-k lists is exact).
CALL () {
  MATCH (e:Entity) WHERE e.normalized IN $names
  RETURN e AS node, 'exact' AS via, 1.0 AS score
  UNION
  WITH $terms AS terms WHERE terms <> ''
  CALL db.index.fulltext.queryNodes('overview_title_fulltext', terms, {limit: $k}) YIELD node, score
  WHERE node.id IS NOT NULL
  RETURN node, 'exact' AS via, score
  UNION
  CALL () {
    UNWIND $indexes AS index
    CALL db.index.vector.queryNodes(index, $candidates, $vector) YIELD node, score
    WHERE node.id IS NOT NULL
    RETURN node, score ORDER BY score DESC LIMIT $k
  }
  RETURN node, 'similarity' AS via, score
}
RETURN node.id AS id, labels(node)[0] AS label, via, score;

// name: ppr
// Shallow personalized PageRank from the entry points (NodeRAG §2.5, Appendix C.4).
MATCH (n) WHERE n.id IN $sources AND (n:Entity OR n:Overview OR n:SemanticUnit OR n:Attribute OR n:HighLevel OR n:Chunk)
WITH collect(n) AS src
CALL gds.pageRank.stream($graph, {sourceNodes: src, dampingFactor: $damping, maxIterations: $iterations,
                                   tolerance: 0.0, concurrency: $concurrency, scaler: 'NONE'})
YIELD nodeId, score
WHERE score > 0
WITH gds.util.asNode(nodeId) AS n, score
RETURN n.id AS id, labels(n)[0] AS label, score
ORDER BY score DESC LIMIT $limit;

// name: retrievable
// Text and source chunks of retrievable nodes (T, S, A, H, R): a chunk is its own source; S and R
// come from their chunk; A from the chunks of its entity's semantic units; H from its grouped S.
UNWIND $ids AS id
MATCH (n {id: id}) WHERE n:Chunk OR n:SemanticUnit OR n:Attribute OR n:HighLevel OR n:Relation
CALL (n) {
  WITH n WHERE n:Chunk RETURN n.id AS cid
  UNION
  MATCH (c:Chunk)-[:HAS_UNIT|HAS_RELATION]->(n) RETURN c.id AS cid
  UNION
  MATCH (n)<-[:HAS_ATTRIBUTE]-(:Entity)<-[:MENTIONS]-(:SemanticUnit)<-[:HAS_UNIT]-(c:Chunk) RETURN c.id AS cid
  UNION
  MATCH (n)-[:GROUPS]->()<-[:HAS_UNIT]-(c:Chunk) RETURN c.id AS cid
}
WITH n, collect(cid)[..5] AS chunks
RETURN n.id AS id, labels(n)[0] AS label, coalesce(n.text, '') AS text, coalesce(n.doc_title, '') AS title, chunks;
