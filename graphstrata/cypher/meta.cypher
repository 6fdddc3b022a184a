// Statements about the graph as a whole: the meta node, schema inspection, counts.

// name: vector_indexes
// Existing vector indexes with their sizes, to refuse a model of another dimension.
SHOW VECTOR INDEXES YIELD name, labelsOrTypes, properties, options
RETURN name, labelsOrTypes AS labels, options.indexConfig.`vector.dimensions` AS dim;

// name: get_meta
MATCH (m:GraphStrata {id: 'meta'})
RETURN m.embed_model AS embed_model, m.embed_dim AS embed_dim, m.updated_at AS updated_at,
       m.schema_version AS schema_version, m.embed_precision AS embed_precision;

// name: init_meta
// Records which embedding model (and the precision of its encoder for stored texts) the graph's
// vectors come from (first writer wins).
MERGE (m:GraphStrata {id: 'meta'})
ON CREATE SET m.embed_model = $embed_model, m.embed_dim = $dim, m.schema_version = $schema_version,
              m.embed_precision = $precision, m.created_at = datetime(), m.updated_at = datetime()
RETURN m.embed_model AS embed_model, m.embed_dim AS embed_dim;

// name: set_schema_version
// Called once the graph is known to fit this version (empty, or built by it).
MATCH (m:GraphStrata {id: 'meta'})
SET m.schema_version = $schema_version;

// name: old_entity_layer
// A graph of schema 1: spaCy co-occurrence edges between Entity nodes.
RETURN EXISTS { MATCH (:Entity)-[:CO_OCCURS]->(:Entity) } AS old;

// name: touch
// Marks the graph as changed, so that cached GDS projections older than this are rebuilt.
MERGE (m:GraphStrata {id: 'meta'})
SET m.updated_at = datetime();

// name: await_indexes
CALL db.awaitIndexes($seconds);

// name: label_counts
// Nodes per label and relationships per type, for `graphstrata stats`.
// (Dynamic labels/types in a plain count are answered from Neo4j's count store, without a scan;
// tokens of labels and types that no longer have any node or relationship are left out.)
CALL db.labels() YIELD label
CALL (label) { MATCH (n:$(label)) RETURN count(n) AS n }
WITH label, n WHERE n > 0
RETURN label, n ORDER BY label;

// name: rel_counts
CALL db.relationshipTypes() YIELD relationshipType AS type
CALL (type) { MATCH ()-[r:$(type)]->() RETURN count(r) AS n }
WITH type, n WHERE n > 0
RETURN type, n ORDER BY type;

// name: wipe_relationships
// Deletes every relationship, in batches (Database.wipe, before wipe): a node's DETACH DELETE takes all
// its relationships in one transaction, which for an entity of a large corpus (tens of thousands of
// MENTIONS) exceeds the transaction memory limit.
MATCH ()-[r]->() CALL (r) { DELETE r } IN TRANSACTIONS OF 10000 ROWS;

// name: wipe
// Deletes every node (and any relationship written since wipe_relationships), in batches.
MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS;

// name: node_type_properties
// Property keys per label combination, as the database has them (the text-to-Cypher prompt).
CALL db.schema.nodeTypeProperties() YIELD nodeType, propertyName
RETURN nodeType, collect(propertyName) AS properties ORDER BY nodeType;

// name: rel_type_properties
// Property keys per relationship type (the text-to-Cypher prompt).
CALL db.schema.relTypeProperties() YIELD relType, propertyName
RETURN relType, collect(propertyName) AS properties ORDER BY relType;

// name: get_extraction_schema
// The extraction schema the graph's LLM extractions were made with (JSON and fingerprint), if recorded.
MATCH (m:GraphStrata {id: 'meta'})
RETURN m.extraction_schema AS schema, m.extraction_schema_fingerprint AS fingerprint;

// name: set_extraction_schema
// Records the extraction schema of an LLM ingest (replaced only by an ingest allowed to change it).
MERGE (m:GraphStrata {id: 'meta'})
SET m.extraction_schema = $schema, m.extraction_schema_fingerprint = $fingerprint, m.updated_at = datetime();

// name: chunk_titles
// The document title of each chunk id (evidence printed with its source).
MATCH (c:Chunk) WHERE c.id IN $ids
RETURN c.id AS id, c.doc_title AS title;

// name: version
// When the stored graph last changed (in-memory walk graphs are read again after it moves).
OPTIONAL MATCH (m:GraphStrata {id: 'meta'})
RETURN m.updated_at AS version;

// name: online_indexes
// The indexes queries can use now (a retriever checks for the ones it needs).
SHOW INDEXES YIELD name, state WHERE state = 'ONLINE'
RETURN name;
