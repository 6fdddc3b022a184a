// E2GraphRAG (seed 003): the summary tree (augment stage `summary_tree`, graphstrata/augment/
// summary_tree.py) and the `e2graphrag` retriever (graphstrata/retrieval/e2graphrag.py).
//
// Summary tree: (:Summary {id, level, ordinal, text, embedding, doc_id, doc_sha, doc_title,
// children_hash, n_children, extractor, tokens})-[:SUMMARIZES {ordinal}]->(:Chunk or :Summary).
// Level 1 summarises chunks, level L+1 summarises level-L summaries; `ordinal` is the position in
// the level. A Summary belongs to the document `doc_id`; it is current while that document's
// sha256 equals `doc_sha` (the retriever ignores the others until the stage rebuilds them).

// ---------------------------------------------------------------------------------------------
// summary tree (writes)
// ---------------------------------------------------------------------------------------------

// name: delete_orphan_summaries
// Summaries whose document is gone (deleted since the stage last ran). Returns how many.
MATCH (s:Summary)
WHERE NOT EXISTS { MATCH (:Document {id: s.doc_id}) }
DETACH DELETE s
RETURN count(*) AS deleted;

// name: document_chunk_ids
// Every document with its chunk ids in document order (NEXT order = ordinal order).
MATCH (d:Document)-[:HAS_CHUNK]->(c:Chunk)
WITH d, c ORDER BY c.ordinal
RETURN d.id AS id, d.sha256 AS sha256, d.title AS title, coalesce(d.chunk_overlap, 0) AS overlap,
       collect(c.id) AS chunks
ORDER BY id;

// name: existing_summaries
// The summary nodes per document (the tree the last run wrote), the document versions they were
// stamped with, and their SUMMARIZES edges (a re-ingested document has new chunk nodes, even
// where a chunk's id and text did not change, so the kept summaries must be linked again).
MATCH (s:Summary)
RETURN s.doc_id AS doc_id, collect(s.id) AS ids, collect(DISTINCT s.doc_sha) AS shas,
       sum(COUNT { (s)-[:SUMMARIZES]->() }) AS edges;

// name: node_texts
// Texts of chunks or summaries by id (children of the summaries to write).
UNWIND $ids AS id
MATCH (n {id: id}) WHERE n:Chunk OR n:Summary
RETURN n.id AS id, n.text AS text;

// name: delete_summaries
UNWIND $ids AS id
MATCH (s:Summary {id: id})
DETACH DELETE s;

// name: stamp_summaries
// Kept summaries belong to the document's current version.
UNWIND $ids AS id
MATCH (s:Summary {id: id})
SET s.doc_sha = $sha, s.doc_title = $title;

// name: write_summaries
UNWIND $rows AS r
MERGE (s:Summary {id: r.id})
SET s.level = r.level, s.ordinal = r.ordinal, s.text = r.text, s.doc_id = r.doc_id, s.doc_sha = r.doc_sha,
    s.doc_title = r.doc_title, s.children_hash = r.children_hash, s.n_children = size(r.children),
    s.extractor = r.extractor, s.tokens = r.tokens
WITH s, r
CALL db.create.setNodeVectorProperty(s, 'embedding', r.embedding);

// name: link_summaries
// SUMMARIZES edges from each new summary to its children (chunks or summaries), in order.
UNWIND $rows AS r
MATCH (s:Summary {id: r.id})
UNWIND range(0, size(r.children) - 1) AS i
MATCH (child {id: r.children[i]}) WHERE child:Chunk OR child:Summary
MERGE (s)-[x:SUMMARIZES]->(child)
SET x.ordinal = i;

// ---------------------------------------------------------------------------------------------
// retrieval (reads)
// ---------------------------------------------------------------------------------------------

