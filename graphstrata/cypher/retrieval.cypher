// Read queries of the retrieval methods (graphstrata/retrieval/).

// name: vector_chunks
// Vector top-k over chunks (the `vector` baseline; Text-RAG in the papers), from $candidates.
// Every index lookup skips rows without an id: a node that a concurrent commit is deleting can
// surface from an index with its properties already gone (Neo4j is read-committed).
CALL db.index.vector.queryNodes('chunk_embedding', $candidates, $vector) YIELD node, score
WHERE node.id IS NOT NULL
WITH node, score ORDER BY score DESC LIMIT $k
RETURN node.id AS id, node.text AS text, node.doc_title AS title, score;

// name: fulltext_chunks
// Lucene full-text over chunk text and document title (the `fulltext` baseline).
CALL db.index.fulltext.queryNodes('chunk_text_fulltext', $terms, {limit: $k}) YIELD node, score
WHERE node.id IS NOT NULL
RETURN node.id AS id, node.text AS text, node.doc_title AS title, score;
