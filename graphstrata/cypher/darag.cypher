// DA-RAG retrieval (graphstrata/retrieval/darag.py): the layers the coarse and fine
// embedding-attributed community searches (EACS, §4–5 of the paper) run on, read whole once per graph
// version (graphstrata/retrieval/darag_layers.py). The k-truss decomposition and Q-Peel themselves run
// in Python (graphstrata/algorithms/).

// name: entity_layer_nodes
// The entities for graphstrata/retrieval/darag_layers.py (read once per graph version; §4's working
// subgraph V_work is cut from them per question): name, type and description for the community
// reports, and the name embedding that is the entity's attribute in L_KG and L_S.
MATCH (e:Entity) WHERE e.id IS NOT NULL
RETURN e.id AS id, e.name AS name, e.type AS type, e.description AS description, e.embedding AS embedding;

// name: entity_layer_mentions
// E_inter: which chunks mention which entities (V_work = the entities mentioned by the chunks of H_C).
MATCH (c:Chunk)-[:MENTIONS]->(e:Entity) WHERE c.id IS NOT NULL AND e.id IS NOT NULL
RETURN c.id AS chunk, e.id AS entity;

// name: entity_layer_related
// The KG layer L_KG: every RELATED edge (parallel predicates are separate rows).
MATCH (a:Entity)-[x:RELATED]->(b:Entity) WHERE a.id IS NOT NULL AND b.id IS NOT NULL
RETURN a.id AS a, b.id AS b, x.predicate AS predicate, x.description AS description;

// name: entity_layer_similar
// The similarity layer L_S: the SIMILAR {kind: 'semantic'} edges of augment stage entity_similarity
// (each entity's KNN list, §4.1). The layer stores a pair once (from the smaller id), so the caller
// reads every edge from both ends: reading only outgoing edges lost the neighbours stored from the other.
MATCH (a:Entity)-[s:SIMILAR {kind: 'semantic'}]->(b:Entity) WHERE a.id IS NOT NULL AND b.id IS NOT NULL
RETURN a.id AS a, b.id AS b, s.score AS score;

// name: chunk_layer_nodes
// The Semantic Chunk Layer L_C for graphstrata/retrieval/darag_layers.py (read once per graph
// version): every chunk with its text embedding and its attribute (title + description embedding,
// null until augment's darag_chunk_attributes made one).
MATCH (c:Chunk) WHERE c.id IS NOT NULL AND c.embedding IS NOT NULL
RETURN c.id AS id, c.doc_title AS doc_title, c.embedding AS embedding, c.attribute_embedding AS attribute;

// name: chunk_layer_edges
// E_intra^C: the CHUNK_RELATED edges (augment stage darag_chunk_edges; each pair stored once).
MATCH (a:Chunk)-[:CHUNK_RELATED]->(b:Chunk) WHERE a.id IS NOT NULL AND b.id IS NOT NULL
RETURN a.id AS a, b.id AS b;

// name: chunks
// The texts of the chunks $ids (a chunk deleted since the layer was read is absent).
MATCH (c:Chunk) WHERE c.id IN $ids AND c.id IS NOT NULL AND c.text IS NOT NULL
RETURN c.id AS id, c.text AS text;
