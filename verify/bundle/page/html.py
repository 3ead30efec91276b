"""A small HTML tree over the standard library's ElementTree: every text and attribute goes
through its escaping, never through string concatenation.

    el("td", "text", cls="num")            -> <td class="num">text</td>
    page_bytes(root)                        -> b"<!DOCTYPE html>\n<html ...>...</html>\n"

Untrusted fields (lane ids, SBOM names, evidence strings) are only ever an element's text or an
attribute's value, so `<`, `&`, `"` in them are written as `&lt;`, `&amp;`, `&quot;`. The one
raw text is the page's own style sheet (a constant of this package), which the CSP hashes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable

RAW_TEXT_TAGS = frozenset({"script", "style"})  # written unescaped by ElementTree: never el()


def el(tag: str, *children: ET.Element | str | None, **attrs: str) -> ET.Element:
    """An element with attributes (`cls` for class, `_` in names for `-`) and children: strings
    become text, None is skipped."""
    if tag in RAW_TEXT_TAGS:
        raise ValueError(f"<{tag}> holds raw text: only style_sheet() makes one")
    node = ET.Element(tag, {_attr_name(k): v for k, v in attrs.items()})
    extend(node, children)
    return node


def extend(node: ET.Element, children: Iterable[ET.Element | str | None]) -> ET.Element:
    for child in children:
        if child is None:
            continue
        if isinstance(child, str):
            if len(node):
                last = node[-1]
                last.tail = (last.tail or "") + child
            else:
                node.text = (node.text or "") + child
        else:
            node.append(child)
    return node


def _attr_name(name: str) -> str:
    if name == "cls":
        return "class"
    if name == "for_":
        return "for"
    return name.replace("_", "-")


def prose(tag: str, text: str, **attrs: str) -> ET.Element:
    """An element of this package's own sentences, where `a command` in backticks becomes
    <code>a command</code> (never used for a document's fields: those go through el())."""
    parts = text.split("`")
    return el(tag, *(el("code", p) if i % 2 else p for i, p in enumerate(parts) if p), **attrs)


def section(ident: str, *children: ET.Element | str | None) -> ET.Element:
    """A <section id=ident> (the page's navigation links to it)."""
    return el("section", *children, id=ident)


def table(
    head: Iterable[str], rows: Iterable[Iterable[ET.Element | str]], **attrs: str
) -> ET.Element:
    """A table: one header row, then `rows` (a cell is a ready <td>/<th>, or text or an
    element that goes into a <td>)."""
    body = el("tbody")
    for row in rows:
        tr = el("tr")
        for cell in row:
            if isinstance(cell, ET.Element) and cell.tag in ("td", "th"):
                tr.append(cell)
            else:
                tr.append(el("td", cell))
        body.append(tr)
    return el(
        "table", el("thead", el("tr", *(el("th", h, scope="col") for h in head))), body, **attrs
    )


def style_sheet(css: str) -> ET.Element:
    """The page's one <style>: `css` is a constant of this package, never a document's field."""
    node = ET.Element("style")
    node.text = css
    return node


def page_bytes(root: ET.Element) -> bytes:
    """The document's bytes: doctype, then the tree serialised as HTML (UTF-8, LF, one newline
    at the end). Deterministic: attributes keep their insertion order."""
    text = ET.tostring(root, encoding="unicode", method="html", short_empty_elements=False)
    return ("<!DOCTYPE html>\n" + text + "\n").encode("utf-8")
