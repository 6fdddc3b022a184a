// NodeRAG retrieval (graphstrata/retrieval/noderag.py).

// name: project_heterograph
// The heterograph G of NodeRAG §2 as one undirected GDS graph: T-S (HAS_UNIT), S-N (MENTIONS from
// semantic units; chunk mentions are the KG's provenance, not a NodeRAG edge), N-R (SUBJECT_OF,
// OBJECT), N-A (HAS_ATTRIBUTE), H-S/A (GROUPS), O-H (TITLES), the semantic (HNSW) edges, entity
// resolution's N-N SYNONYM links, and T-R (HAS_RELATION): the paper's S-R edge (§2.2) taken to the
// chunk the relation was read from, which is what connects relations to text when the extractor
// writes no semantic units (bring-your-own triples) or units that are the chunk's own sentences.
// Every node of these types is projected, isolated ones included, so any entry point can seed PPR.
CALL () {
  MATCH (a)-[r:HAS_UNIT|MENTIONS|SUBJECT_OF|OBJECT|HAS_ATTRIBUTE|GROUPS|TITLES|SEMANTIC|SYNONYM|HAS_RELATION]->(b)
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
// Entry points in one round trip (§2.5 dual search), apart from the query entities (linked to N by
// retrieval/linking.py): accurate search of the query's names on O (full-text phrase match on
// overview titles), and similarity search as one top-k over all rich nodes S, A, H, T (the paper's
// single HNSW; cosine scores of one embedder are comparable across the per-label indexes, so
// merging their top-k lists is exact); and, as HippoRAG 2 matches the question against facts, the
// $fact_k relations nearest to it as further entry points.
CALL () {
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
  UNION
  WITH $fact_k AS k WHERE k > 0
  CALL db.index.vector.queryNodes('relation_embedding', $fact_candidates, $vector) YIELD node, score
  WHERE node.id IS NOT NULL
  WITH node, score ORDER BY score DESC LIMIT $fact_k
  RETURN node, 'fact' AS via, score
}
RETURN node.id AS id, labels(node)[0] AS label, via, score;

// name: ppr
// Shallow personalized PageRank from the entry points (NodeRAG §2.5, Appendix C.4); $sources are
// [id, weight] pairs, the start vector's share of each entry point.
UNWIND $sources AS s
MATCH (n {id: s[0]})
WHERE n:Entity OR n:Overview OR n:SemanticUnit OR n:Attribute OR n:HighLevel OR n:Chunk OR n:Relation
WITH collect([n, s[1]]) AS src
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
// own_text: the node says something its passages do not (a model wrote it); spaCy's sentences,
// lemma-level triples and the no-LLM summaries only copy or abridge the text.
RETURN n.id AS id, labels(n)[0] AS label, coalesce(n.text, '') AS text, coalesce(n.doc_title, '') AS title, chunks,
       NOT n:Chunk AND NOT n:Relation AND n.extractor = 'llm' AS own_text;
