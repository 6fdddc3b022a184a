// Analysts' queries about a retrieval result: what it touched and how those nodes hang together.
// A result's node ids are in `graphstrata ask … --json` (retrieval.items[].node_id and
// retrieval.subgraph.nodes), e.g.
//   graphstrata ask "…" -m noderag --json | jq -c '[.retrieval.items[].node_id]'
// then `graphstrata cypher retrieval_touched --param 'ids=[…]'` (or ids=a,b,c). Every query is a read.

// name: retrieval_touched
// What a retrieval result touched, given its node ids. In result order, for each id its label and
// caption, whether it exists, and its provenance: the chunks it is, comes from or stands for
// (a chunk itself; a sub-chunk's, semantic unit's or Relation's chunk; the chunks mentioning an
// entity; an attribute's entity's chunks; a summary's leaves; a keyword's chunks; a HighLevel's or
// Overview's grouped units' chunks; a community's units' chunks) and their documents.
// params:
//   ids     list        graphstrata node ids
//   chunks  int = 10    most source chunks listed per node
UNWIND range(0, size($ids) - 1) AS rank
WITH rank, $ids[rank] AS id
OPTIONAL MATCH (n {id: id})
WHERE n:Document OR n:Chunk OR n:SubChunk OR n:Entity OR n:Relation OR n:SemanticUnit OR n:Attribute
   OR n:Community OR n:HighLevel OR n:Overview OR n:Summary OR n:Keyword
WITH rank, id, n,
     COLLECT {
       WITH n WHERE n:Chunk RETURN n AS c
       UNION
       MATCH (n)-[:HAS_CHUNK]->(c:Chunk) RETURN c
       UNION
       MATCH (c:Chunk)-[:HAS_PART|HAS_UNIT|HAS_RELATION|MENTIONS]->(n) RETURN c
       UNION
       MATCH (n)<-[:HAS_ATTRIBUTE]-(:Entity)<-[:MENTIONS]-(c:Chunk) RETURN c
       UNION
       MATCH (n)-[:SUMMARIZES*1..]->(c:Chunk) RETURN c
       UNION
       MATCH (n)-[:OCCURS_IN]->(:SubChunk)<-[:HAS_PART]-(c:Chunk) RETURN c
       UNION
       MATCH (n)-[:TITLES*0..1]->(:HighLevel)-[:GROUPS]->(:SemanticUnit)<-[:HAS_UNIT]-(c:Chunk) WHERE n:HighLevel OR n:Overview RETURN c
       UNION
       MATCH (n:Community)<-[:IN_COMMUNITY]-(:SemanticUnit)<-[:HAS_UNIT]-(c:Chunk) RETURN c
     } AS sources
RETURN rank, id, n IS NOT NULL AS found, labels(n)[0] AS label,
       coalesce(n.name, n.title, n.term, left(n.text, 100)) AS caption,
       size(sources) AS source_chunks,
       [c IN sources | c.id][..$chunks] AS chunks,
       reduce(ds = [], t IN [c IN sources | c.doc_title] | CASE WHEN t IN ds THEN ds ELSE ds + t END) AS documents
ORDER BY rank;

// name: retrieval_subgraph
// The relationships among a set of nodes. The subgraph a result's nodes induce, one row per
// relationship: start, type, end, with labels and captions. Paste into Browser with
// `RETURN a, r, b` instead to see it drawn.
// params:
//   ids  list   graphstrata node ids
UNWIND $ids AS id
MATCH (n {id: id})
WHERE n:Document OR n:Chunk OR n:SubChunk OR n:Entity OR n:Relation OR n:SemanticUnit OR n:Attribute
   OR n:Community OR n:HighLevel OR n:Overview OR n:Summary OR n:Keyword
WITH collect(DISTINCT n) AS ns
UNWIND ns AS a
MATCH (a)-[r]->(b)
WHERE b IN ns
RETURN labels(a)[0] AS start_label, a.id AS start, coalesce(a.name, a.title, a.term, left(a.text, 60)) AS start_caption,
       type(r) AS type, coalesce(r.predicate, r.kind) AS detail,
       labels(b)[0] AS end_label, b.id AS end, coalesce(b.name, b.title, b.term, left(b.text, 60)) AS end_caption
ORDER BY type, start, end;
