// Analysts' queries about the text layers: documents, chunks (with KET-RAG's PageRank core),
// sub-chunks and keywords, and E2GraphRAG's summary tree. Every query is a read.
// `$document` parameters accept a document id, its title or its source path; `$chunk` a chunk id.

// name: layer_counts
// How big each layer is. Nodes per label with the paper concept it stands for, and relationships
// per type. A first look at a graph (which augmentation stages have run, how many entities …).
CALL () {
  CALL db.labels() YIELD label
  CALL (label) { MATCH (n:$(label)) RETURN count(n) AS n }
  RETURN 'node' AS kind, label AS name, n
  UNION ALL
  CALL db.relationshipTypes() YIELD relationshipType AS type
  CALL (type) { MATCH ()-[r:$(type)]->() RETURN count(r) AS n }
  RETURN 'relationship' AS kind, type AS name, n
}
WITH kind, name, n WHERE n > 0  // label/type tokens with nothing left are not part of the graph
RETURN kind, name, n,
       CASE name
         WHEN 'Document' THEN 'source file'
         WHEN 'Chunk' THEN 'text chunk (NodeRAG T, DA-RAG chunk layer, E2GraphRAG leaf, KET-RAG chunk)'
         WHEN 'SubChunk' THEN 'KET-RAG sub-chunk'
         WHEN 'Entity' THEN 'knowledge-graph entity (NodeRAG N, KET-RAG skeleton, DA-RAG KG layer, SG-RAG KG)'
         WHEN 'Term' THEN 'E2GraphRAG term: spaCy named entity or common noun'
         WHEN 'Relation' THEN 'NodeRAG R: a relationship as a node'
         WHEN 'SemanticUnit' THEN 'NodeRAG S: semantic unit'
         WHEN 'Attribute' THEN 'NodeRAG A: attribute summary of an important entity'
         WHEN 'Community' THEN 'Leiden community'
         WHEN 'HighLevel' THEN 'NodeRAG H: community summary'
         WHEN 'Overview' THEN 'NodeRAG O: title of a community summary'
         WHEN 'Summary' THEN 'E2GraphRAG summary-tree node'
         WHEN 'Keyword' THEN 'KET-RAG keyword'
         WHEN 'GraphStrata' THEN 'meta node (embedding model, last write)'
         WHEN 'HAS_CHUNK' THEN 'document -> chunk'
         WHEN 'NEXT' THEN 'chunk -> following chunk'
         WHEN 'HAS_PART' THEN 'chunk -> KET-RAG sub-chunk'
         WHEN 'MENTIONS' THEN 'chunk or semantic unit -> entity'
         WHEN 'HAS_TERM' THEN 'chunk -> E2GraphRAG term'
         WHEN 'CO_OCCURS' THEN 'E2GraphRAG sentence co-occurrence of terms'
         WHEN 'SYNONYM' THEN 'entity resolution: two names of one entity'
         WHEN 'RELATED' THEN 'extracted relation (direct edge)'
         WHEN 'SUBJECT_OF' THEN 'entity -> Relation node'
         WHEN 'OBJECT' THEN 'Relation node -> entity'
         WHEN 'HAS_RELATION' THEN 'chunk -> Relation node it asserts'
         WHEN 'HAS_UNIT' THEN 'chunk -> semantic unit'
         WHEN 'OCCURS_IN' THEN 'KET-RAG keyword -> sub-chunk'
         WHEN 'SIMILAR' THEN 'KNN similarity (chunks: KET-RAG; entities: DA-RAG similarity layer)'
         WHEN 'HAS_ATTRIBUTE' THEN 'entity -> NodeRAG attribute'
         WHEN 'IN_COMMUNITY' THEN 'member -> Leiden community'
         WHEN 'OF_COMMUNITY' THEN 'NodeRAG H -> its community'
         WHEN 'TITLES' THEN 'NodeRAG O -> H'
         WHEN 'GROUPS' THEN 'NodeRAG H -> S/A of its K-means cell'
         WHEN 'SEMANTIC' THEN 'NodeRAG HNSW-like semantic edge'
         WHEN 'CHUNK_RELATED' THEN 'DA-RAG chunk-layer edge'
         WHEN 'SUMMARIZES' THEN 'E2GraphRAG summary -> child'
         ELSE ''
       END AS concept
ORDER BY kind, name;

// name: documents
// Documents with their size in each layer. Chunks, sub-chunks, distinct entities mentioned,
// Relation nodes, semantic units, summary-tree nodes, and when they were ingested.
// params:
//   limit  int = 100   most rows
MATCH (d:Document)
RETURN d.title AS title, d.source AS source, d.id AS id, d.chars AS chars,
       COUNT { (d)-[:HAS_CHUNK]->(:Chunk) } AS chunks,
       COUNT { (d)-[:HAS_CHUNK]->(:Chunk)-[:HAS_PART]->(:SubChunk) } AS sub_chunks,
       COUNT { MATCH (d)-[:HAS_CHUNK]->(:Chunk)-[:MENTIONS]->(e:Entity) RETURN DISTINCT e } AS entities,
       COUNT { (d)-[:HAS_CHUNK]->(:Chunk)-[:HAS_RELATION]->(:Relation) } AS relations,
       COUNT { (d)-[:HAS_CHUNK]->(:Chunk)-[:HAS_UNIT]->(:SemanticUnit) } AS units,
       COUNT { MATCH (s:Summary) WHERE s.doc_id = d.id } AS summaries,
       toString(d.ingested_at) AS ingested_at
ORDER BY title
LIMIT $limit;

