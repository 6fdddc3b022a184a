"""HTML to text in one streaming pass of the standard library's parser: time and memory linear in
the file whatever its nesting (20,000 nested headings, 100,000 nested paragraphs), and a deadline
checked as it goes (:class:`~graphstrata.ingest.convert.ConvertError` past it).

What is read, in document order: each outermost heading (``h1``-``h6``, its whole text, which also
starts a section); each text block (``p``, ``li``, ``td`` …) holding no other block, whole; the text
directly inside a container (``div``, ``section``, ``body`` …) or inside a block that holds blocks.
Nothing is read twice, and nothing inside ``script``, ``style``, ``head`` and the like.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser

_HEADING = re.compile(r"^h[1-6]$")
_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head"})
_BLOCKS = frozenset({"p", "li", "pre", "blockquote", "td", "th", "dt", "dd", "figcaption", "caption", "address"})
_CONTAINERS = frozenset({"div", "section", "article", "main", "body"})
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
)


@dataclass
class _Open:
    """An element being read: where its text starts in the text pieces, what it holds."""

    name: str
    order: int  # position of its start tag among elements (output is in this order)
    first: int  # index of its first text piece
    holds_block: bool = False
    direct: list[int] = field(default_factory=list)  # its own text pieces (not its children's)


class _Reader(HTMLParser):
    def __init__(self, check: Callable[[], None]) -> None:
        super().__init__(convert_charrefs=True)
        self.check = check
        self.pieces: list[str] = []  # every text piece outside skipped elements, in order
        self.stack: list[_Open] = [_Open("#root", 0, 0)]
        self.out: list[tuple[int, str, bool]] = []  # (order, text, is a heading)
        self.elements = 0
        self.skipping = 0  # depth inside script/style/head …
        self.headings = 0  # depth inside headings
        self.title: list[str] = []
        self.in_title = False
        self.run: list[str] = []  # the text since the last tag

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._flush()
        self.elements += 1
        if self.elements % 1024 == 0:
            self.check()
        if tag == "title":
            self.in_title = True
        if tag in _VOID:
            return
        if tag in _BLOCKS:  # every open element holding this one holds a block
            for el in reversed(self.stack):
                if el.holds_block:
                    break  # (its ancestors were marked when it was)
                el.holds_block = True
        self.stack.append(_Open(tag, self.elements, len(self.pieces)))
        self.skipping += tag in _SKIP
        self.headings += bool(_HEADING.match(tag))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._flush()
        self.elements += 1  # <br/>, <p/>: no content

    def handle_endtag(self, tag: str) -> None:
        self._flush()
        if tag == "title":
            self.in_title = False
        if tag in _VOID or not any(el.name == tag for el in self._recent(tag)):
            return  # an end tag with no open element: ignored, as browsers do
        while len(self.stack) > 1:
            el = self.stack.pop()
            self._close(el)
            if el.name == tag:
                break

    def _recent(self, tag: str) -> list[_Open]:
        # an end tag closes the nearest open element of its name; looking only a bounded way down the
        # stack keeps a page of stray end tags linear (deeper, unmatched ones are ignored)
        return self.stack[-64:]

    def handle_data(self, data: str) -> None:
        # the parser may hand one run of text over in several calls (at the end of a fed piece):
        # a run is one piece, gathered until the next tag
        if not self.skipping:
            self.run.append(data)
        if self.in_title:
            self.title.append(data)

    def handle_comment(self, data: str) -> None:
        self._flush()  # text either side of a comment is two pieces, as two strings are

    def _flush(self) -> None:
        if self.run:
            text = "".join(self.run).strip()
            self.run = []
            if text:
                self.stack[-1].direct.append(len(self.pieces))
                self.pieces.append(text)

    def _close(self, el: _Open) -> None:
        self.skipping -= el.name in _SKIP
        heading = bool(_HEADING.match(el.name))
        self.headings -= heading
        if self.skipping or el.name in _SKIP:
            return
        if heading and self.headings == 0:  # an outermost heading, all of it
            self.out.append((el.order, " ".join(self.pieces[el.first :]), True))
        elif self.headings:
            return  # inside a heading: read with it
        elif el.name in _BLOCKS and not el.holds_block:
            self.out.append((el.order, " ".join(self.pieces[el.first :]), False))
        elif el.name in _BLOCKS or el.name in _CONTAINERS or el.name == "#root":
            self.out.append((el.order, " ".join(self.pieces[i] for i in sorted(el.direct)), False))
        elif el.direct:  # an inline element's text is its parent's own text; the smaller list moves (linear
            parent = self.stack[-1]  # in total however deep inline elements nest), sorted when read
            if len(parent.direct) < len(el.direct):
                parent.direct, el.direct = el.direct, parent.direct
            parent.direct += el.direct
        if not self.headings and (heading or (el.name in _BLOCKS and not el.holds_block)):
            # read: no ancestor reads it again (an ancestor's own pieces all come before it), so memory
            # holds only the text of the open elements
            del self.pieces[el.first :]

    def finish(self) -> tuple[str, list[tuple[str, bool]]]:
        self.close()
        self._flush()
        while len(self.stack) > 1:
            self._close(self.stack.pop())
        self._close(self.stack.pop())
        self.out.sort(key=lambda x: x[0])
        return " ".join(" ".join(self.title).split()), [(text, heading) for _, text, heading in self.out]


def html_blocks(data: bytes, check: Callable[[], None]) -> tuple[str, list[tuple[str, bool]]]:
    """(the <title>, the text blocks in document order, each with whether it is a heading)."""
    from bs4.dammit import UnicodeDammit

    text = UnicodeDammit(data, is_html=True).unicode_markup or data.decode("utf-8", "replace")
    reader = _Reader(check)
    for start in range(0, len(text), 1 << 16):  # in pieces: the deadline is checked between them too
        check()
        reader.feed(text[start : start + (1 << 16)])
    return reader.finish()
