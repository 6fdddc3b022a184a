// SG-RAG retrieval (graphstrata/retrieval/sgrag.py).

// name: exact_entities
// Entity normalisation, exact step: entities whose normalized name equals a query node's.
UNWIND $keys AS key
MATCH (e:Entity)
WHERE e.normalized = key
RETURN key, e.id AS id, e.name AS name, e.normalized AS normalized;

// name: similar_entities
// Entity normalisation, vector step (the paper's FAISS lookup): the $k entities nearest by name
// embedding, from $candidates (HNSW's beam width); `cosine` is the cosine, `score` the index's (1+cos)/2.
CALL db.index.vector.queryNodes('entity_embedding', $candidates, $vector) YIELD node, score
WHERE node.id IS NOT NULL
WITH node, score ORDER BY score DESC LIMIT $k
RETURN node.id AS id, node.name AS name, node.normalized AS normalized, score, 2 * score - 1 AS cosine;

// name: nearest_entities
// The same lookup for several query nodes at once ($rows: {key, vector}): each one's nearest entity.
UNWIND $rows AS r
CALL (r) {
  CALL db.index.vector.queryNodes('entity_embedding', $candidates, r.vector) YIELD node, score
  WITH node, score WHERE node.id IS NOT NULL
  RETURN node, score ORDER BY score DESC LIMIT 1
}
RETURN r.key AS key, node.id AS id, node.name AS name, node.normalized AS normalized, score, 2 * score - 1 AS cosine;

// name: expand
// One hop of the candidate-subgraph expansion: RELATED neighbours of the frontier entities, the most
// relevant first (linked to most frontier entities, then by summed edge weight; id for ties), so a
// cap ($limit) keeps what an exact match most likely needs.
MATCH (a:Entity)-[r:RELATED]-(b:Entity)
WHERE a.id IN $frontier AND b.id IS NOT NULL AND NOT b.id IN $seen
WITH b, count(DISTINCT a) AS links, sum(coalesce(r.weight, 1)) AS weight
RETURN b.id AS id
ORDER BY links DESC, weight DESC, id
LIMIT $limit;

// name: induced
// The candidate subgraph's entities (an entity a deletion is taking apart, its name gone, is none).
MATCH (e:Entity)
WHERE e.id IN $ids AND e.name IS NOT NULL
RETURN e.id AS id, e.name AS name, coalesce(e.normalized, toLower(e.name)) AS normalized,
       coalesce(e.type, '') AS type, coalesce(e.description, '') AS description;

// name: induced_edges
// The RELATED edges among the candidate subgraph's entities, at most $limit: those at the anchors
// first, then the heaviest (a hub such as a year brings thousands, and matching grows with their
// square), then by their ends and predicate for ties.
MATCH (e:Entity)-[r:RELATED]->(b:Entity)
WHERE e.id IN $ids AND b.id IN $ids AND e.name IS NOT NULL AND b.name IS NOT NULL
WITH e.id AS src, b.id AS dst, coalesce(r.predicate, 'related') AS predicate, r
RETURN src, dst, predicate, coalesce(r.description, '') AS description, coalesce(r.weight, 1.0) AS weight
ORDER BY (src IN $anchors OR dst IN $anchors) DESC, weight DESC, src, dst, predicate
LIMIT $limit;

// name: entity_chunks
// Source chunks of entities (MENTIONS), for provenance and Recall@k (sgrag_context.py orders them).
UNWIND $ids AS id
MATCH (c:Chunk)-[:MENTIONS]->(e:Entity {id: id})
WHERE c.id IS NOT NULL
WITH id, c ORDER BY c.id
RETURN id, collect(c.id) AS chunks, collect(DISTINCT c.doc_title) AS titles;

