// Writes of the ingestion pipeline (graphstrata/ingest/). Each runs inside one transaction per
// group of documents, so a document lands whole or not at all. Every write is keyed by a stable id.

// name: lock_documents
// Takes a write lock on each document node (created if new) and returns its committed content
// hash, so that concurrent ingests of the same document serialise here and the second one sees
// the first one's result.
// `failed`: a chunk's extraction failed last time, so the document is due again even if unchanged.
UNWIND $ids AS id
MERGE (d:Document {id: id})
SET d._lock = coalesce(d._lock, 0) + 1
RETURN d.id AS id, d.sha256 AS sha256,
       EXISTS { (d)-[:HAS_CHUNK]->(:Chunk {extraction_status: 'failed'}) } AS failed;

// name: document_state
// With the chunking it was written with: a document chunked otherwise is due again.
UNWIND $ids AS id
MATCH (d:Document {id: id})
RETURN d.id AS id, d.sha256 AS sha256,
       EXISTS { (d)-[:HAS_CHUNK]->(:Chunk {extraction_status: 'failed'}) } AS failed,
       {chunk_size: d.chunk_size, chunk_overlap: d.chunk_overlap, chunking: d.chunking, splits: d.splits} AS chunked;

// name: same_text
// Stored documents of another identity with the same title and text as a new one (the same file
// ingested by path and by upload, say): the ingest says so.
UNWIND $rows AS r
MATCH (d:Document {sha256: r.sha256})
WHERE d.id <> r.id
RETURN r.id AS id, d.id AS other, d.source AS source
ORDER BY d.source;

// name: set_documents
UNWIND $rows AS r
MATCH (d:Document {id: r.id})
SET d.title = r.title, d.source = r.source, d.sha256 = r.sha256, d.chars = r.chars,
    d.chunk_size = r.chunk_size, d.chunk_overlap = r.chunk_overlap, d.chunking = r.chunking,
    d.splits = r.splits, d.ingested_at = datetime()
REMOVE d._lock;

// name: write_chunks
// title/description: the DA-RAG chunk layer (§4.1), from the chunk's extraction; extraction_status
// is ok, failed (retried by the next ingest) or skipped (no extractor, or not a KET-RAG core chunk).
// provenance: the pages or headed sections of a PDF/HTML/DOCX source it overlaps (null otherwise).
// subs_cut: its sub-chunks' spaCy analyses were cut from its parse (graphstrata.text.nlp.cut; null
// in graphs written before: they were parsed alone, and a delete re-derives them so).
UNWIND $rows AS r
MATCH (d:Document {id: r.doc})
MERGE (c:Chunk {id: r.id})
SET c.text = r.text, c.tokens = r.tokens, c.ordinal = r.ordinal, c.doc_title = r.doc_title,
    c.doc_id = r.doc, c.title = r.title, c.description = r.description, c.extractor = r.extractor,
    c.extraction_status = r.extraction_status, c.provenance = r.provenance, c.subs_cut = r.subs_cut
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
// Entities that will still exist once the documents being replaced ($replacing) are removed: they
// keep their name embedding; every other entity of the batch gets one.
UNWIND $ids AS id
MATCH (e:Entity {id: id})
WHERE EXISTS { MATCH (c:Chunk)-[:MENTIONS]->(e) WHERE NOT c.doc_id IN $replacing }
RETURN e.id AS id;

// name: merge_entities
// Entities merge across chunks, documents and extractors by normalised name. Name, type and source
// set here are provisional: set_entities derives them from the MENTIONS records. Name
// embeddings are computed only for entities new to the graph.
UNWIND $rows AS r
MERGE (e:Entity {id: r.id})
ON CREATE SET e.name = r.name, e.normalized = r.normalized, e.type = r.type, e.source = r.source
WITH e, r
WHERE r.embedding IS NOT NULL AND e.embedding IS NULL
CALL db.create.setNodeVectorProperty(e, 'embedding', r.embedding);

// name: lock_entities
// Takes each entity's write lock (a node's first write in a transaction takes it, held until commit),
// in id order ($ids sorted). Every transaction that adds or removes an entity's mentions locks it
// before it reads what other documents left: entity_tallies and related_tallies then read the
// counts of everything committed before, and a removal's "no chunk mentions it any more" cannot miss a
// mention a concurrent ingest is adding.
UNWIND $ids AS id
MATCH (e:Entity {id: id})
SET e._lock = true
REMOVE e._lock;

