"""Text utilities shared by ingest, augment and retrieval: tokens and budgets (:mod:`.tokens`), names
and node ids (:mod:`.names`), and the spaCy pipeline with its analysis of a text (:mod:`.nlp`).
Nothing here touches the database."""
