// Cypher that third-party clients run on graphstrata's graph (docs/ecosystem.md).

// name: chunk_context
// The `retrieval_query` for neo4j-graphrag's VectorCypherRetriever / HybridCypherRetriever and
// LangChain's Neo4jVector: the client binds each matched chunk to `node` and its score to `score`;
// this walks chunk → mentioned entities → the extracted relations among them.
OPTIONAL MATCH (node)-[:MENTIONS]->(e:Entity)
WITH node, score, collect(DISTINCT e) AS entities
CALL (entities) {
  UNWIND entities AS s
  MATCH (s)-[r:RELATED]->(o:Entity) WHERE o IN entities
  RETURN collect(DISTINCT s.name + ' ' + r.predicate + ' ' + o.name) AS relations
}
RETURN node.text AS text, score,
       {chunk_id: node.id, document: node.doc_title, entities: [e IN entities | e.name],
        relations: relations} AS metadata