// name: local_index
// One round trip for everything the local branch needs, from the question's normalised entity
// names $names:
//   entities  the graph entities they map to (by normalised name; unmapped names drop out), in
//             question order, each with df, the number of chunks that mention it (and n_chunks,
//             all chunks: the entity weights' inverse document frequency); an entity mentioned
//             in more than $max_df_share of the chunks and more than $min_df chunks is left out,
//             its name in `common`;
//   pairs     graph filter (Eq. 1): [a, b, hops] for every pair, hops = the length of the
//             shortest CO_OCCURS path (bidirectional BFS) if at most MAX_HOPS, else null.
//             MAX_HOPS is substituted by the retriever with the validated integer h (a
//             variable-length bound cannot be a parameter);
//   chunks    the term→chunk index (HAS_TERM) read once: every chunk that mentions at least two
//             of the entities, with [entity id, count] per mapped entity it mentions. Index
//             mapping (Eq. 2) for any set of pairs, and the rankings, are computed from it; each
//             with its similarity to the question $vector (Entity-Aware Ranking's last key);
//   texts     when there are at most $inline such chunks, their text, title and the document's
//             chunk overlap (else [], and the retriever reads the chosen ones with chunk_texts).
UNWIND range(0, size($names) - 1) AS i
MATCH (e:Term {normalized: $names[i]})
WITH i, e ORDER BY i
WITH collect(e) AS found
WITH found, COUNT { (:Chunk) } AS n_chunks
WITH found, n_chunks, CASE WHEN $max_df_share * n_chunks > $min_df THEN $max_df_share * n_chunks ELSE $min_df END AS limit
WITH n_chunks, [e IN found WHERE COUNT { (e)<-[:HAS_TERM]-() } <= limit] AS es,
     [e IN found WHERE COUNT { (e)<-[:HAS_TERM]-() } > limit | e.normalized] AS common
WITH n_chunks, es, common,
     COLLECT {
       UNWIND es AS e
       MATCH (e)<-[m:HAS_TERM]-(c:Chunk)
       WHERE c.id IS NOT NULL AND c.doc_id IS NOT NULL AND c.ordinal IS NOT NULL
       WITH c, collect([e.id, m.count]) AS occ WHERE size(occ) >= 2
       RETURN {id: c.id, doc_id: c.doc_id, ordinal: c.ordinal, occ: occ,
               score: CASE WHEN c.embedding IS NULL THEN 0.0 ELSE vector.similarity.cosine(c.embedding, $vector) END}
     } AS chunks
CALL (chunks) {
  UNWIND CASE WHEN size(chunks) <= $inline THEN chunks ELSE [] END AS x
  MATCH (c:Chunk {id: x.id}) WHERE c.text IS NOT NULL AND c.doc_title IS NOT NULL
  RETURN collect({id: c.id, text: c.text, title: c.doc_title,
                  overlap: coalesce([(d:Document)-[:HAS_CHUNK]->(c) | d.chunk_overlap][0], 0)}) AS texts
}
RETURN [e IN es | {id: e.id, name: e.name, normalized: e.normalized, df: COUNT { (e)<-[:HAS_TERM]-() }}] AS entities,
       n_chunks, common,
       COLLECT {
         UNWIND range(0, size(es) - 2) AS i
         UNWIND range(i + 1, size(es) - 1) AS j
         WITH es[i] AS a, es[j] AS b
         OPTIONAL MATCH path = shortestPath((a)-[:CO_OCCURS*..MAX_HOPS]-(b))
         RETURN [a.id, b.id, length(path)]
       } AS pairs,
       chunks, texts;

// name: map_entities
// Query entities (normalised names, as at ingest) → graph entities; unmapped names drop out.
// (The `graph_filter="gds"` path; `local_index` does this in its first lines.)
UNWIND range(0, size($names) - 1) AS i
MATCH (e:Term {normalized: $names[i]})
RETURN i, e.id AS id, e.name AS name, e.normalized AS normalized, COUNT { (e)<-[:HAS_TERM]-() } AS df,
       COUNT { (:Chunk) } AS n_chunks
ORDER BY i;

