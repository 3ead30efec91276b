"""The page read back with the standard library's HTML parser: elements, texts, attributes."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Node:
    tag: str
    attrs: dict[str, str | None]
    children: list[Node] = field(default_factory=list)
    text: list[str] = field(default_factory=list)

    def all_text(self) -> str:
        return "".join(self.text) + "".join(c.all_text() for c in self.children)

    def walk(self) -> list[Node]:
        found = [self]
        for c in self.children:
            found += c.walk()
        return found

    def by_id(self, ident: str) -> Node:
        (node,) = [n for n in self.walk() if n.attrs.get("id") == ident]
        return node

    def find(self, tag: str) -> list[Node]:
        return [n for n in self.walk() if n.tag == tag]


VOID = {"meta", "br", "link", "img", "input", "hr"}


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs))
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack[-1].tag == tag, (self.stack[-1].tag, tag)
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].text.append(data)


def parse(page: bytes) -> Node:
    builder = _Builder()
    builder.feed(page.decode("utf-8"))
    builder.close()
    assert builder.stack == [builder.root], "an element was left open"
    return builder.root