// name: missing_entities
// Entities of $ids that do not exist. Run after lock_entities: a node a concurrent transaction deleted
// between our MATCH or MERGE and our lock is gone (writes to it were silently nothing).
UNWIND $ids AS id
OPTIONAL MATCH (e:Entity {id: id})
WITH id, e WHERE e IS NULL
RETURN id;

// name: lock_terms
// The same lock for E2GraphRAG's terms (their HAS_TERM links and the "no chunk has it any more"
// deletion), in id order.
UNWIND $ids AS id
MATCH (t:Term {id: id})
SET t._lock = true
REMOVE t._lock;

// name: missing_terms
UNWIND $ids AS id
OPTIONAL MATCH (t:Term {id: id})
WITH id, t WHERE t IS NULL
RETURN id;

// name: write_mentions
// The knowledge graph's chunk->entity provenance: MENTIONS with the number of occurrences. Each edge also
// records what this chunk says of the entity: the surface `name`, the spaCy pass's NER `label`
// (null if it did not see it) and the chunk extraction's `extractor`, `type` and `description`
// (null if the extraction does not name it) — the per-chunk facts entity aggregates are made of.
UNWIND $rows AS r
MATCH (c:Chunk {id: r.chunk}), (e:Entity {id: r.entity})
MERGE (c)-[m:MENTIONS]->(e)
SET m.count = r.count, m.name = r.name, m.label = r.label, m.extractor = r.extractor, m.type = r.type,
    m.description = r.description;

// name: merge_terms
// E2GraphRAG's layer (§3.1): the spaCy named entities and common nouns of the text, one Term per
// normalised name. Kept apart from the knowledge graph's Entity nodes so that generic nouns never
// become KG hubs; matched by name, so no embedding.
UNWIND $rows AS r
MERGE (t:Term {id: r.id})
ON CREATE SET t.name = r.name, t.normalized = r.normalized, t.type = r.type;

// name: write_term_links
// The term->chunk index of E2GraphRAG: HAS_TERM with the number of occurrences in the chunk, and
// the surface name and spaCy label the chunk gives the term (set_terms aggregates them).
UNWIND $rows AS r
MATCH (c:Chunk {id: r.chunk}), (t:Term {id: r.term})
MERGE (c)-[h:HAS_TERM]->(t)
SET h.count = r.count, h.name = r.name, h.type = r.type;

// name: add_cooccurrence
// Sentence-level co-occurrence of terms, one edge per unordered pair (stored from the smaller id),
// weights summed over all chunks of all documents.
UNWIND $rows AS r
MATCH (a:Term {id: r.a}), (b:Term {id: r.b})
MERGE (a)-[x:CO_OCCURS]->(b)
ON CREATE SET x.weight = r.w
ON MATCH SET x.weight = x.weight + r.w;

// name: subtract_cooccurrence
UNWIND $rows AS r
MATCH (a:Term {id: r.a})-[x:CO_OCCURS]->(b:Term {id: r.b})
SET x.weight = x.weight - r.w
WITH x WHERE x.weight <= 0
DELETE x;

// name: add_keywords
// A keyword's vector is the SUM of the embeddings of the sentences that contain it (k.sum): the same
// direction as their mean (all that cosine similarity sees), and updatable by addition when
// documents come and go. n_sentences counts them.
// The indexed vector (k.embedding, keyword_embedding) is a copy of the sum: written here only for a
// new keyword, and brought up to date once at the end of the ingest (refresh_keywords). Rewriting it
// with every batch left the HNSW index a deleted entry per rewrite: after a 10,000-passage ingest its
// searches took 24 ms, against 3 ms for the same vectors indexed once.
// Concurrent ingests add to the same keywords. Neo4j is read-committed and MERGE takes no lock on a
// node it matches, so the increment of n_sentences comes first: a SET whose right-hand side reads the
// property it writes takes the node's write lock before reading, and holds it until commit. The
// sum is read only after that (once, into `old`: `k.sum[i]` would re-read it per element), so it is
// the sum every earlier committed ingest left, never one a concurrent ingest is about to overwrite
// (a lost update). Rows come sorted by id, so concurrent ingests lock in one order. A graph written
// before k.sum existed kept the sum in k.embedding.
UNWIND $rows AS r
MERGE (k:Keyword {id: r.id})
ON CREATE SET k.term = r.term, k.n_sentences = 0
SET k.n_sentences = k.n_sentences + r.n
WITH k, r, coalesce(k.sum, k.embedding) AS old
WITH k, CASE WHEN old IS NULL THEN r.sum ELSE [i IN range(0, size(r.sum) - 1) | old[i] + r.sum[i]] END AS total
SET k.sum = total
WITH k, total WHERE k.embedding IS NULL
SET k.embedding = total;

