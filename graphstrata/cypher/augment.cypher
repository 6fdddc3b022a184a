// Writes and reads of the augmentation stages (graphstrata/augment/). Each stage first removes
// what it wrote before, so re-running it replaces rather than duplicates.

// name: similar_pairs
// The similarity edges of one kind between nodes of one label (each pair stored once, from the smaller id).
MATCH (a:$($label))-[r:SIMILAR {kind: $kind}]->(b)
RETURN a.id AS a, b.id AS b, r.score AS score;

// name: delete_similar_pairs
UNWIND $rows AS r
MATCH (a {id: r.a}) WHERE a:Chunk OR a:Entity
MATCH (a)-[s:SIMILAR {kind: $kind}]->(b {id: r.b})
DELETE s;

// name: write_similar
// (Labels are matched with OR, not a dynamic label: that way each lookup is a unique-index seek.)
UNWIND $rows AS r
MATCH (a {id: r.a}) WHERE a:Chunk OR a:Entity
MATCH (b {id: r.b}) WHERE b:Chunk OR b:Entity
MERGE (a)-[s:SIMILAR {kind: $kind}]->(b)
SET s.score = r.score;

// name: knn_pairs
// The pairs GDS KNN streamed (through the graphdatascience client: GDS node ids, which in graphstrata's
// projections are the nodes' id()), by our ids; score = the cosine, not GDS's (1+cos)/2.
UNWIND $rows AS r
MATCH (a) WHERE id(a) = r.node1
MATCH (b) WHERE id(b) = r.node2
RETURN a.id AS a, b.id AS b, 2 * r.similarity - 1 AS score;

// name: chunk_keywords
// (chunk, keyword) incidence for lexical similarity (KET-RAG §5.1: shared keywords).
MATCH (c:Chunk)-[:HAS_PART]->(:SubChunk)<-[:OCCURS_IN]-(k:Keyword)
RETURN DISTINCT c.id AS chunk, k.id AS keyword;

// name: pagerank_chunks
// PageRank's streamed scores (GDS node id = id()) by chunk id.
UNWIND $rows AS r
MATCH (n) WHERE id(n) = r.nodeId
RETURN n.id AS id, r.score AS score;

// name: set_core_chunks
// PageRank score on every chunk, is_core on the top beta share (KET-RAG §5.1).
UNWIND $rows AS r
MATCH (c:Chunk {id: r.id})
SET c.pagerank = r.score, c.is_core = r.core;

// name: important_entities
// The entities among the important nodes of G1 chosen from k-core's and betweenness's streams
// (GDS node id = id()): only these few are read back, not every node's core and score.
UNWIND $rows AS r
MATCH (n:Entity) WHERE id(n) = r.nodeId
RETURN n.id AS id, r.nodeId AS node;

// name: entity_context
// What an attribute summary is made from (NodeRAG §2.3): an entity's relations and semantic units, by
// id (not store order, so re-runs summarise the same statements), the first $cap of each kind.
UNWIND $ids AS id
MATCH (e:Entity {id: id})
RETURN e.id AS id, e.name AS name,
       COLLECT { MATCH (u:SemanticUnit)-[:MENTIONS]->(e) WITH DISTINCT u ORDER BY u.id
                 RETURN u {.text, .embedding} LIMIT $cap } AS units,
       COLLECT { MATCH (e)-[:SUBJECT_OF|OBJECT]-(r:Relation) WITH DISTINCT r ORDER BY r.id
                 RETURN r {.text, .embedding} LIMIT $cap } AS relations;

// name: delete_label
CALL (*) {
  MATCH (n:$($label))
  DETACH DELETE n
} IN TRANSACTIONS OF 5000 ROWS;

// name: clear_important
MATCH (e:Entity) WHERE e.important IS NOT NULL
REMOVE e.important, e.core_number, e.betweenness;

// name: write_attributes
UNWIND $rows AS r
MATCH (e:Entity {id: r.entity})
SET e.important = true, e.core_number = r.core, e.betweenness = r.betweenness
MERGE (a:Attribute {id: r.id})
SET a.text = r.text, a.extractor = r.extractor, a.entity_name = e.name
MERGE (e)-[:HAS_ATTRIBUTE]->(a)
WITH a, r
CALL db.create.setNodeVectorProperty(a, 'embedding', r.embedding);