// name: co_mention_chunks
// The chunks that mention at least two of the entities $eids, as `local_index` returns them.
UNWIND $eids AS id
MATCH (e:Term {id: id})<-[m:HAS_TERM]-(c:Chunk)
WHERE c.id IS NOT NULL AND c.doc_id IS NOT NULL AND c.ordinal IS NOT NULL
WITH c, collect([e.id, m.count]) AS occ WHERE size(occ) >= 2
RETURN {id: c.id, doc_id: c.doc_id, ordinal: c.ordinal, occ: occ} AS chunk;

// name: term_node_ids
// The GDS node ids of Terms for the graph filter with GDS BFS (`graph_filter="gds"`): in a native
// projection a GDS node id is the node's id().
UNWIND $ids AS tid
MATCH (t:Term {id: tid})
RETURN t.id AS id, id(t) AS node;

// name: chunk_texts
UNWIND $ids AS id
MATCH (c:Chunk {id: id}) WHERE c.text IS NOT NULL AND c.doc_title IS NOT NULL
OPTIONAL MATCH (d:Document {id: c.doc_id})
RETURN c.id AS id, c.text AS text, c.doc_title AS title, c.doc_id AS doc_id, c.ordinal AS ordinal,
       coalesce(d.chunk_overlap, 0) AS overlap;

// name: chunk_similarity
// The local candidates' similarity to the question: Entity-Aware Ranking's last key across documents.
UNWIND $ids AS id
MATCH (c:Chunk {id: id}) WHERE c.embedding IS NOT NULL
RETURN c.id AS id, vector.similarity.cosine(c.embedding, $vector) AS score;

// name: collapsed_tree
// Dense retrieval over the collapsed tree (§3.2, as RAPTOR): the $k nearest chunks and the $k
// nearest current summaries, best $k of both (the two indexes score cosine the same way). `weight`
// is the occurrence weight of the mapped query entities ($weights: entity id -> weight of one
// occurrence): for a chunk the weighted sum of its HAS_TERM counts, for a summary the sum over its
// children, i.e. over the chunks below it.
// `summaries`: how many Summary nodes exist (0: the tree was not built; chunks only).
CALL () { MATCH (s:Summary) RETURN count(s) AS summaries }
CALL () {
  CALL db.index.vector.queryNodes('chunk_embedding', $candidates, $vector) YIELD node, score
  WHERE node.id IS NOT NULL AND node.text IS NOT NULL AND node.doc_title IS NOT NULL
  RETURN node, score, 'Chunk' AS label
  UNION ALL
  CALL db.index.vector.queryNodes('summary_embedding', $candidates, $vector) YIELD node, score
  WHERE node.id IS NOT NULL AND node.text IS NOT NULL AND node.doc_title IS NOT NULL
    AND EXISTS { MATCH (d:Document {id: node.doc_id}) WHERE d.sha256 = node.doc_sha }
  RETURN node, score, 'Summary' AS label
}
WITH summaries, node, score, label ORDER BY score DESC LIMIT $k
RETURN summaries, node.id AS id, label, node.text AS text, node.doc_title AS title, node.doc_id AS doc_id,
       node.ordinal AS ordinal, node.level AS level, score,
       CASE WHEN label = 'Chunk'
         THEN COLLECT {
           MATCH (node)-[m:HAS_TERM]->(e:Term) WHERE e.id IN keys($weights) RETURN sum(m.count * $weights[e.id])
         }[0]
         ELSE COLLECT {
           MATCH (node)-[:SUMMARIZES*1..]->(c:Chunk)-[m:HAS_TERM]->(e:Term) WHERE e.id IN keys($weights)
           RETURN sum(m.count * $weights[e.id])
         }[0]
       END AS weight,
       CASE WHEN label = 'Summary'
         THEN COLLECT { MATCH (node)-[r:SUMMARIZES]->(x) WHERE x.id IS NOT NULL RETURN x.id ORDER BY r.ordinal }
         ELSE []
       END AS children,
       CASE WHEN label = 'Summary'
         THEN COUNT { MATCH (node)-[:SUMMARIZES*1..]->(c:Chunk) }
         ELSE 1
       END AS leaves;