// name: refresh_keywords
// At the end of an ingest (graphstrata/ingest/pipeline.py), for the keywords it added to: the indexed
// copy written again where the sum has turned from it past cosine 0.9999 (vector.similarity.cosine
// gives (1 + cos) / 2, hence 0.99995), so a copy's cosine to any question is within 0.015 of the sum's.
// In id order, as add_keywords locks.
UNWIND $rows AS r
MATCH (k:Keyword {id: r.id})
WITH k WHERE k.sum IS NOT NULL AND CASE WHEN k.embedding IS NULL THEN true
                                        ELSE vector.similarity.cosine(k.embedding, k.sum) < 0.99995 END
SET k.embedding = k.sum;

// name: subtract_keywords
// As add_keywords: lock (by the decrement) before reading the sum; the indexed copy is written again
// as refresh_keywords does (a delete changes few keywords).
UNWIND $rows AS r
MATCH (k:Keyword {id: r.id})
SET k.n_sentences = k.n_sentences - r.n
WITH k, r, coalesce(k.sum, k.embedding) AS old
WITH k, [i IN range(0, size(r.sum) - 1) | old[i] - r.sum[i]] AS total
SET k.sum = total
WITH k, total
CALL (k, total) {
  // a keyword left in no sentence has a zero sum (no direction): it is deleted below
  WITH k, total WHERE CASE WHEN k.n_sentences > 0
                           THEN coalesce(vector.similarity.cosine(k.embedding, total), 0.0) < 0.99995
                           ELSE false END
  SET k.embedding = total
}
WITH k WHERE k.n_sentences <= 0
DETACH DELETE k;

// name: missing_keywords
// As missing_entities, after add_keywords: a keyword a concurrent removal deleted under us.
UNWIND $ids AS id
OPTIONAL MATCH (k:Keyword {id: id})
WITH id, k WHERE k IS NULL
RETURN id;

// name: link_keywords
UNWIND $rows AS r
MATCH (k:Keyword {id: r.keyword}), (s:SubChunk {id: r.sub})
MERGE (k)-[o:OCCURS_IN]->(s)
SET o.count = r.count;

// name: write_units
// NodeRAG S: semantic units of a chunk (independent events, paraphrased), in chunk order.
UNWIND $rows AS r
MATCH (c:Chunk {id: r.chunk})
MERGE (u:SemanticUnit {id: r.id})
SET u.text = r.text, u.extractor = r.extractor, u.chunk_id = r.chunk, u.ordinal = r.ordinal
MERGE (c)-[h:HAS_UNIT]->(u)
SET h.ordinal = r.ordinal
WITH u, r
CALL db.create.setNodeVectorProperty(u, 'embedding', r.embedding);

// name: link_unit_entities
UNWIND $rows AS r
MATCH (u:SemanticUnit {id: r.unit}), (e:Entity {id: r.entity})
MERGE (u)-[:MENTIONS]->(e);

// name: write_relations
// NodeRAG R: one Relation node per (chunk, subject, predicate, object) the chunk asserts, between
// its entities. The plain RELATED edge that mirrors it is maintained by set_related.
UNWIND $rows AS r
MATCH (c:Chunk {id: r.chunk}), (a:Entity {id: r.a}), (b:Entity {id: r.b})
MERGE (x:Relation {id: r.id})
SET x.subject = r.subject, x.predicate = r.predicate, x.object = r.object, x.description = r.description,
    x.text = r.text, x.extractor = r.extractor, x.chunk_id = r.chunk