// name: relation_chunks
// Source chunks of matched edges: the nodalized Relation(s) behind a RELATED edge (HAS_RELATION).
UNWIND $edges AS edge
MATCH (s:Entity {id: edge.src})-[:SUBJECT_OF]->(r:Relation)-[:OBJECT]->(o:Entity {id: edge.dst})
WHERE r.predicate = edge.predicate AND r.id IS NOT NULL
OPTIONAL MATCH (c:Chunk)-[:HAS_RELATION]->(r)
WITH edge, r, c ORDER BY r.id, c.id
RETURN edge.key AS key, collect(DISTINCT r.id) AS relations, collect(DISTINCT c.id) AS chunks,
       collect(DISTINCT c.doc_title) AS titles;

// name: near_chunks
// The $k chunks nearest the question by the vector index (over-fetched, as every lookup), as cosines:
// how sgrag_context.py orders a subgraph's source chunks without scoring every one of them.
CALL db.index.vector.queryNodes('chunk_embedding', $candidates, $vector) YIELD node, score
WITH node.id AS id, score WHERE id IS NOT NULL
WITH id, score ORDER BY score DESC LIMIT $k
RETURN id, 2 * score - 1 AS cosine;

// name: source_passages
// SG-RAG's source passages (sgrag_context.py): the chunks $ids, nearest the question first, at most
// $limit (properties read once, as in retrieval.vector_chunks).
UNWIND $ids AS id
MATCH (c:Chunk {id: id})
WITH id, c.text AS text, coalesce(c.doc_title, '') AS title,
     // vector.similarity.cosine is (1 + cos) / 2: the score is the cosine (docs/methods.md, vector scores)
     CASE WHEN c.embedding IS NULL THEN -1.0 ELSE 2 * vector.similarity.cosine(c.embedding, $vector) - 1 END AS score
WHERE text IS NOT NULL
RETURN id, text, title, score ORDER BY score DESC, id LIMIT $limit;

// name: eval_answers
// bench/sgrag_eval.py: entities with at least $min relations to distinct neighbours (answer candidates
// for generated multi-constraint questions), each with its relations (out = the entity is the subject).
MATCH (a:Entity)-[r:RELATED]-(b:Entity)
WHERE a <> b
WITH a, b, collect(r)[0] AS r
WITH a, collect({id: b.id, name: b.name, predicate: r.predicate, out: startNode(r) = a}) AS rels
WHERE size(rels) >= $min
RETURN a.id AS id, a.name AS name, coalesce(a.type, '') AS type, rels
ORDER BY id;

// name: eval_gold
// bench/sgrag_eval.py: every entity satisfying all constraints {id, predicate, out} (the exact answer set),
// and the confusable candidates: entities related to any constraint entity.
CALL {
  MATCH (x:Entity)
  WHERE all(c IN $constraints WHERE
        (c.out AND EXISTS { (x)-[:RELATED {predicate: c.predicate}]->(:Entity {id: c.id}) }) OR
        (NOT c.out AND EXISTS { (x)<-[:RELATED {predicate: c.predicate}]-(:Entity {id: c.id}) }))
  RETURN collect(DISTINCT x.name) AS gold
}
CALL {
  UNWIND $constraints AS c
  MATCH (:Entity {id: c.id})-[:RELATED]-(y:Entity)
  RETURN collect(DISTINCT y.name) AS candidates
}
RETURN gold, candidates;

// name: corpus_stars
// Training stars of the dominance model (SG-RAG §4.2): every entity with RELATED neighbours, labelled as
// the matcher labels it (normalized name), with its distinct neighbours' labels.
MATCH (e:Entity)-[:RELATED]-(b:Entity)
WHERE b <> e AND e.name IS NOT NULL AND b.name IS NOT NULL
WITH e, collect(DISTINCT b) AS nbrs
RETURN coalesce(e.normalized, toLower(e.name)) AS label,
       [b IN nbrs | coalesce(b.normalized, toLower(b.name))] AS leaves
ORDER BY e.id;

// name: graph_state
// What a trained dominance model is keyed by: entity and RELATED counts (count store) and the meta stamp
// every graph-changing write bumps.
CALL () { MATCH (e:Entity) RETURN count(e) AS entities }
CALL () { MATCH ()-[r:RELATED]->() RETURN count(r) AS related }
OPTIONAL MATCH (m:GraphStrata {id: 'meta'})
RETURN entities, related, toString(m.updated_at) AS updated;
