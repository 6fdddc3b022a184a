// Read queries of the retrieval methods (graphstrata/retrieval/).

// name: vector_chunks
// Vector top-k over chunks (the `vector` baseline; Text-RAG in the papers), from $candidates.
// Every index lookup skips rows without an id: a node that a concurrent commit is deleting can
// surface from an index with its properties already gone (Neo4j is read-committed). For the same
// reason each property is read once, into a variable, and the row kept only when all are there: a
// delete that commits between two reads of a node leaves the later reads null.
CALL db.index.vector.queryNodes('chunk_embedding', $candidates, $vector) YIELD node, score
WHERE node.id IS NOT NULL
WITH node, score ORDER BY score DESC LIMIT $k
WITH node.id AS id, node.text AS text, node.doc_title AS title, score
WHERE id IS NOT NULL AND text IS NOT NULL AND title IS NOT NULL
RETURN id, text, title, score;

// name: chunks_by_id
// The text of chunks a method ranked in memory (a chunk a concurrent delete took away is absent;
// its properties read once, as in vector_chunks).
UNWIND $ids AS id
MATCH (c:Chunk {id: id})
WITH id, c.text AS text, coalesce(c.doc_title, '') AS title
WHERE text IS NOT NULL
RETURN id, title, text;

// name: fulltext_chunks
// Lucene full-text over chunk text and document title (the `fulltext` baseline); properties read
// once, as in vector_chunks.
CALL db.index.fulltext.queryNodes('chunk_text_fulltext', $terms, {limit: $k}) YIELD node, score
WITH node.id AS id, node.text AS text, node.doc_title AS title, score
WHERE id IS NOT NULL AND text IS NOT NULL AND title IS NOT NULL
RETURN id, text, title, score;

// name: link_entities
// Query linking and the accurate search (retrieval/linking.py), one round trip. Like every
// traversal of the retrieval queries it skips nodes without an id: a node a concurrent deletion is
// taking apart (a "ghost", tests/test_every_method.py) can still be reached, its properties gone.
// `linked`, for each query entity $names[i] ({name, normalized, words}): the entity with that
// normalised name (score 1); if there is none, the best $per_name entities whose names hold all its
// words (full-text `words`, score relative to the best hit); then each linked entity's SYNONYM
// neighbours (entity resolution), scored by the link score times the synonym score. `chunks`: how
// many chunks mention the entity (its specificity). `overviews`: the $overview_k overview titles
// (NodeRAG's O) best matching any of the names as a phrase ($terms; none when it is empty).
CALL () {
  UNWIND $names AS q
  CALL (q) {
    MATCH (e:Entity {normalized: q.normalized})
    RETURN e, 'exact' AS via, 1.0 AS score
    UNION
    WITH q WHERE q.words <> '' AND NOT EXISTS { MATCH (:Entity {normalized: q.normalized}) }
    CALL db.index.fulltext.queryNodes('entity_name_fulltext', q.words, {limit: $per_name}) YIELD node, score
    WHERE node.id IS NOT NULL
    WITH collect({e: node, s: score}) AS hits
    WITH hits, reduce(m = 0.0, h IN hits | CASE WHEN h.s > m THEN h.s ELSE m END) AS best
    UNWIND hits AS h
    RETURN h.e AS e, 'words' AS via, h.s / best AS score
  }
  WITH q, e, via, score
  CALL (e, via, score) {
    RETURN e AS linked, via AS how, score AS s
    UNION
    MATCH (e)-[y:SYNONYM]-(o:Entity)
    WHERE o.id IS NOT NULL
    RETURN o AS linked, 'synonym' AS how, score * y.score AS s
  }
  WITH q, linked, linked.id AS id, linked.name AS name, how, s
  WHERE id IS NOT NULL AND name IS NOT NULL
  RETURN collect({id: id, name: name, query_name: q.name, via: how, score: s,
                  chunks: COUNT { (:Chunk)-[:MENTIONS]->(linked) }}) AS linked
}
CALL () {
  WITH $terms AS terms WHERE terms <> ''
  CALL db.index.fulltext.queryNodes('overview_title_fulltext', terms, {limit: $overview_k}) YIELD node, score
  WITH node.id AS id, labels(node)[0] AS label, score WHERE id IS NOT NULL
  RETURN collect({id: id, label: label, via: 'exact', score: score}) AS overviews
}
RETURN linked, overviews;