// name: document_outline
// A document's chunks in reading order. Each with its token count, PageRank, core flag,
// number of entities and keywords, and the start of its text.
// params:
//   document  string   document id, title or source
MATCH (d:Document)
WHERE d.id = $document OR d.title = $document OR d.source = $document
MATCH (d)-[h:HAS_CHUNK]->(c:Chunk)
RETURN d.title AS document, h.ordinal AS ordinal, c.id AS chunk, c.tokens AS tokens,
       round(c.pagerank, 4) AS pagerank, c.is_core AS is_core, c.extraction_status AS extraction,
       COUNT { (c)-[:MENTIONS]->(:Entity) } AS entities,
       COUNT { MATCH (c)-[:HAS_PART]->(:SubChunk)<-[:OCCURS_IN]-(k:Keyword) RETURN DISTINCT k } AS keywords,
       left(c.text, 120) AS text
ORDER BY ordinal;

// name: core_chunks
// KET-RAG core chunks by PageRank. PageRank over the chunk KNN graph (SIMILAR edges), highest first,
// with whether they are in the core (the top beta share whose knowledge skeleton is extracted).
// params:
//   limit      int = 10        most rows
//   core_only  bool = false    only chunks with is_core = true
MATCH (c:Chunk)
WHERE c.pagerank IS NOT NULL AND (NOT $core_only OR c.is_core)
RETURN c.doc_title AS document, c.ordinal AS ordinal, c.id AS chunk, round(c.pagerank, 4) AS pagerank,
       c.is_core AS is_core, COUNT { (c)-[:SIMILAR]-(:Chunk) } AS knn_degree, left(c.text, 100) AS text
ORDER BY c.pagerank DESC, chunk
LIMIT $limit;

// name: chunk_detail
// Everything attached to one chunk. Its document and neighbours in reading order, the entities it
// mentions (with counts), its semantic units, Relation nodes, sub-chunks, and its most similar chunks.
// params:
//   chunk  string   chunk id
MATCH (c:Chunk {id: $chunk})
OPTIONAL MATCH (d:Document)-[:HAS_CHUNK]->(c)
RETURN c.id AS chunk, d.title AS document, c.ordinal AS ordinal, c.tokens AS tokens,
       round(c.pagerank, 4) AS pagerank, c.is_core AS is_core,
       COLLECT { MATCH (p:Chunk)-[:NEXT]->(c) RETURN p.id } AS previous,
       COLLECT { MATCH (c)-[:NEXT]->(n:Chunk) RETURN n.id } AS next,
       COLLECT { MATCH (c)-[m:MENTIONS]->(e:Entity) RETURN e.name + ' (' + m.count + ')' AS x ORDER BY m.count DESC, x } AS entities,
       COLLECT { MATCH (c)-[h:HAS_UNIT]->(u:SemanticUnit) RETURN u.text ORDER BY h.ordinal } AS units,
       COLLECT { MATCH (c)-[:HAS_RELATION]->(x:Relation) RETURN x.subject + ' ' + x.predicate + ' ' + x.object AS r ORDER BY r } AS relations,
       COUNT { (c)-[:HAS_PART]->(:SubChunk) } AS sub_chunks,
       COLLECT {
         MATCH (c)-[s:SIMILAR]-(o:Chunk)
         RETURN o.doc_title + ' [' + s.kind + ' ' + toString(round(s.score, 3)) + ']' AS x ORDER BY s.score DESC, x
       } AS similar,
       c.text AS text;

// name: chunk_keywords
// KET-RAG keywords of a chunk. Terms occurring in its sub-chunks, with their occurrence counts
// (OCCURS_IN.count summed over the sub-chunks) and in how many other chunks they occur.
// params:
//   chunk  string     chunk id
//   limit  int = 30   most rows
MATCH (c:Chunk {id: $chunk})-[:HAS_PART]->(s:SubChunk)<-[o:OCCURS_IN]-(k:Keyword)
WITH c, k, sum(o.count) AS count
RETURN k.term AS keyword, count,
       COUNT { MATCH (k)-[:OCCURS_IN]->(:SubChunk)<-[:HAS_PART]-(x:Chunk) WHERE x <> c RETURN DISTINCT x } AS other_chunks
ORDER BY count DESC, keyword
LIMIT $limit;

// name: keyword_chunks
// Where a KET-RAG keyword occurs. The chunks whose sub-chunks contain it, with counts.
// params:
//   term   string     keyword (lower-case term)
//   limit  int = 20   most rows
MATCH (k:Keyword)-[o:OCCURS_IN]->(s:SubChunk)<-[:HAS_PART]-(c:Chunk)
WHERE k.term = toLower(trim($term))
RETURN k.term AS keyword, c.doc_title AS document, c.id AS chunk, sum(o.count) AS count
ORDER BY count DESC, document
LIMIT $limit;

// name: summary_tree
// E2GraphRAG's summary tree of a document. Top level first, each Summary node with its level,
// position, number of children, the chunks below it and the start of its text. No rows: the
// document has a single chunk (no tree by default) or the summary_tree stage has not run.
// params:
//   document  string   document id, title or source
MATCH (d:Document)
WHERE d.id = $document OR d.title = $document OR d.source = $document
MATCH (s:Summary {doc_id: d.id})
RETURN d.title AS document, s.level AS level, s.ordinal AS ordinal, s.id AS id, s.n_children AS children,
       COUNT { MATCH (s)-[:SUMMARIZES*1..]->(c:Chunk) RETURN DISTINCT c } AS chunks_below,
       s.doc_sha = d.sha256 AS current, left(s.text, 120) AS text
ORDER BY level DESC, ordinal;