// name: leiden_members
// Leiden's streamed communities (GDS node id = id()) by node id.
UNWIND $rows AS r
MATCH (n) WHERE id(n) = r.nodeId
RETURN n.id AS id, labels(n)[0] AS label, r.communityId AS community;

// name: write_communities
UNWIND $rows AS r
MERGE (c:Community {id: r.id})
SET c.level = 0, c.size = r.size;

// name: write_membership
UNWIND $rows AS r
MATCH (c:Community {id: r.community})
MATCH (n {id: r.id}) WHERE n:Entity OR n:SemanticUnit OR n:Relation OR n:Attribute
MERGE (n)-[:IN_COMMUNITY]->(c);

// name: community_members
// Texts (the first $cap by id) and entity names (best-connected first, ties by name) of one batch of
// communities, for their high-level elements: in a fixed order, so re-runs write the same summaries and
// titles. Connected counts the edges of G2, the graph Leiden ran on (MENTIONS, SUBJECT_OF, OBJECT,
// HAS_ATTRIBUTE): the SIMILAR and SYNONYM edges the other augment lane writes meanwhile must not
// reorder them.
UNWIND $ids AS cid
MATCH (c:Community {id: cid})
RETURN c.id AS id,
       COLLECT { MATCH (u)-[:IN_COMMUNITY]->(c) WHERE u:SemanticUnit OR u:Attribute
                 WITH u ORDER BY u.id RETURN u {.id, .text, .embedding} LIMIT $cap } AS texts,
       COLLECT { MATCH (e:Entity)-[:IN_COMMUNITY]->(c)
                 WITH e ORDER BY COUNT { (e)-[:MENTIONS|SUBJECT_OF|OBJECT|HAS_ATTRIBUTE]-() } DESC, e.name, e.id
                 RETURN e.name LIMIT 5 } AS names;

// name: write_high_level
UNWIND $rows AS r
MATCH (c:Community {id: r.community})
MERGE (h:HighLevel {id: r.id})
SET h.text = r.text, h.extractor = r.extractor
MERGE (h)-[:OF_COMMUNITY]->(c)
MERGE (o:Overview {id: r.overview_id})
SET o.title = r.title, o.extractor = r.extractor
MERGE (o)-[:TITLES]->(h)
WITH h, r
CALL db.create.setNodeVectorProperty(h, 'embedding', r.embedding);

// name: kmeans_members
// K-means's streamed clusters (GDS node id = id()) with each node's Leiden community.
UNWIND $rows AS r
MATCH (n) WHERE id(n) = r.nodeId
OPTIONAL MATCH (n)-[:IN_COMMUNITY]->(c:Community)
OPTIONAL MATCH (n)-[:OF_COMMUNITY]->(hc:Community)
RETURN n.id AS id, labels(n)[0] AS label, r.communityId AS cluster, coalesce(c.id, hc.id) AS community;

// name: delete_groups
MATCH (:HighLevel)-[g:GROUPS]->() DELETE g;

// name: write_groups
UNWIND $rows AS r
MATCH (h:HighLevel {id: r.h})
MATCH (n {id: r.n}) WHERE n:SemanticUnit OR n:Attribute
MERGE (h)-[:GROUPS]->(n);

// name: similar_new
// The nodes of a similarity layer's label that have an embedding and no edge of the layer: new since it
// was written, as after a full run every node has its own k (graphstrata/augment/knn_index.py).
MATCH (n:$($label)) WHERE n.embedding IS NOT NULL AND NOT EXISTS { (n)-[:SIMILAR {kind: $kind}]-() }
RETURN n.id AS id, n.embedding AS embedding;

// name: similar_lists
// Every stored pair of the nodes $ids in a similarity layer, from either end.
UNWIND $ids AS id
MATCH (y:$($label) {id: id})-[r:SIMILAR {kind: $kind}]-(z)
RETURN id AS a, z.id AS b, r.score AS score;

// name: semantic_edges_new
// As similar_new, for NodeRAG's semantic edges among $labels.
MATCH (n:$any($labels)) WHERE n.embedding IS NOT NULL AND NOT EXISTS { (n)-[:SEMANTIC]-() }
RETURN n.id AS id, n.embedding AS embedding;

// name: semantic_edges_lists
UNWIND $ids AS id
MATCH (y {id: id})-[r:SEMANTIC]-(z) WHERE y:Chunk OR y:SemanticUnit OR y:Attribute OR y:HighLevel
RETURN id AS a, z.id AS b, r.score AS score;

