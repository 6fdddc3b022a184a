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
WITH node, score, matched_by WHERE node.id IS NOT NULL AND node.name IS NOT NULL
ORDER BY score DESC, node.id LIMIT $k
RETURN node.id AS id, node.name AS name, coalesce(node.description, '') AS description, score, matched_by;

// name: seed_entities_by_name
// seed_entities on a graph that has no entity_description_embedding index yet (built before it).
CALL db.index.vector.queryNodes('entity_embedding', $candidates, $vector) YIELD node, score
WITH node, score WHERE node.id IS NOT NULL AND node.name IS NOT NULL
ORDER BY score DESC, node.id LIMIT $k
RETURN node.id AS id, node.name AS name, coalesce(node.description, '') AS description, score, 'name' AS matched_by;

// name: question_context
// Everything KET-RAG reads before its two channels split the budget, in one round trip:
// - the seed entities: SEED_ENTITIES is replaced by seed_entities, or by seed_entities_by_name on a
//   graph without the entity_description_embedding index;
// - Algorithm 2, line 2: the relations adjacent to the seeds, those joining two seeds first, then by
//   similarity to the query. Shown as a triple "(subject; predicate; object)", never as prose (the
//   no-LLM extractor's predicates are lemmas), with a description a model or the user wrote;
// - Algorithm 4, line 2: the keywords by similarity to the query (their sub-chunks are read afterwards,
//   keyword_subchunks, only for as many keywords as the pool needs: a common keyword's list grows with
//   the corpus, and reading all $keyword_k lists made the channel's cost the corpus's);
// - the graph's version, which tells whether the indexes checked before are still the graph's.
// $skeleton / $keywords: whether each channel runs (ketrag-keyword and ketrag-skeleton run one).
CALL () {
  WITH 1 AS one WHERE $skeleton
  SEED_ENTITIES
}
WITH collect({id: id, name: name, description: description, score: score, matched_by: matched_by}) AS found
// the entities the question names ($mentioned, seed_mentions), first
CALL () {
  UNWIND range(0, size($mentioned) - 1) AS i
  MATCH (e:Entity {id: $mentioned[i]}) WHERE e.name IS NOT NULL
  WITH e ORDER BY i
  RETURN collect({id: e.id, name: e.name, description: coalesce(e.description, ''), score: 1.0,
                  matched_by: 'mention'}) AS named
}
WITH named + [s IN found WHERE NOT s.id IN [x IN named | x.id]] AS seeds
CALL (seeds) {
  WITH [s IN seeds | s.id] AS ids
  MATCH (s:Entity)-[:SUBJECT_OF|OBJECT]-(r:Relation)
  WHERE s.id IN ids AND r.id IS NOT NULL AND r.text IS NOT NULL
  WITH r, count(DISTINCT s) AS joined
  WITH r, joined,
       CASE WHEN r.embedding IS NULL THEN 0.0 ELSE vector.similarity.cosine(r.embedding, $vector) END AS score
  ORDER BY joined DESC, score DESC, r.id
  LIMIT $limit
  // the triples written out only for the relations kept (a hub seed has thousands)
  RETURN collect({
    id: r.id,
    text: CASE WHEN r.subject IS NULL OR r.predicate IS NULL OR r.object IS NULL THEN r.text
               ELSE '(' + r.subject + '; ' + r.predicate + '; ' + r.object + ')' +
                    CASE WHEN r.description IS NOT NULL AND coalesce(r.extractor, '') <> 'spacy'
                         THEN ': ' + r.description ELSE '' END
          END,
    seeds: joined, score: score}) AS relations
}
CALL () {
  WITH 1 AS one WHERE $keywords
  CALL db.index.vector.queryNodes('keyword_embedding', $keyword_candidates, $vector) YIELD node, score
  WITH node, score WHERE node.id IS NOT NULL
  WITH node, score ORDER BY score DESC, node.id LIMIT $keyword_k
  RETURN collect({id: node.id, term: node.term}) AS keywords
}
OPTIONAL MATCH (m:GraphStrata {id: 'meta'})
RETURN seeds, relations, keywords, m.updated_at AS version;

// name: adjacent_subchunks
// Algorithm 2, line 3, on the rewired index: sub-chunks of the chunks most linked to the seed
// entities (MENTIONS) and the chosen relations (HAS_RELATION), best-linked chunks first. The links
// are found from the seeds and relations (by their id indexes), not by scanning every chunk. Among
// chunks with equally many links (most of them, one link each, on a corpus of short passages) the
// cut at $chunks keeps those whose best sub-chunk is nearest the question — the order the keyword
// channel ranks by (Algorithm 4, line 3) — and not an order of the store's.
CALL () {
  MATCH (x:Entity) WHERE x.id IN $ids
  MATCH (c:Chunk)-[l:MENTIONS]->(x)
  RETURN c, l
  UNION ALL
  MATCH (x:Relation) WHERE x.id IN $ids
  MATCH (c:Chunk)-[l:HAS_RELATION]->(x)
  RETURN c, l
}
WITH c, count(l) AS links
WHERE c.id IS NOT NULL AND c.doc_title IS NOT NULL
MATCH (c)-[:HAS_PART]->(s:SubChunk)
WHERE s.id IS NOT NULL AND s.text IS NOT NULL AND s.embedding IS NOT NULL
WITH c, links, s, vector.similarity.cosine(s.embedding, $vector) AS score
WITH c, links, max(score) AS best, collect({s: s, score: score}) AS subs
ORDER BY links DESC, best DESC, c.id LIMIT $chunks
UNWIND subs AS sub
WITH c, links, best, sub.s AS s, sub.score AS score
RETURN s.id AS id, s.text AS text, c.id AS chunk, c.doc_title AS title, links,
       score
ORDER BY links DESC, score DESC;

// name: keyword_subchunks
// Algorithm 4, line 2: the sub-chunks of the keywords $ids (in that order), ids and token counts; the
// channel reads the keywords in growing batches until their sub-chunks fill its pool.
UNWIND range(0, size($ids) - 1) AS i
MATCH (k:Keyword {id: $ids[i]})
CALL (k) {
  MATCH (k)-[:OCCURS_IN]->(s:SubChunk)<-[:HAS_PART]-(c:Chunk)
  WHERE c.id IS NOT NULL AND c.doc_title IS NOT NULL AND s.id IS NOT NULL AND s.text IS NOT NULL
    AND s.tokens IS NOT NULL AND s.embedding IS NOT NULL
  WITH s ORDER BY s.id
  RETURN collect({id: s.id, tokens: s.tokens}) AS subs
}
RETURN k.term AS term, subs ORDER BY i;

// name: subchunk_texts
// The keyword channel's candidates (Algorithm 4, line 3): their texts, chunks and similarity to the query.
UNWIND $ids AS id
MATCH (s:SubChunk {id: id})<-[:HAS_PART]-(c:Chunk)
WHERE c.id IS NOT NULL AND c.doc_title IS NOT NULL AND s.text IS NOT NULL AND s.embedding IS NOT NULL
RETURN s.id AS id, s.text AS text, c.id AS chunk, c.doc_title AS title,
       vector.similarity.cosine(s.embedding, $vector) AS score;
