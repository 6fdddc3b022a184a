// graphstrata starter queries for Neo4j Browser.
//
// Load the style sheet first (`graphstrata browser` prints the `:style …` line), then paste one
// query at a time into the editor (Ctrl/Cmd+Enter runs it) and press the star to keep it under
// Favorites. Each query is self-contained: the values to change are on its first lines (`WITH … AS`),
// so no parameters need setting. All of them only read.
// Tabular queries with parameters live in graphstrata/cypher/queries/ (`graphstrata cypher --list`).

// 1. The data model, drawn from the live database
CALL db.schema.visualization();

// 2. Layer sizes: nodes per label, relationships per type
CALL db.labels() YIELD label
CALL (label) { MATCH (n) WHERE label IN labels(n) RETURN count(n) AS nodes }
RETURN label, nodes ORDER BY label;

// 3. An entity across the layers: its documents and chunks (text layer), relations and
//    co-occurring entities (knowledge graph), semantic units and attribute (NodeRAG), community
WITH 'leland' AS name
MATCH (e:Entity) WHERE e.normalized = toLower(name)
OPTIONAL MATCH text = (:Document)-[:HAS_CHUNK]->(:Chunk)-[:MENTIONS]->(e)
OPTIONAL MATCH kg = (e)-[:RELATED|CO_OCCURS]-(:Entity)
OPTIONAL MATCH nr = (e)<-[:MENTIONS]-(:SemanticUnit)
OPTIONAL MATCH attr = (e)-[:HAS_ATTRIBUTE]->(:Attribute)
OPTIONAL MATCH comm = (e)-[:IN_COMMUNITY]->(:Community)
RETURN e, collect(DISTINCT text) AS text, collect(DISTINCT kg)[..25] AS kg, collect(DISTINCT nr) AS units,
       collect(DISTINCT attr) AS attribute, collect(DISTINCT comm) AS community;

// 4. Provenance: every document and chunk an entity comes from
WITH 'north carolina' AS name
MATCH p = (:Document)-[:HAS_CHUNK]->(:Chunk)-[:MENTIONS]->(e:Entity)
WHERE e.normalized = toLower(name)
RETURN p;

// 5. How two entities are connected: shortest paths over relations, synonyms and the passages
//    that mention them, with the chunks that mention the entities on the way
WITH 'stephen king' AS a, 'leland' AS b
MATCH (x:Entity {normalized: a}), (y:Entity {normalized: b})
MATCH p = allShortestPaths((x)-[:RELATED|SYNONYM|MENTIONS*..6]-(y))
WITH p LIMIT 5
UNWIND nodes(p) AS n
OPTIONAL MATCH evidence = (:Chunk)-[:MENTIONS]->(n)
RETURN p, collect(evidence)[..10] AS evidence;

// 6. A document through all its layers: chunks, KET-RAG sub-chunks and top keywords, Relation
//    nodes and semantic units, and the entities they mention
WITH 'Leland, North Carolina' AS title
MATCH (d:Document {title: title})-[hc:HAS_CHUNK]->(c:Chunk)
OPTIONAL MATCH part = (c)-[:HAS_PART]->(:SubChunk)
OPTIONAL MATCH unit = (c)-[:HAS_UNIT]->(:SemanticUnit)-[:MENTIONS]->(:Entity)
OPTIONAL MATCH rel = (c)-[:HAS_RELATION]->(:Relation)-[:OBJECT]->(:Entity)
OPTIONAL MATCH kw = (c)-[:HAS_PART]->(:SubChunk)<-[:OCCURS_IN]-(:Keyword)
RETURN d, hc, c, collect(DISTINCT part) AS parts, collect(DISTINCT unit)[..30] AS units,
       collect(DISTINCT rel)[..20] AS relations, collect(DISTINCT kw)[..15] AS keywords;

// 7. NodeRAG's community layer: the largest communities with their HighLevel summary, Overview
//    title and a few member entities
MATCH (c:Community)
WITH c ORDER BY c.size DESC LIMIT 5
OPTIONAL MATCH summary = (:Overview)-[:TITLES]->(:HighLevel)-[:OF_COMMUNITY]->(c)
CALL (c) {
  MATCH m = (:Entity)-[:IN_COMMUNITY]->(c)
  RETURN collect(m)[..8] AS members
}
RETURN c, summary, members;

// 8. KET-RAG core chunks: the chunks with the highest PageRank on the chunk KNN graph, and the
//    SIMILAR edges among them (kind semantic or lexical)
MATCH (c:Chunk) WHERE c.is_core
WITH c ORDER BY c.pagerank DESC LIMIT 12
WITH collect(c) AS core
UNWIND core AS a
OPTIONAL MATCH knn = (a)-[:SIMILAR]->(b:Chunk) WHERE b IN core
RETURN a, collect(knn) AS knn;

// 9. The semantic neighbourhood of a chunk: its KNN chunk graph (SIMILAR), DA-RAG chunk edges
//    (CHUNK_RELATED) and NodeRAG semantic edges (SEMANTIC)
WITH 'Maximum Overdrive' AS title
MATCH (c:Chunk {doc_title: title})
OPTIONAL MATCH s = (c)-[:SIMILAR|CHUNK_RELATED|SEMANTIC]-(other)
RETURN c, collect(s)[..30] AS neighbours;

// 10. E2GraphRAG's summary tree of a document (documents of one chunk have none)
WITH 'Leland, North Carolina' AS title
MATCH (d:Document {title: title})
MATCH tree = (s:Summary {doc_id: d.id})-[:SUMMARIZES*1..]->(:Chunk)
WHERE NOT EXISTS { (:Summary)-[:SUMMARIZES]->(s) }
RETURN d, tree;

// 11. What a retrieval result touched: paste the node ids of `graphstrata ask … --json`
//     (retrieval.items[].node_id) into the list; shows the nodes, their links, and their chunks
WITH ['paste', 'node', 'ids'] AS ids
MATCH (n) WHERE n.id IN ids
WITH collect(n) AS ns
UNWIND ns AS a
OPTIONAL MATCH link = (a)-[]->(b) WHERE b IN ns
OPTIONAL MATCH source = (:Chunk)-[:HAS_UNIT|HAS_RELATION|HAS_PART]->(a)
RETURN a, collect(DISTINCT link) AS links, collect(DISTINCT source) AS sources;

// 12. Important entities (NodeRAG Algorithm 1) and their attribute summaries
MATCH p = (e:Entity {important: true})-[:HAS_ATTRIBUTE]->(:Attribute)
RETURN p ORDER BY e.betweenness DESC LIMIT 20;
