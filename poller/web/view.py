"""How the pages show things: the templates' environment, times, and a post.

Every time a person reads is ``2026-12-02 01:10 UTC`` in a ``<time>`` element,
with how long ago beside it (``stamp``).  A post is one ``<li>`` rendered by
``_post.html`` both when the page loads and when the event stream brings it
(:func:`post_item`), its text as markdown through :mod:`poller.markup`, so a
reload shows exactly what arrived live.
"""

from __future__ import annotations

import datetime as dt
from typing import Optional

import jinja2
from markupsafe import Markup

from starlette.requests import Request
from starlette.responses import HTMLResponse

from poller import markup, text
from poller.kinds import PostKind
from poller.web import auth

ENV = jinja2.Environment(loader=jinja2.PackageLoader("poller.web", "templates"),
                         autoescape=True, trim_blocks=True, lstrip_blocks=True)
ENV.filters["iso"] = text.iso
ENV.filters["when"] = text.when
ENV.filters["money"] = text.money
# What the writer wrote, as markdown: kept to posts people and agents write (a silence's
# reason and the service's notices are shown as the text they are).
WRITTEN = {PostKind.POST.value, PostKind.RETURN.value}


@jinja2.pass_context
def stamp(context, value: Optional[dt.datetime | str]) -> Markup:
    """``<time datetime=ISO>2026-12-02 01:10 UTC</time> (3 min ago)``, the page's one way to
    show a time (*now* from the template's context); nothing for None."""
    if not value:
        return Markup("")
    at = text.parse_time(value) if isinstance(value, str) else value
    now = context.get("now")
    ago = Markup(' <span class="ago">({})</span>').format(text.ago(at, now)) if now else ""
    return Markup('<time datetime="{}">{}</time>{}').format(text.iso(at), text.when(at), ago)


ENV.filters["stamp"] = stamp


def page_post(post: dict, approval=None) -> dict:
    """A post's JSON with its ``html`` (the text rendered, when it is one people wrote) and,
    for an approval notice, its request (:class:`poller.store.capabilities.ApprovalInfo`)."""
    shown = dict(post)
    if post.get("kind") in WRITTEN:
        shown["html"] = Markup(markup.to_html(post["text"]))
    if approval is not None:
        shown["approval"] = approval
    return shown


def may_decide(who) -> bool:
    """Whether the reader *who* may answer an approval (trust full, or an operator)."""
    return bool(who) and (who.trust == "full" or who.operator)


ENV.globals["may_decide"] = may_decide


def post_item(post: dict, now: dt.datetime, approval=None, who=None, csrf: str = "") -> str:
    """The post's ``<li>`` on the Mood page, as the page renders it on load (an approval
    notice with its buttons for *who*, when they may answer it, the forms carrying *csrf*)."""
    return ENV.get_template("_post.html").render(
        p=page_post(post, approval), now=now, who=who, csrf=csrf).strip()


def render(request: Request, name: str, status: int = 200, binding: Optional[str] = None,
           **context) -> HTMLResponse:
    """The template *name*; forms in it get a CSRF token bound to the session (or *binding*)."""
    caller = getattr(request.state, "caller", None)
    if binding is None:
        binding = caller.session if caller else request.cookies.get(auth.PRE_COOKIE, "")
    context.setdefault("who", caller.who if caller else None)
    door = request.app.state.door
    context["csrf"] = door.keys.csrf(binding) if binding else ""
    context.setdefault("now", door.clock())
    return HTMLResponse(ENV.get_template(name).render(**context), status_code=status)
