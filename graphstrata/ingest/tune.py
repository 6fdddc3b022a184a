"""Prompt tuning, after GraphRAG's auto prompt tuning: the model drafts the domain, its entity and relation
types and the extraction prompt from sample chunks (:class:`ExtractionSchema`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from graphstrata.ingest.extract import (
    EXTRACTION_INSTRUCTIONS,
    ExtractionSchema,
)

if TYPE_CHECKING:
    from graphstrata.llm import LLMClient


# --------------------------------------------------------------------------------------------
# prompt tuning (after GraphRAG's auto prompt tuning: the domain, its types and a prompt from samples)
# --------------------------------------------------------------------------------------------

TUNE_SYSTEM = "You design the knowledge-graph extraction for a corpus. You reply with one JSON object and nothing else."
TUNE_PROMPT = """\
Below are sample passages of a corpus. Design how an extractor should turn passages of this corpus into
a knowledge graph. Reply with one JSON object with exactly these keys:
- "domain": one sentence saying what the corpus is about;
- "entity_types": 5 to 15 entity types that matter in this domain, UPPER_SNAKE_CASE;
- "relation_types": 5 to 25 short verb phrases for the relations these passages state, lower case
  (or [] to let the extractor use any predicate);
- "prompt": the extractor's instructions for this domain, in the structure of the default below
  (goal, then numbered steps for the title and description, entities, relations, semantic units),
  using the placeholder {{types}} where the entity types go. Do not include the reply format or the text.

Default instructions:
{default}

Sample passages:
{samples}
"""


def tune_messages(samples: Sequence[str]) -> list[dict[str, str]]:
    passages = "\n\n".join(f"[{i}] {t.strip()}" for i, t in enumerate(samples, 1))
    prompt = TUNE_PROMPT.format(default=EXTRACTION_INSTRUCTIONS.strip(), samples=passages)
    return [{"role": "system", "content": TUNE_SYSTEM}, {"role": "user", "content": prompt}]


def tune_schema(client: LLMClient, samples: Sequence[str]) -> ExtractionSchema:
    """A domain schema (types and prompt) drafted by the model from sample chunks, validated."""
    if not samples:
        raise ValueError("no sample text to tune the prompt on")
    return client.chat_json(tune_messages(samples), ExtractionSchema, stage="prompt_tune")


def sample_evenly(items: Sequence[str], n: int) -> list[str]:
    """``n`` items spread over ``items`` (first and last included), in order."""
    if len(items) <= n:
        return list(items)
    step = (len(items) - 1) / max(n - 1, 1)
    return [items[round(i * step)] for i in range(n)]
