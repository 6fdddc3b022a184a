// DA-RAG retrieval (graphstrata/retrieval/darag.py): the subgraphs the coarse and fine
// embedding-attributed community searches (EACS, §4–5 of the paper) run on, each fetched by one
// query. The k-truss decomposition and Q-Peel themselves run in Python (graphstrata/algorithms/).

// name: working_subgraph
// §4 Working subgraph construction: V_work = the entities linked (MENTIONS, the inter-layer links
// E_inter) to the chunks $chunks of the chunk community H_C, one row per entity with the chunks of
// H_C that mention it, and the edges of the two fine layers induced on V_work:
//   related  the KG layer L_KG: RELATED edges to other entities of V_work (each edge once, from its
//            start node; parallel predicates are separate rows);
//   similar  the similarity layer L_S: the entity's $k_neighbor most similar entities by its
//            SIMILAR {kind: 'semantic'} edges (its KNN list, §4.1), wherever they are — the caller
//            keeps those inside V_work (cheaper than a list scan per neighbour here). The layer
//            stores each pair once (from the smaller id), so an entity's list is read in both
//            directions: reading only outgoing edges lost the neighbours stored from the other end.
MATCH (c:Chunk)-[:MENTIONS]->(e:Entity)
WHERE c.id IN $chunks AND e.id IS NOT NULL
WITH e, collect(c.id) AS chunks
WITH collect({e: e, chunks: chunks}) AS rows
WITH rows, [r IN rows | r.e] AS es
UNWIND rows AS r
WITH es, r.e AS e, r.chunks AS chunks
RETURN e.id AS id, e.name AS name, e.type AS type, e.description AS description, e.embedding AS embedding,
       chunks,
       COLLECT {
         MATCH (e)-[x:RELATED]->(f:Entity) WHERE f IN es
         RETURN {b: f.id, predicate: x.predicate, description: x.description, weight: x.weight} AS rel
       } AS related,
       COLLECT {
         MATCH (e)-[s:SIMILAR {kind: 'semantic'}]-(f:Entity)
         WHERE f.id IS NOT NULL
         WITH f, s ORDER BY s.score DESC, f.id LIMIT $k_neighbor
         RETURN {b: f.id, score: s.score} AS sim
       } AS similar;

// name: chunk_layer_nodes
// The Semantic Chunk Layer L_C for graphstrata/retrieval/darag_layers.py (read once per graph
// version): every chunk with its text embedding and its attribute (title + description embedding,
// null until augment's darag_chunk_attributes made one).
MATCH (c:Chunk) WHERE c.id IS NOT NULL AND c.embedding IS NOT NULL
RETURN c.id AS id, c.embedding AS embedding, c.attribute_embedding AS attribute;

// name: chunk_layer_edges
// E_intra^C: the CHUNK_RELATED edges (augment stage darag_chunk_edges; each pair stored once).
MATCH (a:Chunk)-[:CHUNK_RELATED]->(b:Chunk) WHERE a.id IS NOT NULL AND b.id IS NOT NULL
RETURN a.id AS a, b.id AS b;

// name: chunks
// The chunks $ids with what the context shows of them (a chunk deleted since the layer was read is absent).
MATCH (c:Chunk) WHERE c.id IN $ids AND c.id IS NOT NULL
RETURN c.id AS id, c.text AS text, c.doc_title AS doc_title;
