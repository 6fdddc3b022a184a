"""Settings, read from the environment (and a `.env` file in the working directory).

Neo4j and OpenAI settings use the names their own tools use (``NEO4J_URI``, ``OPENAI_API_KEY`` …);
everything that is ours is prefixed ``GRAPHSTRATA_``.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr
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
    embed_cache: bool = Field(
        True,
        validation_alias=AliasChoices("GRAPHSTRATA_EMBED_CACHE"),
        description="Keep every computed vector in `cache_dir/vectors` (SQLite, per model) so no text is "
        "embedded twice across runs.",
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

    # --- GDS ---------------------------------------------------------------------------------
    gds_concurrency: int = Field(
        2,
        validation_alias=AliasChoices("GRAPHSTRATA_GDS_CONCURRENCY"),
        description="OpenGDS caps concurrency at 4; the default suits a 2-core machine.",
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


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