// name: index_neighbours
// Each row's nearest nodes in the vector index $index (the new nodes of a top-k layer; the index holds
// them too). The index scores (1 + cosine) / 2; the layers store the cosine.
UNWIND $rows AS r
CALL (r) {
  CALL db.index.vector.queryNodes($index, $candidates, r.embedding) YIELD node, score
  WITH node, score WHERE node.id <> r.id
  RETURN node, score ORDER BY score DESC LIMIT $candidates
}
RETURN r.id AS a, node.id AS b, 2 * score - 1 AS score;

// name: similar_linked
// How many nodes of the label have an edge of the layer (graphstrata/augment/knn_index.py).
MATCH (n:$($label)) WHERE EXISTS { (n)-[:SIMILAR {kind: $kind}]-() }
RETURN count(n) AS n;

// name: semantic_edges_linked
MATCH (n:$any($labels)) WHERE EXISTS { (n)-[:SEMANTIC]-() }
RETURN count(n) AS n;

// name: chunk_keyword_lists
// Each chunk's keywords (the incidence of chunk_keywords, a list per chunk: graphstrata/augment/knn_index.py).
MATCH (c:Chunk)-[:HAS_PART]->(:SubChunk)<-[:OCCURS_IN]-(k:Keyword)
RETURN c.id AS chunk, collect(DISTINCT k.id) AS keywords;

// name: semantic_edges_pairs
MATCH (a)-[r:SEMANTIC]->(b)
RETURN a.id AS a, b.id AS b, r.score AS score;

// name: delete_semantic_edges_pairs
UNWIND $rows AS r
MATCH (a {id: r.a}) WHERE a:Chunk OR a:SemanticUnit OR a:Attribute OR a:HighLevel
MATCH (a)-[s:SEMANTIC]->(b {id: r.b})
DELETE s;

// name: embedded_count
// How many nodes with $labels have an embedding (the similarity layers choose exact or GDS KNN by it).
MATCH (n:$any($labels)) WHERE n.embedding IS NOT NULL
RETURN count(n) AS n;

// name: embedded_nodes
// The nodes with $labels that have an embedding, by id (HNSW's insertion order is then seeded, not
// the store's): a page of $limit after the id $after (graphstrata/augment/similarity.py `embedded`
// reads them page by page, so neither heap holds every vector as a list at once).
MATCH (n:$any($labels)) WHERE n.embedding IS NOT NULL AND n.id > $after
RETURN n.id AS id, n.embedding AS embedding
ORDER BY id
LIMIT $limit;

// name: write_semantic_edges
UNWIND $rows AS r
MATCH (a {id: r.a}) WHERE a:Chunk OR a:SemanticUnit OR a:Attribute OR a:HighLevel
MATCH (b {id: r.b}) WHERE b:Chunk OR b:SemanticUnit OR b:Attribute OR b:HighLevel
MERGE (a)-[s:SEMANTIC]->(b)
SET s.score = r.score;

// name: chunk_related_pairs
// DA-RAG's chunk layer as stored (graphstrata/augment/similarity.py replace_edges keeps it equal to
// what darag_chunk_edges computes): each pair from its smaller id, its weight as the score.
MATCH (a:Chunk)-[r:CHUNK_RELATED]->(b:Chunk)
RETURN a.id AS a, b.id AS b, r.weight AS score;

// name: delete_chunk_related_pairs
UNWIND $rows AS r
MATCH (:Chunk {id: r.a})-[s:CHUNK_RELATED]->(:Chunk {id: r.b})
DELETE s;

// name: chunk_ids
MATCH (c:Chunk)
RETURN c.id AS id;

// name: chunk_mentions
// DA-RAG §4.1's chunk-layer inputs (graphstrata/algorithms/chunk_links.py): which chunk mentions which entity.
MATCH (c:Chunk)-[:MENTIONS]->(e:Entity)
RETURN c.id AS chunk, e.id AS entity;

// name: entity_relations
// One row per KG relation (a pair related by two predicates: two rows).
MATCH (a:Entity)-[:RELATED]->(b:Entity)
RETURN a.id AS source, b.id AS target;