MERGE (c)-[:HAS_RELATION]->(x)
MERGE (a)-[:SUBJECT_OF]->(x)
MERGE (x)-[:OBJECT]->(b)
WITH x, r WHERE r.embedding IS NOT NULL  // spaCy's relations have none (graphstrata/ingest/assemble.py)
CALL db.create.setNodeVectorProperty(x, 'embedding', r.embedding);

// Shared aggregates (graphstrata/ingest/tally.py): each entity, term and RELATED edge keeps in
// `_tally` (JSON) the counts of the per-chunk records it is made of, and the properties derived from
// them. A write reads the committed tallies of what it changed (after taking their locks), adds the
// records it wrote, subtracts those of the documents it removed, and sets the result; an aggregate
// without a tally (new, or written before tallies) is counted once from its records.

// name: entities_tallies
UNWIND $rows AS r
MATCH (e:Entity {id: r.id})
RETURN e.id AS id, e._tally AS tally;

// name: entities_records
// The MENTIONS records of entities without a tally (keys as graphstrata.ingest.tally.mention_facts reads).
UNWIND $rows AS r
MATCH (:Chunk)-[m:MENTIONS]->(e:Entity {id: r.id})
RETURN e.id AS id, m.name AS name, m.label AS label, m.extractor AS extractor, m.type AS type,
       m.description AS description;

// name: set_entities
// An entity's shared properties (graphstrata.ingest.tally.entity_properties): name, type, descriptions,
// description, extractors, source. A null name (no chunk gives a surface form) keeps the current one.
UNWIND $rows AS r
MATCH (e:Entity {id: r.id})
SET e.name = coalesce(r.name, e.name), e.type = r.type, e.extractors = r.extractors, e.source = r.source,
    e.descriptions = r.descriptions, e.description = r.description, e._tally = r.tally;

// name: terms_tallies
UNWIND $rows AS r
MATCH (t:Term {id: r.id})
RETURN t.id AS id, t._tally AS tally;

// name: terms_records
UNWIND $rows AS r
MATCH (:Chunk)-[h:HAS_TERM]->(t:Term {id: r.id})
RETURN t.id AS id, h.name AS name, h.type AS type;

// name: set_terms
// A term's name and type: the pair most chunks give (graphstrata.ingest.tally.term_properties). (A
// term no chunk has any more is deleted with its last document.)
UNWIND $rows AS r
MATCH (t:Term {id: r.id})
SET t.name = coalesce(r.name, t.name), t.type = CASE WHEN r.name IS NULL THEN t.type ELSE r.type END,
    t._tally = r.tally;

// name: related_tallies
UNWIND $rows AS r
MATCH (a:Entity {id: r.a})-[e:RELATED {predicate: r.p}]->(b:Entity {id: r.b})
RETURN r.a AS a, r.p AS p, r.b AS b, e._tally AS tally;

// name: related_records
UNWIND $rows AS r
MATCH (a:Entity {id: r.a})-[:SUBJECT_OF]->(x:Relation {predicate: r.p})-[:OBJECT]->(b:Entity {id: r.b})
RETURN r.a AS a, r.p AS p, r.b AS b, x.description AS description, x.extractor AS extractor;

// name: set_related
// One RELATED edge per (subject, predicate, object) (graphstrata.ingest.tally.related_properties):
// weight = the number of chunks asserting it (its Relation nodes), descriptions = their distinct
// descriptions, most asserted first; at weight 0 the edge goes.
UNWIND $rows AS r
MATCH (a:Entity {id: r.a}), (b:Entity {id: r.b})
OPTIONAL MATCH (a)-[old:RELATED {predicate: r.p}]->(b)
FOREACH (_ IN CASE WHEN r.weight = 0 AND old IS NOT NULL THEN [1] ELSE [] END | DELETE old)
WITH a, b, r WHERE r.weight > 0
MERGE (a)-[e:RELATED {predicate: r.p}]->(b)
SET e.weight = r.weight, e.extractors = r.extractors, e.descriptions = r.descriptions,
    e.description = r.description, e._tally = r.tally;

