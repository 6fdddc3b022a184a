"""Ingestion: load (`load`, `convert`, `identity`), chunk (`chunk`), extract (`extract`, `extract_spacy`,
`user_extractions`, `tune`), prepare rows (`rows`) and write them (`write`), run by `pipeline.Ingestor`
with its `options` and `errors`."""
