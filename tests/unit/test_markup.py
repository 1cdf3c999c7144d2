"""Markdown as the page and the Matrix bridge show a post: CommonMark with GFM tables,
fenced code and autolinks; post references as links; nothing executable ever."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from hypothesis import given, settings, strategies as st

from poller import markup, text


def html(source: str, **kw) -> str:
    return markup.to_html(source, **kw)


def test_emphasis_lists_tables_and_fenced_code_are_rendered():
    out = html("**bold** and _it_ and ~~gone~~\n\n- one\n- two\n\n"
               "| name | n |\n|------|--:|\n| ada | 3 |\n\n```python\nprint('<hi>')\n```")
    assert "<strong>bold</strong>" in out and "<em>it</em>" in out and "<s>gone</s>" in out
    assert "<ul>\n<li>one</li>\n<li>two</li>\n</ul>" in out
    assert re.search(r"<table>\s*<thead>\s*<tr>\s*<th>name</th>\s*<th>n</th>", out)
    assert re.search(r"<td>ada</td>\s*<td>3</td>", out)
    assert "<pre><code>print('&lt;hi&gt;')\n</code></pre>" in out
    assert "style=" not in out  # the page's CSP allows no inline style: alignment is dropped


def test_a_line_break_is_kept_as_the_writer_made_it():
    assert html("first line\nsecond line") == "<p>first line<br>\nsecond line</p>"


def test_urls_autolinks_and_mail_become_links():
    out = html("see https://example.org/a?b=1 and <https://example.net> or <ada@example.org>")
    assert '<a href="https://example.org/a?b=1"' in out
    assert '<a href="https://example.net"' in out
    assert '<a href="mailto:ada@example.org"' in out


@pytest.mark.parametrize("source", [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "<a href='javascript:alert(1)'>x</a>",
    '<iframe src="https://example.org"></iframe>',
    "<!-- hidden --><style>body{display:none}</style>",
    '<div onclick="alert(1)">x</div>',
])
def test_raw_html_in_a_post_stays_text(source):
    out = html(source)
    assert set(re.findall(r"<([a-z]+)", out)) <= {"p", "a"}  # an address in it is a link
    assert "&lt;" in out and not re.search(r"<[a-z]+[^>]*\son[a-z]+=", out)


@pytest.mark.parametrize("source", [
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](  javascript:alert(1))",
    "[click](vbscript:msgbox(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![pic](javascript:alert(1))",
    "<javascript:alert(1)>",
    "[click](java&#x09;script:alert(1))",
])
def test_no_link_runs_script(source):
    out = html(source)
    hrefs = re.findall(r'href="([^"]*)"', out)
    assert all(h.startswith(("http:", "https:", "mailto:", "#", "/")) for h in hrefs), out
    assert "javascript:" not in " ".join(hrefs).lower() and "<script" not in out


def test_an_image_is_a_link_to_it_never_loaded():
    out = html("![the plan](https://example.org/plan.png)")
    assert "<img" not in out
    assert '<a href="https://example.org/plan.png" rel="nofollow noopener noreferrer">' \
           'the plan</a>' in out


def test_post_references_link_to_the_post():
    out = html("as #p-12 said, and /moods/attic/#p-7 too; [the plan](#p-3)")
    assert '<a href="#post-12" rel="nofollow noopener noreferrer">#p-12</a>' in out
    assert '<a href="/m/attic?before=8#post-7" rel="nofollow noopener noreferrer">' \
           '/moods/attic/#p-7</a>' in out
    assert '<a href="#post-3" rel="nofollow noopener noreferrer">the plan</a>' in out


def test_post_references_in_code_words_or_escaped_stay_text():
    out = html("`#p-12` and tag#p-13 and \\#p-14 and #p-x\n\n    #p-15")
    assert "href" not in out
    assert "#p-12" in out and "tag#p-13" in out and "#p-14" in out and "#p-15" in out


def test_the_matrix_bridge_renders_the_same_without_post_links():
    source = "**yes** see #p-4\n\n| a |\n|---|\n| 1 |"
    assert html(source, post_links=False) == html(source).replace(
        '<a href="#post-4" rel="nofollow noopener noreferrer">#p-4</a>', "#p-4")
    from poller.bridges import matrix

    assert matrix.render(source) == html(source, post_links=False)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("<>&\"'`*_[]()!#:/\\ \nabcjvsript=-|~p12@.")),
               max_size=80))
def test_whatever_is_written_nothing_executable_comes_out(source):
    out = html(source).lower()
    tags = re.findall(r"<\s*([a-z0-9]+)", out)
    assert set(tags) <= markup.TAGS, out
    assert not re.search(r"<[^>]*\son[a-z]+\s*=", out), out  # no handler in a tag
    hrefs = re.findall(r'href="([^"]*)"', out)
    assert not any(h.strip().startswith(("javascript", "vbscript", "data")) for h in hrefs)


NOW = dt.datetime(2026, 12, 2, 1, 14, 30, tzinfo=dt.timezone.utc)


@pytest.mark.parametrize("at, shown", [
    ("2026-12-02T01:14:04.588106Z", "2026-12-02 01:14 UTC"),
    ("2026-12-02T02:10:00+01:00", "2026-12-02 01:10 UTC"),
    ("2026-01-05T09:01:00Z", "2026-01-05 09:01 UTC"),
])
def test_a_time_reads_one_way_with_its_zone(at, shown):
    assert text.when(at) == shown
    assert text.when(text.parse_time(at)) == shown
    assert text.when(None) == ""


@pytest.mark.parametrize("at, said", [
    ("2026-12-02T01:14:00Z", "just now"),
    ("2026-12-02T01:11:00Z", "3 min ago"),
    ("2026-12-01T20:10:00Z", "5 h ago"),
    ("2026-12-01T01:00:00Z", "1 day ago"),
    ("2026-11-20T01:00:00Z", "12 days ago"),
    ("2026-12-02T01:20:30Z", "in 6 min"),
])
def test_how_long_ago_in_the_largest_unit_that_fits(at, said):
    assert text.ago(at, NOW) == said
