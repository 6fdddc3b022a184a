// Analysts' queries about NodeRAG's community layer: Leiden communities over entities, relations,
// semantic units and attributes (IN_COMMUNITY), their HighLevel summaries (OF_COMMUNITY) and
// Overview titles (TITLES). Every query is a read.
// `$community` accepts a community id, an Overview title, or an entity (id, name or normalised
// name) that belongs to the community.

// name: communities
// Communities, largest first. Size, members per label, the Overview title and the start of the
// HighLevel summary (communities with fewer than 3 texts get none), and their best-connected entities.
// params:
//   limit  int = 25   most rows
MATCH (c:Community)
OPTIONAL MATCH (h:HighLevel)-[:OF_COMMUNITY]->(c)
OPTIONAL MATCH (o:Overview)-[:TITLES]->(h)
RETURN c.id AS id, c.size AS size,
       COUNT { (:Entity)-[:IN_COMMUNITY]->(c) } AS entities,
       COUNT { (:Relation)-[:IN_COMMUNITY]->(c) } AS relations,
       COUNT { (:SemanticUnit)-[:IN_COMMUNITY]->(c) } AS units,
       COUNT { (:Attribute)-[:IN_COMMUNITY]->(c) } AS attributes,
       o.title AS title, left(h.text, 120) AS summary,
       COLLECT {
         MATCH (e:Entity)-[:IN_COMMUNITY]->(c)
         WITH e, COUNT { (e)--() } AS degree ORDER BY degree DESC, e.name
         RETURN e.name LIMIT 5
       } AS top_entities
ORDER BY size DESC, id
LIMIT $limit;

// name: community_report
// One community in full. Its Overview title and HighLevel summary, its entities (best connected
// first), the Relation nodes and semantic units in it, the attributes, and which semantic units
// and attributes its HighLevel element GROUPS (NodeRAG semantic matching), and the documents whose
// chunks hold its semantic units or mention its entities.
// params:
//   community  string   community id, Overview title, or a member entity's id, name or normalised name
//   limit      int = 25  most items per list
MATCH (c:Community)
WHERE c.id = $community
   OR EXISTS { MATCH (o:Overview)-[:TITLES]->(:HighLevel)-[:OF_COMMUNITY]->(c) WHERE toLower(o.title) = toLower(trim($community)) }
   OR EXISTS { MATCH (e:Entity)-[:IN_COMMUNITY]->(c)
               WHERE e.id = $community OR e.normalized = toLower(trim($community)) OR toLower(e.name) = toLower(trim($community)) }
OPTIONAL MATCH (h:HighLevel)-[:OF_COMMUNITY]->(c)
OPTIONAL MATCH (o:Overview)-[:TITLES]->(h)
RETURN c.id AS id, c.size AS size, o.title AS title, h.text AS summary, h.extractor AS summary_extractor,
       COLLECT {
         MATCH (e:Entity)-[:IN_COMMUNITY]->(c)
         WITH e, COUNT { (e)--() } AS degree ORDER BY degree DESC, e.name
         RETURN e.name LIMIT $limit
       } AS entities,
       COLLECT { MATCH (x:Relation)-[:IN_COMMUNITY]->(c) RETURN x.text AS t ORDER BY t LIMIT $limit } AS relations,
       COLLECT { MATCH (u:SemanticUnit)-[:IN_COMMUNITY]->(c) RETURN u.text AS t ORDER BY t LIMIT $limit } AS units,
       COLLECT { MATCH (a:Attribute)-[:IN_COMMUNITY]->(c) RETURN a.text AS t ORDER BY t LIMIT $limit } AS attributes,
       COLLECT { MATCH (h)-[:GROUPS]->(g) RETURN labels(g)[0] + ': ' + left(g.text, 80) AS t ORDER BY t LIMIT $limit } AS grouped,
       COLLECT {
         MATCH (d:Document)-[:HAS_CHUNK]->(:Chunk)-[:HAS_UNIT|MENTIONS]->(m)-[:IN_COMMUNITY]->(c)
         RETURN DISTINCT d.title AS t ORDER BY t LIMIT $limit
       } AS documents
ORDER BY size DESC;

// name: community_members
// The members of one community. One row per member: label, id and caption (entity name, relation
// or unit text, attribute), with the member's degree.
// params:
//   community  string      community id, Overview title, or a member entity's id, name or normalised name
//   limit      int = 200   most rows
MATCH (c:Community)
WHERE c.id = $community
   OR EXISTS { MATCH (o:Overview)-[:TITLES]->(:HighLevel)-[:OF_COMMUNITY]->(c) WHERE toLower(o.title) = toLower(trim($community)) }
   OR EXISTS { MATCH (e:Entity)-[:IN_COMMUNITY]->(c)
               WHERE e.id = $community OR e.normalized = toLower(trim($community)) OR toLower(e.name) = toLower(trim($community)) }
MATCH (m)-[:IN_COMMUNITY]->(c)
RETURN c.id AS community, labels(m)[0] AS label, m.id AS id, coalesce(m.name, left(m.text, 100)) AS caption,
       COUNT { (m)--() } AS degree
ORDER BY label, degree DESC, caption
LIMIT $limit;
