#!/usr/bin/env python
"""Screenshot of Neo4j Browser showing graphstrata's styled graph: docs/browser-screenshot.png.

A real headless Chromium (Debian's ``chromium``; Playwright drives it, its own browser download is
not needed) loads Neo4j Browser from the local server, logs in, applies the style sheet with
``:style …`` (graphstrata/browser/graphstrata.grass), runs a query over the ingested sample corpus
and saves the page as a PNG.

    apt-get install -y chromium                  # /usr/bin/chromium
    python -m venv /tmp/shot && /tmp/shot/bin/pip install playwright
    /tmp/shot/bin/python scripts/browser_screenshot.py --instance default     # or --http-port/--bolt-port

The server must hold the sample corpus, ingested and augmented (`graphstrata ingest samples/corpus`,
`graphstrata augment`). The password comes from --password, NEO4J_PASSWORD, or the local
launcher's password file of --instance. Needs no graphstrata import (only Playwright), so any
Python with Playwright runs it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
GRASS = ROOT / "graphstrata" / "browser" / "graphstrata.grass"

# Flags headless Chromium needs on a machine without a GPU or outside network access, as root.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Two passages behind a multi-hop question of the sample ("Who directed the film shot in Leland,
# North Carolina in 1986?") through every layer: documents, chunks, sub-chunks, semantic units,
# Relation nodes, the entities they mention, a few keywords, and the communities of the bridging
# entities with their summaries.
DEFAULT_QUERY = """\
WITH ['Leland, North Carolina', 'Maximum Overdrive'] AS titles,
     ['leland', 'maximum overdrive', 'stephen king', 'north carolina', 'brunswick county', 'emilio estevez'] AS names
MATCH (d:Document)-[hc:HAS_CHUNK]->(c:Chunk) WHERE d.title IN titles
OPTIONAL MATCH part = (c)-[:HAS_PART]->(:SubChunk)
OPTIONAL MATCH kw = (c)-[:HAS_PART]->(:SubChunk)<-[:OCCURS_IN]-(k:Keyword)
  WHERE k.term IN ['film', 'town', 'horror', 'movies']
OPTIONAL MATCH unit = (c)-[:HAS_UNIT]->(:SemanticUnit)
OPTIONAL MATCH rel = (c)-[:HAS_RELATION]->(:Relation)-[:OBJECT]->(o:Entity)
  WHERE o.normalized IN names + ['town', 'film']
OPTIONAL MATCH men = (c)-[:MENTIONS]->(e:Entity) WHERE e.normalized IN names
OPTIONAL MATCH attr = (e)-[:HAS_ATTRIBUTE]->(:Attribute)
OPTIONAL MATCH comm = (e)-[:IN_COMMUNITY]->(:Community)<-[:OF_COMMUNITY]-(:HighLevel)<-[:TITLES]-(:Overview)
RETURN d, hc, c, collect(DISTINCT part) AS parts, collect(DISTINCT kw) AS keywords, collect(DISTINCT unit) AS units,
       collect(DISTINCT rel) AS relations, collect(DISTINCT men) AS mentions, collect(DISTINCT attr) AS attributes,
       collect(DISTINCT comm) AS communities"""


def password_for(args: argparse.Namespace) -> str:
    if args.password:
        return args.password
    if os.environ.get("NEO4J_PASSWORD"):
        return os.environ["NEO4J_PASSWORD"]
    data = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local/share")
    f = data / "graphstrata" / "neo4j" / args.instance / "password"
    if not f.exists():
        sys.exit(f"no password: give --password, set NEO4J_PASSWORD, or start instance {args.instance!r}")
    return f.read_text().strip()


def run_in_editor(page, command: str) -> None:
    """Type a command into Browser's main editor (Monaco) and run it."""
    editor = page.locator("#monaco-main-editor, [data-testid='activeEditor']").first
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(command)
    page.locator("[data-testid='editor-Run']").first.click()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Neo4j Browser screenshot of the styled sample graph.")
    ap.add_argument("--instance", default=os.environ.get("GRAPHSTRATA_INSTANCE", "default"))
    ap.add_argument("--http-port", type=int, default=int(os.environ.get("GRAPHSTRATA_HTTP_PORT", "7474")))
    ap.add_argument("--bolt-port", type=int, default=int(os.environ.get("GRAPHSTRATA_BOLT_PORT", "7687")))
    ap.add_argument("--user", default=os.environ.get("NEO4J_USER", "neo4j"))
    ap.add_argument("--password", default=None)
    ap.add_argument("--query", default=DEFAULT_QUERY, help="Cypher to draw (default: two passages, all layers)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "browser-screenshot.png")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--width", type=int, default=1600)
    ap.add_argument("--height", type=int, default=1000)
    ap.add_argument("--settle", type=float, default=6.0, help="seconds for the force layout to settle")
    args = ap.parse_args(argv)

    from playwright.sync_api import sync_playwright

    password = password_for(args)
    style = ":style " + " ".join(GRASS.read_text().split())
    dbms = quote(f"neo4j://{args.user}@127.0.0.1:{args.bolt_port}", safe=":/@")
    url = f"http://127.0.0.1:{args.http_port}/browser/?dbms={dbms}&db=neo4j&preselectAuthMethod=NATIVE"

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=args.chromium, headless=True, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": args.width, "height": args.height}, device_scale_factor=1)
            page.goto(url, wait_until="networkidle")
            # log in: the connect form is pre-filled from ?dbms= (URL, user, database) but the password
            page.locator("[data-testid='password']").fill(password)
            page.locator("[data-testid='connect']").click()
            page.get_by_text("You are connected as user").first.wait_for(timeout=30_000)
            print("connected", file=sys.stderr)
            run_in_editor(page, ":clear")
            run_in_editor(page, style)
            page.locator("[data-testid='frame']").first.wait_for(timeout=15_000)
            print("style applied", file=sys.stderr)
            run_in_editor(page, ":clear")
            run_in_editor(page, args.query)
            nodes = page.locator("svg g.node")
            nodes.first.wait_for(timeout=60_000)
            page.wait_for_timeout(args.settle * 1000)
            print(f"graph drawn: {nodes.count()} nodes", file=sys.stderr)
            frame = page.locator("[data-testid='frame']").first
            frame.locator("button[title='Fullscreen']").first.click()  # the graph frame fills the page
            page.wait_for_timeout(1000)
            frame.locator("button[aria-label='zoom-to-fit']").first.click()
            page.wait_for_timeout(args.settle * 1000)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(args.out))
        finally:
            browser.close()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
