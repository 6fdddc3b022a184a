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
// its properties read once, as in vector_chunks), in one row: the driver's cost is per record.
UNWIND $ids AS id
MATCH (c:Chunk {id: id})
WITH id, c.text AS text, coalesce(c.doc_title, '') AS title
WHERE text IS NOT NULL
RETURN collect({id: id, title: title, text: text}) AS chunks;

// name: entry_points
// The question vector's entry points into the graph (retrieval/entries.py), each part skipped when
// not asked for ($passage_k = 0; $indexes empty and $fact_k = 0), and the graph's version (which
// walk graph to use), in one round trip:
// - `passage_ids`, `passage_scores`, `feedback`: HippoRAG 2's passage seeds (§3.2), the $passage_k
//   passages nearest the question by dense score (two lists: the driver decodes them faster than as
//   many maps), and the entities of the nearest one with the number of passages that mention each
//   (node specificity);
// - `entries`: NodeRAG's similarity search (§2.5), one top-$k over all rich nodes S, A, H, T (the
//   paper's single HNSW; cosine scores of one embedder are comparable across the per-label indexes,
//   so merging their top-k lists is exact), and, as HippoRAG 2 matches the question against facts,
//   the $fact_k relations nearest to it.
CALL () {
  WITH $passage_k AS k WHERE k > 0
  CALL db.index.vector.queryNodes('chunk_embedding', $passage_candidates, $vector) YIELD node, score
  WHERE node.id IS NOT NULL
  WITH node, score ORDER BY score DESC LIMIT $passage_k
  RETURN collect(node.id) AS passage_ids, collect(score) AS passage_scores, head(collect(node)) AS best
}
CALL (best) {
  OPTIONAL MATCH (best)-[:MENTIONS]->(e:Entity)
  WITH e WHERE e.id IS NOT NULL AND e.name IS NOT NULL
  RETURN collect({id: e.id, name: e.name, chunks: COUNT { (e)<-[:MENTIONS]-(:Chunk) }}) AS feedback
}
CALL () {
  CALL () {
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
  WITH node.id AS id, labels(node)[0] AS label, via, score WHERE id IS NOT NULL
  RETURN collect({id: id, label: label, via: via, score: score}) AS entries
}
OPTIONAL MATCH (m:GraphStrata {id: 'meta'})
RETURN passage_ids, passage_scores, feedback, entries, m.updated_at AS version;

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
