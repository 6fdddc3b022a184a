"""Neo4j Browser assets: the GRASS style sheet (a colour and caption per layer) and saved starter
queries, plus what `graphstrata browser` prints to load them, and the analysts' read-only access.

Neo4j Browser's own GRASS parser (neo4j-browser 5.x, ``parseGrass``) knows no comments, so
``graphstrata.grass`` has none; docs/browser.md explains each rule.
"""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).parent
GRASS = HERE / "graphstrata.grass"
STARTER_QUERIES = HERE / "starter-queries.cypher"


def grass_text() -> str:
    return GRASS.read_text()


def style_command() -> str:
    """The one-line ``:style …`` command that loads the style sheet when run in Browser's editor."""
    return ":style " + " ".join(grass_text().split())


def parse_grass(text: str) -> dict[str, dict[str, str]]:
    """Selector → {property: value}, read as Neo4j Browser reads it.

    The character walk is the one of Browser's ``parseGrass`` (neo4j-browser 5.x): quotes toggle a
    string and are dropped, braces inside a string are kept, a rule's body is split at ``;`` and each
    declaration at ``:``. Stricter than Browser, which silently skips what it cannot read: raises
    ValueError on comments, a bad selector, a duplicate selector, a declaration that is not exactly
    ``name: value``, or an unclosed rule or string."""
    if "/*" in text or "//" in text:
        raise ValueError("Neo4j Browser's GRASS parser has no comments")
    in_quote = in_rule = nested = False
    key = body = ""
    raw: list[tuple[str, str]] = []
    for ch in text:
        structural = True
        if ch == "{":
            if in_quote:
                structural = False
            elif in_rule:
                nested = True
            else:
                in_rule = True
        elif ch == "}":
            if in_quote:
                structural = False
            elif nested:
                nested = False
            else:
                in_rule = False
                raw.append((key, body))
                key = body = ""
        elif ch in "'\"":
            in_quote = not in_quote
        else:
            structural = False
        if not structural:
            if in_rule:
                body += ch
            elif not ch.isspace():
                key += ch
    if in_rule or in_quote or key:
        raise ValueError(f"unclosed rule or string at the end (after {key or body[:40]!r})")
    rules: dict[str, dict[str, str]] = {}
    for selector, decls in raw:
        if not re.fullmatch(r"(node|relationship)(\.[A-Za-z_][A-Za-z0-9_]*)?", selector):
            raise ValueError(f"bad selector {selector!r}")
        if selector in rules:
            raise ValueError(f"selector {selector!r} appears twice")
        props: dict[str, str] = {}
        for decl in decls.split(";"):
            if not decl.strip():
                continue
            parts = decl.split(":")
            if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
                raise ValueError(f"{selector}: bad declaration {decl.strip()!r} (Browser wants exactly one ':')")
            props[parts[0].strip()] = parts[1].strip()
        rules[selector] = props
    return rules


def label_colours() -> dict[str, str]:
    """Label → fill colour of the style sheet (the diagram script uses the same colours)."""
    return {
        sel.split(".", 1)[1]: props["color"]
        for sel, props in parse_grass(grass_text()).items()
        if sel.startswith("node.") and "color" in props
    }


def instructions(http_url: str | None, bolt_uri: str, user: str, password_hint: str) -> str:
    """What `graphstrata browser` prints: where Browser is, how to log in, how to load the assets."""
    lines = []
    if http_url:
        host_port = bolt_uri.split("://", 1)[-1]
        lines += [
            f"Neo4j Browser: {http_url}/browser/?dbms=neo4j://{user}@{host_port}&db=neo4j",
            f"  user {user}; password: {password_hint}",
        ]
    else:
        lines += [
            f"Neo4j Browser of your server (Bolt {bolt_uri}); user {user}; password: {password_hint}",
            "  (Neo4j Desktop / Aura: open Browser or Query from the console)",
        ]
    lines += [
        "",
        "1. Style: paste this line into the Browser editor and run it (`:style reset` undoes it):",
        "",
        style_command(),
        "",
        f"   (or drag {GRASS} onto the frame that `:style` shows)",
        "",
        f"2. Starter queries: {STARTER_QUERIES}",
        "   Paste one into the editor and press the star to keep it under Favorites. Each is",
        "   self-contained: the values to change are on its first lines (`WITH … AS`), no `:params`.",
        "",
        "3. Read-only habit: `:config useReadTransactions: true` makes Browser send queries in READ",
        "   transactions, which the server refuses to write in. Community Edition has no roles; see",
        "   docs/browser.md for a read-only analyst account on Enterprise/Aura (`graphstrata browser",
        "   --create-reader NAME`) and the alternatives on Community.",
        "",
        "Library queries as tables: `graphstrata cypher --list`; `graphstrata cypher NAME --show` prints",
        "a library query with its `:params` line, ready to paste into Browser.",
    ]
    return "\n".join(lines)


class EditionError(RuntimeError):
    """The server's edition cannot do what was asked (e.g. roles on Community Edition)."""


def edition(db) -> str:
    row = db.read_one("CALL dbms.components() YIELD name, edition WHERE name = 'Neo4j Kernel' RETURN edition")
    return (row or {}).get("edition") or "unknown"


def create_reader(db, name: str, password: str) -> None:
    """An analyst account with the built-in `reader` role (Enterprise Edition and Aura only).

    Community Edition has users but no roles (every user may write), so there this raises
    EditionError; docs/browser.md lists the alternatives."""
    ed = edition(db)
    if ed != "enterprise":
        raise EditionError(
            f"this server is Neo4j {ed} edition: it has no roles, so a read-only user cannot exist "
            "(every user may write). Use `graphstrata cypher` (always READ transactions), Browser with "
            "`:config useReadTransactions: true`, or a read-only server (server.databases.read_only=neo4j "
            "in neo4j.conf) over a copy of the database; see docs/browser.md."
        )
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
        raise ValueError(f"user name {name!r}: letters, digits and _ only")
    with db.driver.session(database="system") as s:
        # user names cannot be parameters in administration commands; the name is validated above
        s.run(f"CREATE USER {name} IF NOT EXISTS SET PASSWORD $pw CHANGE REQUIRED", pw=password).consume()
        s.run(f"GRANT ROLE reader TO {name}").consume()
