"""Ingestion: load, chunk, embed, extract, write, augment."""
