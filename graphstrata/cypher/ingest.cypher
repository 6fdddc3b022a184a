// Writes of the ingestion pipeline (graphstrata/ingest/). Each runs inside one transaction per
// group of documents, so a document lands whole or not at all. Every write is keyed by a stable id.

// name: lock_documents
// Takes a write lock on each document node (created if new) and returns its committed content
// hash, so that concurrent ingests of the same document serialise here and the second one sees
// the first one's result.
UNWIND $ids AS id
MERGE (d:Document {id: id})
SET d._lock = coalesce(d._lock, 0) + 1
RETURN d.id AS id, d.sha256 AS sha256;

// name: document_state
UNWIND $ids AS id
MATCH (d:Document {id: id})
RETURN d.id AS id, d.sha256 AS sha256;

// name: set_documents
UNWIND $rows AS r
MATCH (d:Document {id: r.id})
SET d.title = r.title, d.source = r.source, d.sha256 = r.sha256, d.chars = r.chars,
    d.chunk_size = r.chunk_size, d.chunk_overlap = r.chunk_overlap, d.chunking = r.chunking,
    d.splits = r.splits, d.ingested_at = datetime()
REMOVE d._lock;

// name: write_chunks
UNWIND $rows AS r
MATCH (d:Document {id: r.doc})
MERGE (c:Chunk {id: r.id})
SET c.text = r.text, c.tokens = r.tokens, c.ordinal = r.ordinal, c.doc_title = r.doc_title,
    c.doc_id = r.doc
MERGE (d)-[h:HAS_CHUNK]->(c)
SET h.ordinal = r.ordinal
WITH c, r
CALL db.create.setNodeVectorProperty(c, 'embedding', r.embedding);

// name: link_next
// NEXT keeps document order between consecutive chunks.
UNWIND $rows AS r
MATCH (a:Chunk {id: r.a}), (b:Chunk {id: r.b})
MERGE (a)-[:NEXT]->(b);

// name: write_subchunks
UNWIND $rows AS r
MATCH (c:Chunk {id: r.chunk})
MERGE (s:SubChunk {id: r.id})
SET s.text = r.text, s.tokens = r.tokens, s.ordinal = r.ordinal, s.chunk_id = r.chunk
MERGE (c)-[p:HAS_PART]->(s)
SET p.ordinal = r.ordinal
WITH s, r
CALL db.create.setNodeVectorProperty(s, 'embedding', r.embedding);

// name: existing_entities
UNWIND $ids AS id
MATCH (e:Entity {id: id})
RETURN e.id AS id;

// name: merge_entities
// Entities merge across chunks and documents by normalised name; the first extractor to see one
// names it. Name embeddings are computed only for entities new to the graph.
UNWIND $rows AS r
MERGE (e:Entity {id: r.id})
ON CREATE SET e.name = r.name, e.normalized = r.normalized, e.type = r.type, e.source = r.source
WITH e, r
WHERE r.embedding IS NOT NULL AND e.embedding IS NULL
CALL db.create.setNodeVectorProperty(e, 'embedding', r.embedding);

// name: write_mentions
// The entity<->chunk indexes of E2GraphRAG: MENTIONS with the number of occurrences.
UNWIND $rows AS r
MATCH (c:Chunk {id: r.chunk}), (e:Entity {id: r.entity})
MERGE (c)-[m:MENTIONS]->(e)
SET m.count = r.count;

// name: add_cooccurrence
// Sentence-level co-occurrence, one edge per unordered pair (stored from the smaller id), weights
// summed over all chunks of all documents.
UNWIND $rows AS r
MATCH (a:Entity {id: r.a}), (b:Entity {id: r.b})
MERGE (a)-[x:CO_OCCURS]->(b)
ON CREATE SET x.weight = r.w
ON MATCH SET x.weight = x.weight + r.w;

// name: subtract_cooccurrence
UNWIND $rows AS r
MATCH (a:Entity {id: r.a})-[x:CO_OCCURS]->(b:Entity {id: r.b})
SET x.weight = x.weight - r.w
WITH x WHERE x.weight <= 0
DELETE x;

// name: add_keywords
// A keyword's embedding is the SUM of the embeddings of the sentences that contain it: the same
// direction as their mean (all that cosine similarity sees), and updatable by addition when
// documents come and go. n_sentences counts them.
UNWIND $rows AS r
MERGE (k:Keyword {id: r.id})
ON CREATE SET k.term = r.term, k.n_sentences = r.n, k.embedding = r.sum
ON MATCH SET k.n_sentences = k.n_sentences + r.n,
             k.embedding = [i IN range(0, size(r.sum) - 1) | k.embedding[i] + r.sum[i]];

// name: subtract_keywords
UNWIND $rows AS r
MATCH (k:Keyword {id: r.id})
SET k.n_sentences = k.n_sentences - r.n,
    k.embedding = [i IN range(0, size(r.sum) - 1) | k.embedding[i] - r.sum[i]]
WITH k WHERE k.n_sentences <= 0
DETACH DELETE k;

// name: link_keywords
UNWIND $rows AS r
MATCH (k:Keyword {id: r.keyword}), (s:SubChunk {id: r.sub})
MERGE (k)-[o:OCCURS_IN]->(s)
SET o.count = r.count;

// name: document_chunks
// The stored text of a document's chunks and sub-chunks, to undo its contributions.
MATCH (d:Document {id: $id})-[:HAS_CHUNK]->(c:Chunk)
OPTIONAL MATCH (c)-[:HAS_PART]->(s:SubChunk)
WITH c, s ORDER BY c.ordinal, s.ordinal
RETURN c.id AS chunk, collect({id: s.id, text: s.text}) AS subs;

// name: delete_document_nodes
// Removes the document, its chunks and sub-chunks, then every entity no chunk mentions any more.
MATCH (d:Document {id: $id})
OPTIONAL MATCH (d)-[:HAS_CHUNK]->(c:Chunk)
OPTIONAL MATCH (c)-[:MENTIONS]->(e:Entity)
WITH d, collect(DISTINCT c) AS chunks, collect(DISTINCT e) AS entities
CALL (chunks) {
  UNWIND chunks AS c
  OPTIONAL MATCH (c)-[:HAS_PART]->(s:SubChunk)
  DETACH DELETE s
}
CALL (chunks) { UNWIND chunks AS c DETACH DELETE c }
DETACH DELETE d
WITH entities
UNWIND entities AS e
WITH e WHERE NOT EXISTS { (:Chunk)-[:MENTIONS]->(e) }
DETACH DELETE e;

// name: find_documents
// Documents by id, exact source, or exact title (for `graphstrata delete`).
MATCH (d:Document)
WHERE d.id = $ref OR d.source = $ref OR d.title = $ref
RETURN d.id AS id, d.title AS title, d.source AS source;
