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

// name: record_failed
// Files that could not be read (an upload's corrupt PDF, a scan with no text): kept as `FailedFile`
// nodes with the reason, so `documents` lists them as failed until the file is ingested or deleted.
UNWIND $rows AS row
MERGE (f:FailedFile {id: row.id})
SET f.title = row.title, f.source = row.source, f.reason = row.reason, f.failed_at = datetime();

// name: clear_failed
// The failures of these documents: read now (or deleted by the user).
MATCH (f:FailedFile) WHERE f.id IN $ids
DELETE f;

// name: failed_files
// The failed files no readable version of which is in the graph, by title.
MATCH (f:FailedFile)
WHERE NOT EXISTS { MATCH (d:Document {id: f.id}) WHERE d.sha256 IS NOT NULL }
RETURN f.id AS id, f.title AS title, f.source AS source, f.reason AS reason,
       toString(f.failed_at) AS ingested_at, f.failed_at.epochMillis AS ingested_ms
ORDER BY f.title, f.id;
