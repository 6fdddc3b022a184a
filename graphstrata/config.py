"""Settings, read from the environment (and a `.env` file in the working directory).

Neo4j and OpenAI settings use the names their own tools use (``NEO4J_URI``, ``OPENAI_API_KEY`` …);
everything that is ours is prefixed ``GRAPHSTRATA_``.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def _xdg(var: str, fallback: str) -> Path:
    return Path(os.environ.get(var) or Path.home() / fallback)


def default_cache_dir() -> Path:
    return _xdg("XDG_CACHE_HOME", ".cache") / "graphstrata"


def default_data_dir() -> Path:
    return _xdg("XDG_DATA_HOME", ".local/share") / "graphstrata"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore", populate_by_name=True)

    # --- Neo4j -------------------------------------------------------------------------------
    neo4j_uri: str | None = Field(
        None,
        validation_alias=AliasChoices("NEO4J_URI", "GRAPHSTRATA_NEO4J_URI"),
        description="Bolt/neo4j URI of an existing server. Unset: the local server of `graphstrata neo4j start`.",
    )
    neo4j_user: str = Field("neo4j", validation_alias=AliasChoices("NEO4J_USER", "NEO4J_USERNAME"))
    neo4j_password: str | None = Field(
        None,
        validation_alias=AliasChoices("NEO4J_PASSWORD"),
        description="Unset with a local server: read from the launcher's 0600 password file.",
    )
    neo4j_database: str = Field("neo4j", validation_alias=AliasChoices("NEO4J_DATABASE"))

    # --- the local launcher ------------------------------------------------------------------
    instance: str = Field("default", validation_alias=AliasChoices("GRAPHSTRATA_INSTANCE"))
    bolt_port: int = Field(7687, validation_alias=AliasChoices("GRAPHSTRATA_BOLT_PORT"))
    http_port: int = Field(7474, validation_alias=AliasChoices("GRAPHSTRATA_HTTP_PORT"))
    heap: str = Field("4g", validation_alias=AliasChoices("GRAPHSTRATA_NEO4J_HEAP"))
    pagecache: str = Field("1g", validation_alias=AliasChoices("GRAPHSTRATA_NEO4J_PAGECACHE"))
    cache_dir: Path = Field(default_factory=default_cache_dir, validation_alias=AliasChoices("GRAPHSTRATA_CACHE_DIR"))
    data_dir: Path = Field(default_factory=default_data_dir, validation_alias=AliasChoices("GRAPHSTRATA_DATA_DIR"))
    neo4j_conf: dict[str, str] = Field(
        default_factory=dict,
        validation_alias=AliasChoices("GRAPHSTRATA_NEO4J_CONF"),
        description='Extra neo4j.conf settings of the local server, as JSON: {"db.memory.transaction.max": "256m"}. '
        "Settings the launcher writes itself (addresses, auth, folders, memory) cannot be overridden.",
    )

    # --- models ------------------------------------------------------------------------------
    embed_model: str = Field(
        "local:all-MiniLM-L6-v2",
        validation_alias=AliasChoices("GRAPHSTRATA_EMBED_MODEL"),
        description="`local:all-MiniLM-L6-v2` (offline, bundled) or the name of a model served by the "
        "OpenAI-compatible endpoint.",
    )
    embed_dim: int | None = Field(
        None,
        validation_alias=AliasChoices("GRAPHSTRATA_EMBED_DIM"),
        description="Vector size of a remote embedding model (the local model knows its own: 384).",
    )
    embed_batch_size: int = Field(64, validation_alias=AliasChoices("GRAPHSTRATA_EMBED_BATCH_SIZE"))
    embed_runtime: str = Field(
        "onnx",
        validation_alias=AliasChoices("GRAPHSTRATA_EMBED_RUNTIME"),
        description="Runtime of the local model: `onnx` (onnxruntime, fast) or `numpy` (the reference).",
    )
    embed_precision: Literal["float32", "int8"] = Field(
        "int8",
        validation_alias=AliasChoices("GRAPHSTRATA_EMBED_PRECISION"),
        description="Precision of the local model's encoder for the sentence-level texts a new graph "
        "stores vectors of (sentences, units, relations, summaries): `int8` (quantised weights and "
        "activations, about twice as fast, vectors at cosine ~0.995 of float32's) or `float32`. Recorded "
        "in the graph, which keeps its own; passages, entity names and questions are always float32.",
    )
    embed_cache: bool = Field(
        True,
        validation_alias=AliasChoices("GRAPHSTRATA_EMBED_CACHE"),
        description="Keep every computed vector in `cache_dir/vectors` (SQLite, per model) so no text is "
        "embedded twice across runs.",
    )
    query_cache_mb: int | None = Field(
        None,
        ge=1,
        validation_alias=AliasChoices("GRAPHSTRATA_QUERY_CACHE_MB"),
        description="Bound on the in-memory copies of the graph retrieval keeps per connection (walk graphs, "
        "DA-RAG's layers; docs/scaling.md): older ones are dropped to make room, one larger than the bound is "
        "read per question instead of kept. None: no bound.",
    )
    openai_api_key: str | None = Field(None, validation_alias=AliasChoices("OPENAI_API_KEY"))
    openai_base_url: str | None = Field(None, validation_alias=AliasChoices("OPENAI_BASE_URL"))
    chat_model: str | None = Field(
        None,
        validation_alias=AliasChoices("GRAPHSTRATA_CHAT_MODEL", "OPENAI_MODEL"),
        description="Chat model for extraction and answers. Unset: no-LLM mode.",
    )
    llm_concurrency: int = Field(4, validation_alias=AliasChoices("GRAPHSTRATA_LLM_CONCURRENCY"))
    llm_timeout: float = Field(60.0, validation_alias=AliasChoices("GRAPHSTRATA_LLM_TIMEOUT"))
    llm_json_schema: bool = Field(
        True,
        validation_alias=AliasChoices("GRAPHSTRATA_LLM_JSON_SCHEMA"),
        description="Ask for JSON through the endpoint's JSON-schema support (response_format); an endpoint "
        "that rejects it gets the prompt-only request from then on.",
    )

    blas_threads: int = Field(
        1,
        ge=0,
        validation_alias=AliasChoices("GRAPHSTRATA_BLAS_THREADS"),
        description="Threads of numpy's BLAS in a process that opens a graph (graphstrata/blas.py); 0 leaves "
        "them as found.",
    )

    # --- GDS (graphstrata/gds.py; README "Clusters and Aura") ---------------------------------
    gds_concurrency: int = Field(
        2,
        validation_alias=AliasChoices("GRAPHSTRATA_GDS_CONCURRENCY"),
        description="OpenGDS caps concurrency at 4; the default suits a 2-core machine.",
    )
    gds_backend: Literal["plugin", "aura_sessions"] = Field(
        "plugin",
        validation_alias=AliasChoices("GRAPHSTRATA_GDS_BACKEND"),
        description="Where GDS runs: `plugin` (the GDS plugin of the Neo4j server) or `aura_sessions` "
        "(Aura Graph Analytics sessions of the `graphdatascience` client, for a database without the plugin).",
    )
    gds_estimate_min_nodes: int = Field(
        10_000,
        ge=0,
        validation_alias=AliasChoices("GRAPHSTRATA_GDS_ESTIMATE_MIN_NODES"),
        description="Projections of at least this many nodes are checked against the memory available "
        "(GDS's estimate) before they are built.",
    )
    gds_max_memory: str | None = Field(
        None,
        validation_alias=AliasChoices("GRAPHSTRATA_GDS_MAX_MEMORY"),
        description="The most memory a projection may need, e.g. `2g` or `512m`. Unset: the server's available heap.",
    )
    aura_client_id: str | None = Field(
        None,
        validation_alias=AliasChoices("GRAPHSTRATA_AURA_CLIENT_ID", "AURA_CLIENT_ID"),
        description="Aura API credentials (Aura console → Account → API keys), for `aura_sessions`.",
    )
    aura_client_secret: SecretStr | None = Field(
        None, validation_alias=AliasChoices("GRAPHSTRATA_AURA_CLIENT_SECRET", "AURA_CLIENT_SECRET")
    )
    aura_project_id: str | None = Field(
        None,
        validation_alias=AliasChoices("GRAPHSTRATA_AURA_PROJECT_ID", "AURA_PROJECT_ID"),
        description="Needed when the API key belongs to several Aura projects.",
    )
    aura_instance_id: str | None = Field(
        None,
        validation_alias=AliasChoices("GRAPHSTRATA_AURA_INSTANCE_ID", "AURA_INSTANCEID"),
        description="The AuraDB instance the session attaches to. Unset: the database at NEO4J_URI is "
        "self-managed and `aura_cloud_location` says where the session runs.",
    )
    aura_cloud_location: str | None = Field(
        None,
        validation_alias=AliasChoices("GRAPHSTRATA_AURA_CLOUD_LOCATION"),
        description="`provider/region` of a session for a self-managed database, e.g. `gcp/europe-west1`.",
    )
    aura_session_name: str = Field("graphstrata", validation_alias=AliasChoices("GRAPHSTRATA_AURA_SESSION_NAME"))
    aura_session_memory: str = Field(
        "8GB",
        validation_alias=AliasChoices("GRAPHSTRATA_AURA_SESSION_MEMORY"),
        description="Session size, one of the client's SessionMemory values (2GB, 4GB, 8GB, 16GB …).",
    )
    aura_session_ttl_minutes: int = Field(
        60,
        ge=1,
        validation_alias=AliasChoices("GRAPHSTRATA_AURA_SESSION_TTL_MINUTES"),
        description="The session is deleted after this long without use.",
    )

    # --- HTTP server (`graphstrata serve`) -----------------------------------------------------
    api_key: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices("GRAPHSTRATA_API_KEY"),
        description="Clients send it as `Authorization: Bearer <key>` or `X-API-Key`. Unset: no authentication, "
        "which the server only accepts when it listens on loopback.",
    )
    max_body_bytes: int = Field(
        20 * 1024 * 1024,
        validation_alias=AliasChoices("GRAPHSTRATA_MAX_BODY_BYTES"),
        description="Largest request body the server reads (uploads included); larger requests get 413.",
    )
    allowed_hosts: str = Field(
        "",
        validation_alias=AliasChoices("GRAPHSTRATA_ALLOWED_HOSTS"),
        description="Comma-separated host names a keyless server answers to besides loopback names and "
        "addresses (the Host header; DNS-rebinding defence), e.g. `myhost.local`.",
    )
    request_timeout: float = Field(
        60.0,
        gt=0,
        validation_alias=AliasChoices("GRAPHSTRATA_REQUEST_TIMEOUT"),
        description="Seconds a retrieval (or an answer) may run on the server before it is stopped (504).",
    )
    max_question_chars: int = Field(
        10_000,
        ge=1,
        validation_alias=AliasChoices("GRAPHSTRATA_MAX_QUESTION_CHARS"),
        description="Longest question the server accepts (400 `bad_parameters` beyond).",
    )
    cypher_max_rows: int = Field(
        1000,
        ge=1,
        validation_alias=AliasChoices("GRAPHSTRATA_CYPHER_MAX_ROWS"),
        description="Most rows a Cypher query returns (text-to-Cypher, `graphstrata cypher`, the MCP `cypher` "
        "tool); the rest is never fetched and the answer says it was capped.",
    )
    cypher_timeout: float = Field(
        30.0,
        gt=0,
        validation_alias=AliasChoices("GRAPHSTRATA_CYPHER_TIMEOUT"),
        description="Seconds a Cypher query (text-to-Cypher, `graphstrata cypher`, the MCP `cypher` tool) may "
        "run in Neo4j (its transaction timeout).",
    )
    max_embed_inputs: int = Field(
        256,
        ge=1,
        validation_alias=AliasChoices("GRAPHSTRATA_MAX_EMBED_INPUTS"),
        description="Most texts one POST /v1/embeddings may embed (each at most GRAPHSTRATA_MAX_QUESTION_CHARS).",
    )
    max_document_bytes: int = Field(
        50 * 1024 * 1024,
        ge=1,
        validation_alias=AliasChoices("GRAPHSTRATA_MAX_DOCUMENT_BYTES"),
        description="Largest document (file, or record text) an ingest accepts, in UTF-8 bytes.",
    )

    @property
    def allowed_host_names(self) -> list[str]:
        return [h.strip() for h in self.allowed_hosts.split(",") if h.strip()]

    @property
    def llm_enabled(self) -> bool:
        return bool(self.chat_model and (self.openai_api_key or self.openai_base_url))

    @property
    def uses_local_server(self) -> bool:
        return not self.neo4j_uri

    def subprocess_env(self, **extra: str) -> dict[str, str]:
        """The environment for a child process (CLI, server) that must use this same database: the
        current environment without our own NEO4J_/OPENAI_/GRAPHSTRATA_ variables, plus the
        connection these settings describe, plus `extra`."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NEO4J_", "OPENAI_", "GRAPHSTRATA_"))}
        if self.neo4j_uri:
            env.update(
                NEO4J_URI=self.neo4j_uri,
                NEO4J_USER=self.neo4j_user,
                NEO4J_PASSWORD=self.neo4j_password or "",
                NEO4J_DATABASE=self.neo4j_database,
            )
        else:
            env.update(
                GRAPHSTRATA_INSTANCE=self.instance,
                GRAPHSTRATA_BOLT_PORT=str(self.bolt_port),
                GRAPHSTRATA_HTTP_PORT=str(self.http_port),
                GRAPHSTRATA_DATA_DIR=str(self.data_dir),
            )
        env.update(extra)
        return env

    @property
    def bolt_uri(self) -> str:
        return self.neo4j_uri or f"bolt://127.0.0.1:{self.bolt_port}"

    def gds_backend_problems(self) -> list[str]:
        """What the configured GDS backend lacks, in words (empty: nothing). `plugin` needs nothing
        here; `aura_sessions` needs Aura API credentials, a database Aura can reach, and a valid size."""
        if self.gds_backend != "aura_sessions":
            return []
        problems = []
        if not self.aura_client_id or not self.aura_client_secret:
            problems.append("Aura API credentials: set GRAPHSTRATA_AURA_CLIENT_ID and GRAPHSTRATA_AURA_CLIENT_SECRET")
        if not self.aura_instance_id and not self.neo4j_uri:
            problems.append(
                "a database the session can reach: set GRAPHSTRATA_AURA_INSTANCE_ID (AuraDB) or NEO4J_URI "
                "(a self-managed server; not the local launcher's)"
            )
        if self.neo4j_password is None:
            problems.append("the database password the session connects with: set NEO4J_PASSWORD")
        if not self.aura_instance_id:
            provider, _, region = (self.aura_cloud_location or "").partition("/")
            if not provider or not region:
                problems.append(
                    "where the session runs for a self-managed database: set GRAPHSTRATA_AURA_CLOUD_LOCATION "
                    "to provider/region, e.g. gcp/europe-west1 (or GRAPHSTRATA_AURA_INSTANCE_ID for AuraDB)"
                )
        from graphdatascience.session import SessionMemory  # the client's own list of session sizes

        sizes = [str(v) for v in SessionMemory.all_values()]
        if self.aura_session_memory not in sizes:
            problems.append(
                f"a valid session size: GRAPHSTRATA_AURA_SESSION_MEMORY={self.aura_session_memory} is not one of "
                + ", ".join(sizes)
            )
        return problems

    def check_gds_backend(self) -> None:
        """Raise :class:`ConfigError` naming everything the GDS backend lacks (before any work)."""
        problems = self.gds_backend_problems()
        if problems:
            raise ConfigError(
                f"GRAPHSTRATA_GDS_BACKEND={self.gds_backend} needs: "
                + "; ".join(problems)
                + ' (docs/configuration.md, "Clusters and Aura")'
            )

    @field_validator("gds_max_memory")
    @classmethod
    def _memory_size(cls, value: str | None) -> str | None:
        if value is not None:
            parse_bytes(value)
        return value

    @property
    def gds_max_memory_bytes(self) -> int | None:
        return None if self.gds_max_memory is None else parse_bytes(self.gds_max_memory)


class ConfigError(ValueError):
    """A setting is missing or invalid."""


_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_bytes(size: str) -> int:
    """``"512m"`` → 536870912 (k, m, g, t: powers of 1024, as Neo4j's memory settings; a trailing
    ``b``/``ib`` is allowed: ``2GB``, ``2GiB``)."""
    text = size.strip().lower().removesuffix("ib").removesuffix("b")
    number, unit = text.rstrip("kmgt"), text[len(text.rstrip("kmgt")) :]
    try:
        if len(unit) > 1:
            raise ValueError
        return int(float(number) * _UNITS[unit])
    except (ValueError, KeyError):
        raise ConfigError(f"not a memory size: {size!r} (e.g. 512m, 2g)") from None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
