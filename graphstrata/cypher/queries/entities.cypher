// Analysts' queries about entities: find them, trace them back to documents, look around them,
// and connect two of them. Every query is a read; run one with
//   graphstrata cypher NAME --param key=value      (--json for JSON, --show to paste into Browser)
// `$entity` parameters accept an entity id, its name or its normalised name, case-insensitively
// (normalised names are lower-case, without punctuation or a leading article: "north carolina").

// name: find_entities
// Entities whose name matches a search text. Full-text index entity_name_fulltext, Lucene syntax
// (`leland`, `north AND carolina`, `stephen~`); with how often and where they are mentioned.
// params:
//   text   string         Lucene query on entity names
//   limit  int = 20       most rows
CALL db.index.fulltext.queryNodes('entity_name_fulltext', $text, {limit: $limit}) YIELD node AS e, score
RETURN e.id AS id, e.name AS name, e.normalized AS normalized, e.type AS type, round(score, 3) AS score,
       COUNT { (:Chunk)-[:MENTIONS]->(e) } AS chunks,
       COLLECT { MATCH (c:Chunk)-[:MENTIONS]->(e) RETURN DISTINCT c.doc_title ORDER BY c.doc_title }[..5] AS documents
ORDER BY score DESC, chunks DESC, name;

// name: entity_provenance
// Provenance of an entity back to its documents. Every chunk that mentions it, with the document (title, source) the
// chunk comes from, the mention count and surface form recorded on the MENTIONS edge, and the
// Relation nodes (NodeRAG R) and semantic units (NodeRAG S) of that chunk that involve the entity.
// One row per (document, chunk), documents in title order.
// params:
//   entity  string      entity id, name or normalised name
//   limit   int = 100   most rows
MATCH (e:Entity)
WHERE e.id = $entity OR e.normalized = toLower(trim($entity)) OR toLower(e.name) = toLower(trim($entity))
MATCH (d:Document)-[:HAS_CHUNK]->(c:Chunk)-[m:MENTIONS]->(e)
RETURN e.name AS entity, d.title AS document, d.source AS source, d.id AS document_id, c.id AS chunk,
       c.ordinal AS ordinal, m.count AS mentions, m.name AS surface, m.extractor AS extractor,
       COLLECT {
         MATCH (c)-[:HAS_RELATION]->(x:Relation) WHERE (e)-[:SUBJECT_OF]->(x) OR (x)-[:OBJECT]->(e)
         RETURN x.subject + ' ' + x.predicate + ' ' + x.object
       } AS relations,
       COLLECT { MATCH (c)-[:HAS_UNIT]->(u:SemanticUnit)-[:MENTIONS]->(e) RETURN u.text } AS units
ORDER BY document, ordinal
LIMIT $limit;

// name: entity_neighbourhood
// The neighbourhood of an entity across the layers. One row per neighbour: its layer (text,
// knowledge graph, NodeRAG, community, similarity), the relationship type and direction, the
// neighbour's label, id and caption, and the edge's weight (RELATED weight, CO_OCCURS weight,
// SIMILAR or SYNONYM score, MENTIONS count). At most $per_type neighbours per relationship type, strongest
// first, so that a hub does not drown the rarer layers.
// params:
//   entity    string     entity id, name or normalised name
//   per_type  int = 10   most neighbours per relationship type
MATCH (e:Entity)
WHERE e.id = $entity OR e.normalized = toLower(trim($entity)) OR toLower(e.name) = toLower(trim($entity))
MATCH (e)-[r]-(n)
WITH e, type(r) AS rel, CASE WHEN startNode(r) = e THEN 'out' ELSE 'in' END AS direction, n,
     coalesce(r.weight, r.score, r.count) AS weight, r.predicate AS predicate, r.kind AS kind
ORDER BY rel, weight DESC, n.id
WITH e, rel, collect({direction: direction, n: n, weight: weight, predicate: predicate, kind: kind})[..$per_type] AS ns
UNWIND ns AS x
WITH e, rel, x, labels(x.n)[0] AS label
RETURN e.name AS entity,
       CASE
         WHEN label IN ['Document', 'Chunk', 'SubChunk', 'Summary'] THEN 'text'
         WHEN rel = 'SIMILAR' THEN 'similarity'
         WHEN label IN ['Community', 'HighLevel', 'Overview'] THEN 'community'
         WHEN label IN ['SemanticUnit', 'Attribute'] THEN 'noderag'
         ELSE 'knowledge graph'
       END AS layer,
       rel AS relationship, x.direction AS direction, coalesce(x.predicate, x.kind) AS detail, label,
       x.n.id AS id, coalesce(x.n.name, x.n.title, x.n.doc_title, left(x.n.text, 80), x.n.id) AS caption,
       x.weight AS weight
ORDER BY layer, relationship, weight DESC, caption;

