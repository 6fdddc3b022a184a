// NodeRAG retrieval (graphstrata/retrieval/noderag.py).

// name: heterograph_nodes
// The heterograph G of NodeRAG §2, walked in memory (graphstrata/walkgraph.py): every node of its
// types, isolated ones included, so any entry point can seed PPR. own_text: the node says something
// its passages do not (a model wrote it); spaCy's sentences, lemma-level triples and the no-LLM
// summaries only copy or abridge the text.
MATCH (a)
WHERE (a:Entity OR a:SemanticUnit OR a:Relation OR a:Attribute OR a:HighLevel OR a:Overview OR a:Chunk)
  AND a.id IS NOT NULL
RETURN a.id AS id, labels(a)[0] AS label,
       (a:SemanticUnit OR a:Attribute OR a:HighLevel) AND coalesce(a.extractor = 'llm', false) AS own_text;

// name: heterograph_edges
// G's edges, undirected in the walk: T-S (HAS_UNIT), S-N (MENTIONS from semantic units), N-R (SUBJECT_OF, OBJECT), N-A
// (HAS_ATTRIBUTE), H-S/A (GROUPS), O-H (TITLES), the semantic (HNSW) edges, entity resolution's
// N-N SYNONYM links, and T-R (HAS_RELATION): the paper's S-R edge (§2.2) taken to the chunk the
// relation was read from, which is what connects relations to text when the extractor writes no
// semantic units (bring-your-own triples) or units that are the chunk's own sentences. Chunk
// mentions (the KG's provenance, not a NodeRAG edge) come as CHUNK_MENTIONS, which the walk leaves
// out and the feedback entities read.
MATCH (a)-[r:HAS_UNIT|MENTIONS|SUBJECT_OF|OBJECT|HAS_ATTRIBUTE|GROUPS|TITLES|SEMANTIC|SYNONYM|HAS_RELATION]->(b)
WHERE a.id IS NOT NULL AND b.id IS NOT NULL
RETURN a.id AS a, b.id AS b, CASE WHEN a:Chunk AND r:MENTIONS THEN 'CHUNK_MENTIONS' ELSE type(r) END AS type,
       null AS weight;

// name: retrievable
// Text and source chunks of the retrievable nodes that stand as items of their own (a model wrote
// them): S and R come from their chunk; A from the chunks of its entity's semantic units; H from
// its grouped S. (S and R that copy their passage are read in it: retrieval.chunks_by_id.)
UNWIND $ids AS id
MATCH (n {id: id}) WHERE n:SemanticUnit OR n:Attribute OR n:HighLevel OR n:Relation
CALL (n) {
  MATCH (c:Chunk)-[:HAS_UNIT|HAS_RELATION]->(n) RETURN c.id AS cid
  UNION
  MATCH (n)<-[:HAS_ATTRIBUTE]-(:Entity)<-[:MENTIONS]-(:SemanticUnit)<-[:HAS_UNIT]-(c:Chunk) RETURN c.id AS cid
  UNION
  MATCH (n)-[:GROUPS]->()<-[:HAS_UNIT]-(c:Chunk) RETURN c.id AS cid
}
WITH n, collect(cid)[..5] AS chunks
RETURN n.id AS id, labels(n)[0] AS label, coalesce(n.text, '') AS text, chunks;
