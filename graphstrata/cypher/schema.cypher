// The graph model's schema, applied in file order by `graphstrata init` and before the first write.
// Every statement is idempotent (IF NOT EXISTS). Vector sizes come from the embedding model ($dim);
// quantisation is off: at our scale exact cosine scores matter more than index memory.

// name: meta_constraint
// One (:GraphStrata {id: 'meta'}) node records the embedding model and the last write time.
CREATE CONSTRAINT graphstrata_meta_id IF NOT EXISTS FOR (n:GraphStrata) REQUIRE n.id IS UNIQUE;

// name: document_id
// Stable ids (content hashes) make re-ingesting the same text a no-op.
CREATE CONSTRAINT document_id IF NOT EXISTS FOR (n:Document) REQUIRE n.id IS UNIQUE;

// name: chunk_id
// Stable ids (content hashes) make re-ingesting the same text a no-op.
CREATE CONSTRAINT chunk_id IF NOT EXISTS FOR (n:Chunk) REQUIRE n.id IS UNIQUE;

// name: sub_chunk_id
// Stable ids (content hashes) make re-ingesting the same text a no-op.
CREATE CONSTRAINT sub_chunk_id IF NOT EXISTS FOR (n:SubChunk) REQUIRE n.id IS UNIQUE;

// name: entity_id
// Stable ids (content hashes) make re-ingesting the same text a no-op.
CREATE CONSTRAINT entity_id IF NOT EXISTS FOR (n:Entity) REQUIRE n.id IS UNIQUE;

// name: term_id
// E2GraphRAG's spaCy term layer (named entities and common nouns), apart from the KG's entities.
CREATE CONSTRAINT term_id IF NOT EXISTS FOR (n:Term) REQUIRE n.id IS UNIQUE;

// name: relation_id
// Stable ids (content hashes) make re-ingesting the same text a no-op.
CREATE CONSTRAINT relation_id IF NOT EXISTS FOR (n:Relation) REQUIRE n.id IS UNIQUE;

// name: semantic_unit_id
// Stable ids (content hashes) make re-ingesting the same text a no-op.
CREATE CONSTRAINT semantic_unit_id IF NOT EXISTS FOR (n:SemanticUnit) REQUIRE n.id IS UNIQUE;

// name: attribute_id
// Stable ids (content hashes) make re-ingesting the same text a no-op.
CREATE CONSTRAINT attribute_id IF NOT EXISTS FOR (n:Attribute) REQUIRE n.id IS UNIQUE;

// name: community_id
// Stable ids (content hashes) make re-ingesting the same text a no-op.
CREATE CONSTRAINT community_id IF NOT EXISTS FOR (n:Community) REQUIRE n.id IS UNIQUE;

// name: high_level_id
// Stable ids (content hashes) make re-ingesting the same text a no-op.
CREATE CONSTRAINT high_level_id IF NOT EXISTS FOR (n:HighLevel) REQUIRE n.id IS UNIQUE;

// name: overview_id
// Stable ids (content hashes) make re-ingesting the same text a no-op.
CREATE CONSTRAINT overview_id IF NOT EXISTS FOR (n:Overview) REQUIRE n.id IS UNIQUE;

// name: summary_id
// Stable ids (content hashes) make re-ingesting the same text a no-op.
CREATE CONSTRAINT summary_id IF NOT EXISTS FOR (n:Summary) REQUIRE n.id IS UNIQUE;

// name: keyword_id
// Stable ids (content hashes) make re-ingesting the same text a no-op.
CREATE CONSTRAINT keyword_id IF NOT EXISTS FOR (n:Keyword) REQUIRE n.id IS UNIQUE;

// name: chunk_embedding
CREATE VECTOR INDEX chunk_embedding IF NOT EXISTS FOR (n:Chunk) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine', `vector.quantization.enabled`: false}};

// name: sub_chunk_embedding
CREATE VECTOR INDEX sub_chunk_embedding IF NOT EXISTS FOR (n:SubChunk) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine', `vector.quantization.enabled`: false}};

// name: entity_embedding
CREATE VECTOR INDEX entity_embedding IF NOT EXISTS FOR (n:Entity) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine', `vector.quantization.enabled`: false}};

// name: entity_description_embedding
// KET-RAG's seeds: "name: description" of entities an LLM or the user described (augment stage
// entity_descriptions).
CREATE VECTOR INDEX entity_description_embedding IF NOT EXISTS FOR (n:Entity) ON (n.description_embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine', `vector.quantization.enabled`: false}};

// name: relation_embedding
CREATE VECTOR INDEX relation_embedding IF NOT EXISTS FOR (n:Relation) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine', `vector.quantization.enabled`: false}};

// name: semantic_unit_embedding
CREATE VECTOR INDEX semantic_unit_embedding IF NOT EXISTS FOR (n:SemanticUnit) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine', `vector.quantization.enabled`: false}};

// name: attribute_embedding
CREATE VECTOR INDEX attribute_embedding IF NOT EXISTS FOR (n:Attribute) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine', `vector.quantization.enabled`: false}};

// name: high_level_embedding
CREATE VECTOR INDEX high_level_embedding IF NOT EXISTS FOR (n:HighLevel) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine', `vector.quantization.enabled`: false}};

// name: summary_embedding
CREATE VECTOR INDEX summary_embedding IF NOT EXISTS FOR (n:Summary) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine', `vector.quantization.enabled`: false}};

// name: keyword_embedding
CREATE VECTOR INDEX keyword_embedding IF NOT EXISTS FOR (n:Keyword) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'cosine', `vector.quantization.enabled`: false}};

// name: entity_name_fulltext
CREATE FULLTEXT INDEX entity_name_fulltext IF NOT EXISTS FOR (n:Entity) ON EACH [n.name, n.normalized];

// name: overview_title_fulltext
CREATE FULLTEXT INDEX overview_title_fulltext IF NOT EXISTS FOR (n:Overview) ON EACH [n.title];

// name: chunk_text_fulltext
CREATE FULLTEXT INDEX chunk_text_fulltext IF NOT EXISTS FOR (n:Chunk) ON EACH [n.text, n.doc_title];

// name: keyword_term_fulltext
CREATE FULLTEXT INDEX keyword_term_fulltext IF NOT EXISTS FOR (n:Keyword) ON EACH [n.term];

// name: document_source
CREATE INDEX document_source IF NOT EXISTS FOR (n:Document) ON (n.source);

// name: document_sha256
// A new document's content hash is looked up at ingest (the same text under another identity).
CREATE INDEX document_sha256 IF NOT EXISTS FOR (n:Document) ON (n.sha256);

// name: entity_normalized
CREATE INDEX entity_normalized IF NOT EXISTS FOR (n:Entity) ON (n.normalized);

// name: term_normalized
CREATE INDEX term_normalized IF NOT EXISTS FOR (n:Term) ON (n.normalized);