// name: document_refs
// A document's records in the shared aggregates, subtracted when it is removed: its chunks' MENTIONS
// and HAS_TERM records and its Relation nodes.
MATCH (d:Document {id: $id})
RETURN
  COLLECT {
    MATCH (d)-[:HAS_CHUNK]->(:Chunk)-[m:MENTIONS]->(e:Entity)
    RETURN {id: e.id, name: m.name, label: m.label, extractor: m.extractor, type: m.type,
            description: m.description} AS m
  } AS mentions,
  COLLECT {
    MATCH (d)-[:HAS_CHUNK]->(:Chunk)-[h:HAS_TERM]->(t:Term) RETURN {id: t.id, name: h.name, type: h.type} AS h
  } AS terms,
  COLLECT {
    MATCH (d)-[:HAS_CHUNK]->(:Chunk)-[:HAS_RELATION]->(x:Relation),
          (a:Entity)-[:SUBJECT_OF]->(x)-[:OBJECT]->(b:Entity)
    RETURN {a: a.id, p: x.predicate, b: b.id, description: x.description, extractor: x.extractor} AS x
  } AS relations;

// name: document_chunks
// The stored text of a document's chunks and sub-chunks, and how they were analysed, to undo its contributions.
MATCH (d:Document {id: $id})-[:HAS_CHUNK]->(c:Chunk)
OPTIONAL MATCH (c)-[:HAS_PART]->(s:SubChunk)
WITH c, s ORDER BY c.ordinal, s.ordinal
RETURN c.id AS chunk, c.text AS text, c.subs_cut AS subs_cut, collect({id: s.id, text: s.text}) AS subs;

// name: delete_document_nodes
// Removes the document, its chunks with their sub-chunks, semantic units and Relation nodes, then
// every entity no chunk mentions any more (with its RELATED edges) and every term no chunk has
// any more (with its CO_OCCURS edges).
MATCH (d:Document {id: $id})
OPTIONAL MATCH (d)-[:HAS_CHUNK]->(c:Chunk)
OPTIONAL MATCH (c)-[:MENTIONS]->(e:Entity)
WITH d, collect(DISTINCT c) AS chunks, collect(DISTINCT e) AS entities
CALL (chunks) {
  UNWIND chunks AS c
  MATCH (c)-[:HAS_TERM]->(t:Term)
  WITH DISTINCT t
  WHERE NOT EXISTS { (x:Chunk)-[:HAS_TERM]->(t) WHERE NOT x IN chunks }
  DETACH DELETE t
}
CALL (chunks) {
  UNWIND chunks AS c
  OPTIONAL MATCH (c)-[:HAS_PART]->(s:SubChunk)
  DETACH DELETE s
}
CALL (chunks) {
  UNWIND chunks AS c
  OPTIONAL MATCH (c)-[:HAS_UNIT]->(u:SemanticUnit)
  DETACH DELETE u
}
CALL (chunks) {
  UNWIND chunks AS c
  OPTIONAL MATCH (c)-[:HAS_RELATION]->(x:Relation)
  DETACH DELETE x
}
CALL (chunks) { UNWIND chunks AS c DETACH DELETE c }
DETACH DELETE d
WITH entities
UNWIND entities AS e
WITH e WHERE NOT EXISTS { (:Chunk)-[:MENTIONS]->(e) }
DETACH DELETE e;

// name: find_documents
// Documents by id, exact source, or exact title (for `graphstrata delete`); a document ingested in
// parts (ingest/parts.py: `<source>#part<k>`, `<title> (part <k>)`) is found whole by its source or title
// (candidates by prefix here; ingest/parts.py:find_documents keeps the exact matches).
CALL () {
  MATCH (d:Document) WHERE d.id = $ref RETURN d
  UNION
  MATCH (d:Document) WHERE d.source = $ref OR d.source STARTS WITH $ref + '#part' RETURN d
  UNION
  MATCH (d:Document) WHERE d.title = $ref OR d.title STARTS WITH $ref + ' (part ' RETURN d
}
RETURN d.id AS id, d.title AS title, d.source AS source
ORDER BY d.source;

// name: stored_parts
// The stored documents of these sources: each document itself and its parts (`<source>#part<k>`,
// a large document split by ingest/parts.py), to delete those a new version no longer has.
// (two index seeks on document_source per source, not an OR that scans every Document)
UNWIND $sources AS source
CALL (source) {
  MATCH (d:Document) WHERE d.source = source RETURN d
  UNION
  MATCH (d:Document) WHERE d.source STARTS WITH source + $mark RETURN d
}
RETURN d.id AS id, d.source AS source;
