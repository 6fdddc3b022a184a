"""Entity resolution (augment stage ``entity_synonyms``): SYNONYM links between knowledge-graph
entities that name the same thing, by the rules of :mod:`graphstrata.algorithms.synonyms`. PPR,
query linking and the analysts' path queries follow them; entities keep their own identity."""

from __future__ import annotations

import numpy as np

from graphstrata.algorithms.synonyms import Named, embedding_links, ivf_links, merge_links, string_links
from graphstrata.augment import AugmentContext, StageReport, stage
from graphstrata.cypher import query
from graphstrata.text.names import normalize_name


@stage("entity_synonyms", order=12)
def entity_synonyms(ctx: AugmentContext) -> StageReport:
    threshold = ctx.params.synonym_threshold
    rows = ctx.db.read_rows(query("augment.entities_for_resolution"), ["id", "name", "normalized", "type", "embedding"])
    ents = [Named(*r[:4]) for r in rows]
    embedded = [(e, r[4]) for e, r in zip(ents, rows, strict=True) if r[4] is not None]
    vectors = np.array([v for _, v in embedded], dtype=np.float32) if embedded else np.zeros((0, 1), np.float32)
    p = ctx.params
    named = [e for e, _ in embedded]
    if len(named) > p.knn_exact_max_nodes:  # near-linear: the pairs the inverted file's probed cells hold
        close = ivf_links(named, vectors, threshold, p.ann_cell_size, p.ann_nprobe)
    else:
        close = embedding_links(named, vectors, threshold)
    links = merge_links(string_links(ents, normalize_name), close)
    ctx.db.auto(query("augment.delete_synonyms"))
    ctx.db.write_batches(query("augment.write_synonyms"), links)
    by_rule: dict[str, int] = {}
    for link in links:
        for rule in link["rules"]:
            by_rule[rule] = by_rule.get(rule, 0) + 1
    return StageReport(
        stage="entity_synonyms",
        counts={"entities": len(ents), "links": len(links), **by_rule},
        notes={"threshold": threshold, "approximate": len(named) > p.knn_exact_max_nodes},
    )
