"""Markdown as people read it: one renderer for the web page and the Matrix bridge.

CommonMark with GFM tables, strikethrough and bare-URL autolinks
(markdown-it-py), a line break where the writer broke the line (chat, not a
document), and the result passed through an allow-list sanitizer (nh3,
Ammonia) so nothing executable ever comes out: raw HTML in a post stays text,
links are http, https, mailto or this site's own paths, no attribute but a
link's href and title, a list's start.  An image is a link to the image (the page
loads nothing from elsewhere).

On the page a post may point at another: ``#p-123`` (post 123 in this Mood) and
``/moods/SLUG/#p-123`` (post 123 in the Mood SLUG) become links to the post's
element (``#post-123``; ``/m/SLUG?before=124#post-123`` for another Mood).
"""

from __future__ import annotations

import functools
import re

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

TAGS = {"p", "br", "strong", "em", "del", "s", "code", "pre", "blockquote", "ul", "ol", "li",
        "a", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "table", "thead", "tbody", "tr", "th",
        "td"}
ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
SCHEMES = {"http", "https", "mailto"}
CACHED = 2048  # rendered texts kept: a live page's every stream renders the same new post

# "#p-123", "/moods/lobby/#p-123": not inside a word or a longer path.
POST_REF = re.compile(r"(?<![\w/#-])(?:/moods/(?P<slug>[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?)/)?"
                      r"#p-(?P<id>[0-9]{1,18})\b")


def post_href(post_id: int, slug: str | None = None) -> str:
    """Where the page shows post *post_id*: its element on this page, or (in the Mood
    *slug*) the Mood's page up to that post."""
    if slug is None:
        return f"#post-{post_id}"
    return f"/m/{slug}?before={post_id + 1}#post-{post_id}"


def _post_refs(state: StateCore) -> None:
    """Core rule: ``#p-ID`` and ``/moods/SLUG/#p-ID`` in plain text (not in code, not
    already in a link) become links to the post."""
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        out: list[Token] = []
        in_link = 0
        for tok in block.children:
            in_link += tok.type == "link_open"
            in_link -= tok.type == "link_close"
            if tok.type == "link_open":  # [the plan](#p-12): to the post, as written bare
                ref = POST_REF.fullmatch(str(tok.attrs.get("href", "")))
                if ref:
                    tok.attrs["href"] = post_href(int(ref["id"]), ref["slug"])
            if tok.type != "text" or in_link or "#p-" not in tok.content:
                out.append(tok)
                continue
            at = 0
            for m in POST_REF.finditer(tok.content):
                if m.start() > at:
                    out.append(_text(tok.content[at:m.start()]))
                opened = Token("link_open", "a", 1)
                opened.attrs = {"href": post_href(int(m["id"]), m["slug"])}
                out += [opened, _text(m.group()), Token("link_close", "a", -1)]
                at = m.end()
            if at < len(tok.content):
                out.append(_text(tok.content[at:]))
        block.children = out


def _text(content: str) -> Token:
    tok = Token("text", "", 0)
    tok.content = content
    return tok


def _image(self, tokens, idx, options, env) -> str:
    """An image as a link to it, its alt text the link's words (the page loads nothing
    from elsewhere)."""
    tok = tokens[idx]
    words = self.renderInlineAsText(tok.children or [], options, env) or tok.attrGet("src")
    return f'<a href="{escapeHtml(str(tok.attrGet("src")))}">{escapeHtml(words)}</a>'


def _parser(post_links: bool) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": True, "breaks": True})
    md.enable(["table", "strikethrough", "linkify"])
    md.add_render_rule("image", _image)
    if post_links:
        md.core.ruler.after("linkify", "post_refs", _post_refs)
    return md


_PAGE, _PLAIN = _parser(True), _parser(False)


def _href(tag: str, attribute: str, value: str) -> str | None:
    """A link goes to a scheme allowed, this site's paths or this page; any other
    relative target (``java%09script:``, ``notes.md``) is dropped, the words kept."""
    if attribute == "href" and not value.startswith(("http:", "https:", "mailto:", "/", "#")):
        return None
    return value


@functools.lru_cache(maxsize=CACHED)
def to_html(text: str, post_links: bool = True) -> str:
    """*text* (markdown) as safe HTML; with *post_links*, post references are links."""
    raw = (_PAGE if post_links else _PLAIN).render(text)
    return nh3.clean(raw, tags=TAGS, attributes=ATTRIBUTES, url_schemes=SCHEMES,
                     attribute_filter=_href,
                     link_rel="nofollow noopener noreferrer", strip_comments=True).strip()
