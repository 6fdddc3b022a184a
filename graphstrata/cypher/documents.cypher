// Reads of the document list (graphstrata/documents.py): what is in the graph, per document.
// A document still being written for the first time (no sha256 yet) is not listed.

// name: list
// Every document with its chunk counts; failed_chunks: chunks whose knowledge extraction failed
// (retried by the next ingest).
MATCH (d:Document)
WHERE d.sha256 IS NOT NULL
RETURN d.id AS id, d.title AS title, d.source AS source, d.chars AS chars,
       toString(d.ingested_at) AS ingested_at, d.ingested_at.epochMillis AS ingested_ms,
       COUNT { (d)-[:HAS_CHUNK]->(:Chunk) } AS chunks,
       COUNT { (d)-[:HAS_CHUNK]->(:Chunk {extraction_status: 'failed'}) } AS failed_chunks
ORDER BY d.title, d.id;

// name: get
// One document by id, source or title, with the chunks whose extraction failed.
MATCH (d:Document)
WHERE d.sha256 IS NOT NULL AND (d.id = $ref OR d.source = $ref OR d.title = $ref)
WITH d, COLLECT {
  MATCH (d)-[:HAS_CHUNK]->(c:Chunk {extraction_status: 'failed'})
  RETURN {id: c.id, ordinal: c.ordinal} ORDER BY c.ordinal
} AS failed
RETURN d.id AS id, d.title AS title, d.source AS source, d.chars AS chars,
       toString(d.ingested_at) AS ingested_at, d.ingested_at.epochMillis AS ingested_ms,
       COUNT { (d)-[:HAS_CHUNK]->(:Chunk) } AS chunks, size(failed) AS failed_chunks, failed AS failed_chunk_list
ORDER BY d.title, d.id;