// name: entity_relations
// What the knowledge graph asserts about an entity. Its RELATED edges (one per subject, predicate,
// object; weight = number of chunks asserting it) in both directions, with their descriptions.
// params:
//   entity  string     entity id, name or normalised name
//   limit   int = 50   most rows
MATCH (e:Entity)
WHERE e.id = $entity OR e.normalized = toLower(trim($entity)) OR toLower(e.name) = toLower(trim($entity))
MATCH (e)-[r:RELATED]-(o:Entity)
RETURN startNode(r).name AS subject, r.predicate AS predicate, endNode(r).name AS object, r.weight AS weight,
       r.description AS description, r.extractors AS extractors, o.id AS other_id
ORDER BY weight DESC, subject, predicate, object
LIMIT $limit;

// name: shortest_paths
// All shortest paths between two entities. Over the knowledge graph and its provenance (default
// RELATED, SYNONYM and MENTIONS — through the passages and semantic units that mention entities —
// in either direction; up to 8 hops), each as the list of names (a passage's title, a unit's text)
// along it and the relationship types between them. Pass `types` to choose the edges, e.g.
// --param types=RELATED or --param types=RELATED,SIMILAR. No row: not connected within 8 hops.
// (CO_OCCURS joins E2GraphRAG's Term nodes, not entities: see term_cooccurrence.)
// params:
//   source  string                                       entity id, name or normalised name
//   target  string                                       entity id, name or normalised name
//   types   list = ["RELATED", "SYNONYM", "MENTIONS"]    relationship types a path may use
//   limit   int = 10                                     most paths
MATCH (a:Entity)
WHERE a.id = $source OR a.normalized = toLower(trim($source)) OR toLower(a.name) = toLower(trim($source))
MATCH (b:Entity)
WHERE b.id = $target OR b.normalized = toLower(trim($target)) OR toLower(b.name) = toLower(trim($target))
WITH a, b WHERE a <> b
MATCH p = allShortestPaths((a)-[*..8]-(b))
WHERE all(r IN relationships(p) WHERE type(r) IN $types)
RETURN a.name AS source, b.name AS target, length(p) AS hops,
       [n IN nodes(p) | coalesce(n.name, n.doc_title, left(n.text, 60), n.id)] AS path,
       [r IN relationships(p) | type(r) + coalesce(' ' + r.predicate, '')] AS relationships,
       [n IN nodes(p) | n.id] AS ids
LIMIT $limit;

// name: chunks_linking
// Chunks that mention both entities. The knowledge graph's evidence for a pair, with their
// documents and the mention counts of each entity.
// params:
//   source  string     entity id, name or normalised name
//   target  string     entity id, name or normalised name
//   limit   int = 20   most rows
MATCH (a:Entity)
WHERE a.id = $source OR a.normalized = toLower(trim($source)) OR toLower(a.name) = toLower(trim($source))
MATCH (b:Entity)
WHERE b.id = $target OR b.normalized = toLower(trim($target)) OR toLower(b.name) = toLower(trim($target))
MATCH (a)<-[ma:MENTIONS]-(c:Chunk)-[mb:MENTIONS]->(b)
RETURN c.doc_title AS document, c.id AS chunk, c.ordinal AS ordinal, ma.count AS source_mentions,
       mb.count AS target_mentions, left(c.text, 200) AS text
ORDER BY source_mentions + target_mentions DESC, document, ordinal
LIMIT $limit;

// name: important_entities
// NodeRAG's important entities with their attributes. Algorithm 1 (k-core ∪ high betweenness); each with its core number,
// betweenness, mention count and Attribute summary (NodeRAG A).
// params:
//   limit  int = 25   most rows
MATCH (e:Entity {important: true})
OPTIONAL MATCH (e)-[:HAS_ATTRIBUTE]->(a:Attribute)
RETURN e.name AS entity, e.type AS type, e.core_number AS core_number, round(e.betweenness, 2) AS betweenness,
       COUNT { (:Chunk)-[:MENTIONS]->(e) } AS chunks, a.text AS attribute, e.id AS id
ORDER BY betweenness DESC, core_number DESC, entity
LIMIT $limit;

// name: term_cooccurrence
// E2GraphRAG's term layer around a word. The Term (a spaCy named entity or common noun, by
// normalised name) and the terms it shares sentences with (CO_OCCURS weight = shared sentences),
// strongest first, with how many chunks hold each.
// params:
//   term   string     normalised name, e.g. "film" or "stephen king"
//   limit  int = 20   most rows
MATCH (t:Term {normalized: toLower(trim($term))})-[x:CO_OCCURS]-(o:Term)
RETURN t.name AS term, o.name AS other, o.type AS type, x.weight AS sentences,
       COUNT { (:Chunk)-[:HAS_TERM]->(o) } AS chunks
ORDER BY sentences DESC, other
LIMIT $limit;
