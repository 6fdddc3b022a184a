// KET-RAG retrieval (graphstrata/retrieval/ketrag.py).

// name: seed_entities
// Algorithm 2, line 1: the entities most similar to the query, matched by the embedding of their
// description where an LLM or the user wrote one (GraphRAG's local search), else by their name's.
CALL () {
  CALL db.index.vector.queryNodes('entity_description_embedding', $candidates, $vector) YIELD node, score
  RETURN node, score, 'description' AS matched_by
  UNION
  CALL db.index.vector.queryNodes('entity_embedding', $candidates, $vector) YIELD node, score
  WITH node, score WHERE node.description_embedding IS NULL
  RETURN node, score, 'name' AS matched_by
}
WITH node, score, matched_by WHERE node.id IS NOT NULL
ORDER BY score DESC, node.id LIMIT $k
RETURN node.id AS id, node.name AS name, coalesce(node.description, '') AS description, score, matched_by;

// name: seed_entities_by_name
// seed_entities on a graph that has no entity_description_embedding index yet (built before it).
CALL db.index.vector.queryNodes('entity_embedding', $candidates, $vector) YIELD node, score
WITH node, score WHERE node.id IS NOT NULL
ORDER BY score DESC, node.id LIMIT $k
RETURN node.id AS id, node.name AS name, coalesce(node.description, '') AS description, score, 'name' AS matched_by;

// name: seed_relations
// Algorithm 2, line 2: relations adjacent to the seeds, those joining two seeds first, then by
// similarity to the query. Shown as a triple "(subject; predicate; object)", never as prose (the
// no-LLM extractor's predicates are lemmas), with a description a model or the user wrote.
MATCH (s:Entity)-[:SUBJECT_OF|OBJECT]-(r:Relation)
WHERE s.id IN $seeds AND r.id IS NOT NULL AND r.text IS NOT NULL
WITH r, count(DISTINCT s) AS seeds
RETURN r.id AS id,
       CASE WHEN r.subject IS NULL OR r.predicate IS NULL OR r.object IS NULL THEN r.text
            ELSE '(' + r.subject + '; ' + r.predicate + '; ' + r.object + ')' +
                 CASE WHEN r.description IS NOT NULL AND coalesce(r.extractor, '') <> 'spacy'
                      THEN ': ' + r.description ELSE '' END
       END AS text,
       seeds,
       CASE WHEN r.embedding IS NULL THEN 0.0 ELSE vector.similarity.cosine(r.embedding, $vector) END AS score
ORDER BY seeds DESC, score DESC
LIMIT $limit;

// name: adjacent_subchunks
// Algorithm 2, line 3, on the rewired index: sub-chunks of the chunks most linked to the seed
// entities (MENTIONS) and the chosen relations (HAS_RELATION), best-linked chunks first.
MATCH (c:Chunk)-[l:MENTIONS|HAS_RELATION]->(x)
WHERE x.id IN $ids
WITH c, count(l) AS links
ORDER BY links DESC LIMIT $chunks
MATCH (c)-[:HAS_PART]->(s:SubChunk)
WHERE c.id IS NOT NULL AND s.id IS NOT NULL AND s.text IS NOT NULL AND s.embedding IS NOT NULL
RETURN s.id AS id, s.text AS text, c.id AS chunk, c.doc_title AS title, links,
       vector.similarity.cosine(s.embedding, $vector) AS score
ORDER BY links DESC, score DESC;

// name: seed_keywords
// Algorithm 4, line 2: keywords by similarity to the query, each with its sub-chunks.
CALL db.index.vector.queryNodes('keyword_embedding', $candidates, $vector) YIELD node, score
WHERE node.id IS NOT NULL
WITH node, score ORDER BY score DESC LIMIT $k
MATCH (node)-[:OCCURS_IN]->(s:SubChunk)<-[:HAS_PART]-(c:Chunk)
WHERE c.id IS NOT NULL AND s.id IS NOT NULL AND s.text IS NOT NULL AND s.tokens IS NOT NULL
  AND s.embedding IS NOT NULL
RETURN node.term AS term, score AS kscore,
       collect({id: s.id, text: s.text, tokens: s.tokens, chunk: c.id, title: c.doc_title,
                score: vector.similarity.cosine(s.embedding, $vector)}) AS subs
ORDER BY kscore DESC;