// name: write_chunk_related
// DA-RAG §4.1: chunks c_i, c_j are linked when a KG relation joins an entity of c_i to one of c_j
// (weight: the number of such links); stored once, from the smaller id.
UNWIND $rows AS r
MATCH (a:Chunk {id: r.a}), (b:Chunk {id: r.b})
MERGE (a)-[s:CHUNK_RELATED]->(b)
SET s.weight = r.score;

// name: label_present
RETURN EXISTS { MATCH (n:$($label)) } AS present;

// name: chunk_core_flags
MATCH (c:Chunk)
RETURN c.id AS id, coalesce(c.is_core, false) AS core, c.text AS text;

// name: entities_for_resolution
// Every knowledge-graph entity with what entity resolution compares: names, type, name embedding.
MATCH (e:Entity)
RETURN e.id AS id, e.name AS name, e.normalized AS normalized, e.type AS type, e.embedding AS embedding
ORDER BY e.id;

// name: delete_synonyms
CALL (*) {
  MATCH (:Entity)-[r:SYNONYM]->(:Entity)
  DELETE r
} IN TRANSACTIONS OF 10000 ROWS;

// name: write_synonyms
// Entity resolution: one SYNONYM link per pair (stored from the smaller id), its best score and the
// rules that found it (qualifier, acronym, embedding).
UNWIND $rows AS r
MATCH (a:Entity {id: r.a}), (b:Entity {id: r.b})
MERGE (a)-[s:SYNONYM]->(b)
SET s.score = r.score, s.rules = r.rules;

// name: chunk_attribute_state
// DA-RAG §4.1: each chunk's title and description (from extraction), who wrote them, and the key of
// the text its attribute vector was last computed from.
MATCH (c:Chunk) WHERE c.id IS NOT NULL
RETURN c.id AS id, c.title AS title, c.description AS description, c.extractor AS extractor,
       c.attribute_key AS key;

// name: write_chunk_attributes
UNWIND $rows AS row
MATCH (c:Chunk {id: row.id})
SET c.attribute_embedding = row.embedding, c.attribute_key = row.key;

// name: clear_chunk_attributes
UNWIND $ids AS id
MATCH (c:Chunk {id: id})
REMOVE c.attribute_embedding, c.attribute_key;

// name: entity_description_state
// KET-RAG seeds: each entity's descriptions written by an LLM or the user (most asserted first, as
// set_entities orders them) and the key of the text its description vector was computed from.
MATCH (e:Entity) WHERE e.id IS NOT NULL
RETURN e.id AS id, e.name AS name, e.description_key AS key,
       COLLECT {
         MATCH (:Chunk)-[m:MENTIONS]->(e)
         WHERE m.extractor IN ['llm', 'user'] AND m.description IS NOT NULL
         WITH m.description AS d, count(*) AS k ORDER BY k DESC, d
         RETURN d LIMIT $max_descriptions
       } AS descriptions;

// name: write_entity_descriptions
UNWIND $rows AS row
MATCH (e:Entity {id: row.id})
SET e.description_embedding = row.embedding, e.description_key = row.key;

// name: clear_entity_descriptions
UNWIND $ids AS id
MATCH (e:Entity {id: id})
REMOVE e.description_embedding, e.description_key;

// name: layer_state
// How a similarity layer was last built (graphstrata/augment/knn_incremental.py): e.g. "exact:5", so an
// augment after a small ingest may update it in place only if it was built with the same k.
MATCH (m:GraphStrata {id: 'meta'})
RETURN m['layer_' + $layer] AS state;

// name: set_layer_state
MERGE (m:GraphStrata {id: 'meta'})
SET m['layer_' + $layer] = $state;

// name: corpus_change
// How much of the corpus a whole-graph stage has not seen (graphstrata/augment/deferral.py): the chunks
// of documents ingested at or after $since (epoch ms; new and replaced documents), the chunks now, and
// the database's clock (the next run's $since).
OPTIONAL MATCH (d:Document) WHERE d.ingested_at >= datetime({epochMillis: $since})
OPTIONAL MATCH (d)-[:HAS_CHUNK]->(c:Chunk)
WITH count(c) AS fresh
RETURN fresh, COUNT { (c:Chunk) } AS chunks, datetime().epochMillis AS now;

// name: corpus_now
// What a whole-graph stage starting now sees (graphstrata/augment/deferral.py): the chunks and the
// database's clock.
RETURN COUNT { (c:Chunk) } AS chunks, datetime().epochMillis AS now;
