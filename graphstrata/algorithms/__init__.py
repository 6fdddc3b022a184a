"""Pure graph algorithms (numpy in, plain results out) used by the retrieval layers; no database access."""
