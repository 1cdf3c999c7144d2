"""Composing the wake: the one message an agent reads when it gets a turn.

``compose(request, ...)`` is pure: a ``WakeRequest`` of plain frozen values
(the posts, the dials, what changed) in, a ``Wake`` out.  The only thing it
may call outside itself is the summarizer it is handed.  The words live in
``templates/`` (one Jinja file per kind of wake, one per optional part), so
an editor can change them without touching this code; ``render_frames`` prints
every frame with placeholders, from the same files.

Safety: everything a person or agent wrote is escaped (``lines.quote`` and
``lines.one_line``) before it reaches a template, and the Jinja
environment escapes every printed value once more, so nothing posted can open
or close ``<mood-wake>``.  Every line that comes from a post starts with its
``[sender, time]`` prefix or an indent, which no line of ours does.

Size: the whole wake is held under ``WakeConfig.prompt_cap_chars``.  The
catch-up shrinks first; the footer is never cut, and the posts that woke the
agent are only clipped (with a marker) when one alone is huge.
"""

from __future__ import annotations

import functools
import html
import importlib.resources
import logging
import urllib.parse
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Mapping, NamedTuple, Sequence

import jinja2

import poller
from poller import kinds
from poller.kinds import Tools, WakeKind, names
from poller.wake import catchup, lines, summarize
from poller.config import WakeConfig
from poller.wake.lines import WakePost
from poller.values import AlsoAsked, CutOff, DialChange, Handed, LinkedPost, Member
from poller.tokens import Counter
from wiki_rules.fallback import BUILT_IN, DialWords

log = logging.getLogger(__name__)

TOOLS = names(Tools)

# Shares of prompt_cap_chars the non-catch-up parts may take before they are clipped.
WOKE_SHARE = 0.40  # all the posts that woke the agent, together
LINKED_SHARE = 0.10  # posts read in because a woke post linked them
HANDED_SHARE = 0.12  # context handed over from other Moods
PINGS_SHARE = 0.25  # the pings a return wake lists, with the posts around the newest
MIN_ITEM_CHARS = 300  # no single post is clipped shorter than this while it still fits
MAX_SETTINGS_SHOWN = 20  # settings changes listed before "and N more"
MAX_REFUSALS_SHOWN = 10
FIELD_CHARS = 200  # handles, titles, setting values, reasons

_SPLIT = "\x00catch-up\x00"  # stands in for the catch-up while the frame renders


# --- inputs -------------------------------------------------------------------

# WakePost (one post as the composer sees it) and the other inputs the store
# gathers for a wake (LinkedPost, Member, AlsoAsked, DialChange, CutOff, Handed)
# are the store's frozen values, defined in poller.values; compose.WakePost and
# the rest name the same classes.


class Arrival(NamedTuple):
    handle: str
    label: str  # how the person is shown, e.g. their display name
    tier: str = ""  # full | look | none
    last_spoke: datetime | None = None  # their newest post in this Mood; None: never


class Scheduled(NamedTuple):
    """What a scheduled wake (alarm, checkin-missed, checkin-contact) is about.  Times
    are already shown in words (``2026-10-06 21:00 Europe/Berlin (Tue, UTC+02:00)``)."""

    due: str = ""  # the (oldest) firing or deadline it answers
    count: int = 1  # firings, or missed deadlines, it covers
    late_by: str = ""  # "about 3 days": how late the wake is; "" when on time
    noticed_late: bool = False  # past the lateness cutoff: it only says it was noticed late
    note: str = ""  # an alarm's note (whoever set it wrote it: shown as quoted text)
    set_by: str = ""
    person: str = ""  # check-ins: whose agreement
    newest: str = ""  # the newest missed deadline
    next_due: str = ""  # the deadline after
    notice_at: str = ""  # contact: when the person was told
    contact: str = ""  # contact: the one recipient
    body_limit: int = 0  # contact: characters the message may have


class ActivityOffer(NamedTuple):
    """One activity of the agent's catalog, as the away how-to lists it."""

    id: str
    label: str  # what it is shown doing while out
    lo: int  # minutes
    hi: int
    reachable: bool = True


class Judgment(NamedTuple):
    """A mention while the agent is out: the state line that asks whether to come back."""

    label: str  # what it is out doing
    out_for_s: float  # how long it has been out, in seconds
    who: Sequence[str] = ()  # the handles whose pings earn the judgment


class MissedPing(NamedTuple):
    """A ping that reached the agent while it was out."""

    mood: str  # the slug of the Mood it was in
    post: WakePost
    around: Sequence[WakePost] = ()  # the posts around it (only the newest few get them)


class Back(NamedTuple):
    """A return wake: what the agent is back from, and what it missed."""

    phrase: str  # what it is back from, as the wake says it ("a creek walk")
    out_for_s: float
    cut_short: bool = False
    fresh_eyes: bool = False  # long enough that the catch-up starts where it left
    pings: Sequence[MissedPing] = ()


@dataclass(frozen=True, kw_only=True)
class WakeRequest:
    """Everything one wake is made from.  Plain tuples work for the NamedTuple
    fields (``also_asked=[("ada", True)]``)."""

    kind: str  # mention | consider | quiet | arrival
    mood: str  # slug
    mood_title: str = ""
    agent: str
    now: datetime
    tools: str = "look"  # full | look
    woke: Sequence[WakePost] = ()  # the posts that woke it (empty for quiet)
    history: Sequence[WakePost] = ()  # catch-up candidates, oldest first, without `woke`
    earlier_count: int = 0  # posts older than `history` the caller did not pass
    new_after_id: int | None = None  # consider/quiet: posts with a larger id are new
    arrival: Arrival | None = None  # who signed in (arrival wakes)
    also_asked: Sequence[AlsoAsked] = ()
    settings_changed: Sequence[DialChange] = ()
    cut_off: CutOff | None = None
    handed: Sequence[Handed] = ()
    refusals: Sequence[str] = ()  # what was refused from its last reply, and why
    linked: Sequence[LinkedPost] = ()
    discretion: str = "normal"
    verbosity: str = "normal"
    dials: DialWords = BUILT_IN
    catch_up_tokens: int = 10_000
    timezone: str = "UTC"  # the Mood's zone: times in the wake are shown in it, named
    # The agent's live session already holds the Mood up to the post made at this
    # time: `history` starts after it, and a pointer line says where the rest is.
    session_until: datetime | None = None
    # The Mood's rules, set by its operators, for agents whose instructions come in
    # the wake itself (Claude Code gets them as --append-system-prompt instead).
    rules: str = ""
    # The agent's first turn here opens with the letter (the Mood's `letter`
    # setting, or the kit's letter.md) and who has been here.
    letter: str = ""
    people: Sequence[Member] = ()
    # Scheduled wakes: what the alarm or the check-in is about.
    scheduled: Scheduled | None = None
    # People with a check-in agreement watched by this agent here: the footer says how
    # to count their check-in.
    checkins: Sequence[str] = ()
    # Away and back (only for an agent with an activities catalog): the activities the
    # away how-to offers, the state line of a judgment, what a return wake carries.
    activities: Sequence[ActivityOffer] = ()
    judgment: Judgment | None = None
    back: Back | None = None
    # What a kind declared outside the service shows, for its own template (as ``parts``);
    # its organ escapes whatever a person wrote in it (poller.wake.lines).
    parts: Mapping[str, Any] = field(default_factory=dict)


# --- output -------------------------------------------------------------------


@dataclass(frozen=True)
class ComposedWake:
    text: str
    prompt_tokens: int  # exact count of `text`
    catch_up_tokens_used: int  # exact count of the word-for-word catch-up lines
    catch_up_budget: int
    shown_count: int  # posts shown word for word in the catch-up
    summarized_count: int  # older posts the summary line stands for
    dial_source: str  # where the dial wording came from (wiki@rev, cache@rev, fallback)
    summary_source: str = ""  # extractive | llm | none | fallback | session | "" (nothing older)


# --- templates ----------------------------------------------------------------


def _finalize(value):
    # Second line of defence: whatever a template prints is escaped once more.
    return lines.neutralise(value) if isinstance(value, str) else value


class _ResourceLoader(jinja2.BaseLoader):
    """Templates from an importlib.resources directory (a wheel) or a Path."""

    def __init__(self, root):
        self.root = root

    def get_source(self, environment, template):
        node = self.root
        for part in template.split("/"):
            node = node.joinpath(part)
        if not node.is_file():
            raise jinja2.TemplateNotFound(template)
        return node.read_text(encoding="utf-8"), None, lambda: True


def _default_templates():
    """``templates/`` beside the package in a source checkout (so the code and its
    templates always come from one tree, even when an editable install of another
    checkout maps ``poller.templates`` elsewhere); ``poller.templates`` when installed."""
    beside = Path(poller.__file__).resolve().parent.parent / "templates"
    if (beside / "wake.j2").is_file():
        return beside
    try:
        root = importlib.resources.files("poller.templates")
        if root.joinpath("wake.j2").is_file():
            return root
    except ModuleNotFoundError:
        pass
    return beside


@functools.lru_cache(maxsize=1)
def kit_letter() -> str:
    """The kit's letter.md: the letter a Mood without a ``letter`` setting sends."""
    try:
        node = importlib.resources.files("poller.kit").joinpath("letter.md")
        if node.is_file():
            return node.read_text(encoding="utf-8")
    except ModuleNotFoundError:
        pass
    return (Path(poller.__file__).resolve().parent.parent / "memory-lane" / "letter.md").read_text(
        encoding="utf-8")


def environment(override: str | None = None) -> jinja2.Environment:
    """The Jinja environment; files in *override* shadow the built-in ones, and the
    folders kinds declared outside the service name hold theirs."""
    extra = tuple(dict.fromkeys(k.templates for k in kinds.declared() if k.templates))
    return _environment(override, extra)


@functools.lru_cache(maxsize=8)
def _environment(override: str | None, extra: tuple[str, ...]) -> jinja2.Environment:
    loaders: list[jinja2.BaseLoader] = [_ResourceLoader(_default_templates())]
    loaders += [jinja2.FileSystemLoader(folder) for folder in extra]
    if override:
        loaders.insert(0, jinja2.FileSystemLoader(override))
    return jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # plain text, escaped by us
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=_finalize,
    )


def _render(kind: str, context: dict, templates: str | Path | None) -> str:
    env = environment(str(templates) if templates else None)
    return env.get_template(kinds.spec(kind).template_name).render(context)


# --- compose ------------------------------------------------------------------


def compose(request: WakeRequest, *, config: WakeConfig, counter: Counter,
            summarizer: summarize.Summarizer | None, templates: str | Path | None = None) -> ComposedWake:
    """Compose the wake for *request*.  Pure but for *summarizer*."""
    _check(request)
    request = _in_zone(request)
    history = list(request.history)
    cu = catchup.build(history, budget=request.catch_up_tokens, now=request.now, counter=counter,
                       post_cap=config.post_cap_tokens, new_after_id=request.new_after_id)
    summary, source = _pointed(request, *_summary(cu, request, config, summarizer))
    for scale in (1.0, 0.5, 0.25, 0.1, 0.0):
        context = _context(request, config, scale)
        before, after = _frame(request.kind, context, cu, summary, templates)
        room = config.prompt_cap_chars - len(before) - len(after)
        if len(cu.text) <= room:
            break
        # Over the cap: the catch-up gives way first, and its digest becomes a
        # plain count (no second call to the summarizer).
        cu = cu.drop_oldest(max(0, room - 80), history)
        summary, source = _pointed(request, *_fallback(cu, request))
        before, after = _frame(request.kind, context, cu, summary, templates)
        if len(before) + len(cu.text) + len(after) <= config.prompt_cap_chars:
            break
    text = before + cu.text + after
    if len(text) > config.prompt_cap_chars:
        raise ValueError(f"the wake frame alone exceeds prompt_cap_chars ({len(text):,} characters)")
    return ComposedWake(
        text=text,
        prompt_tokens=_prompt_tokens(before, cu, after, counter),
        catch_up_tokens_used=cu.tokens,
        catch_up_budget=request.catch_up_tokens,
        shown_count=cu.shown,
        summarized_count=len(cu.older) + request.earlier_count if summary else 0,
        dial_source=request.dials.source,
        summary_source=source,
    )


def _check(request: WakeRequest) -> None:
    composed = [k.name for k in kinds.declared() if k.composed]
    if request.kind not in composed:
        raise ValueError(f"unknown wake kind {request.kind!r}; expected one of {', '.join(composed)}")
    if request.tools not in TOOLS:
        raise ValueError(f"unknown tools {request.tools!r}; expected full or look")
    if request.kind == "arrival" and request.arrival is None:
        raise ValueError("an arrival wake needs `arrival` (who signed in)")


def _summary(cu: catchup.CatchUp, request: WakeRequest, config: WakeConfig,
             summarizer: summarize.Summarizer | None) -> tuple[str, str]:
    """The digest of what did not fit, and which summarizer wrote it."""
    if not cu.older and not request.earlier_count:
        return "", ""
    if summarizer is None or not cu.older:  # nothing a summarizer could read
        return _fallback(cu, request)
    try:
        text = summarizer.summarize(cu.older, also_unseen=request.earlier_count,
                                    budget=config.summary_tokens, agent=request.agent, now=request.now)
    except Exception as exc:  # any failure of a summarizer is the same to the wake
        log.warning("summary failed: %s", exc, extra={"action": "summary_failed",
                                                      "summarizer": summarizer.name})
        return _fallback(cu, request)
    return lines.quote(text), summarizer.name


def _pointed(request: WakeRequest, summary: str, source: str) -> tuple[str, str]:
    """The summary line with, for a wake into a live session, the pointer to what
    the session already holds before it (our words and a time only)."""
    if request.session_until is None:
        return summary, source
    pointer = (f"Earlier posts: in this session (up to "
               f"{lines.stamp(request.session_until, request.now)} {request.timezone}).")
    return (pointer + "\n" + summary if summary else pointer), source or "session"


def _fallback(cu: catchup.CatchUp, request: WakeRequest) -> tuple[str, str]:
    count = len(cu.older) + request.earlier_count
    return (summarize.not_shown_line(count), "fallback") if count else ("", "")


def _frame(kind: str, context: dict, cu: catchup.CatchUp, summary: str,
           templates) -> tuple[str, str]:
    """The rendered wake around the catch-up lines: (before, after)."""
    context = dict(context, summary=summary, recent_shown=cu.shown, catch_up=_SPLIT)
    before, _, after = _render(kind, context, templates).partition(_SPLIT)
    return before, after


def _prompt_tokens(before: str, cu: catchup.CatchUp, after: str, counter: Counter) -> int:
    """Exact tokens of the wake without re-encoding the whole catch-up.

    A newline followed by "[" always ends a pre-tokenizer chunk, so counts add
    up across those joins; only the last line touches what follows it, and
    that join alone is counted (``Coster.joined``).
    """
    if not cu.units or not before.endswith("\n"):
        return counter.count(before + cu.text + after)
    last = cu.units[-1]
    joined = catchup.Coster(counter).joined(last.text, last.tokens, after)
    return counter.count(before) + cu.tokens - last.tokens + joined


# --- the context the templates see ----------------------------------------------


def _in_zone(request: WakeRequest) -> WakeRequest:
    """The request with every time in the Mood's zone, so the wake's clock reads local."""
    if request.timezone == "UTC":
        return request
    import dataclasses
    import zoneinfo

    zone = zoneinfo.ZoneInfo(request.timezone)

    def post(p: WakePost) -> WakePost:
        return dataclasses.replace(p, created_at=p.created_at.astimezone(zone))

    cut = request.cut_off
    if cut is not None and cut[0] is not None:
        cut = CutOff(cut[0].astimezone(zone), cut[1])
    until = request.session_until
    back = request.back
    if back is not None:
        back = Back._make(back)
        back = back._replace(pings=[MissedPing(m.mood, post(m.post), [post(p) for p in m.around])
                                    for m in (MissedPing._make(item) for item in back.pings)])
    return dataclasses.replace(
        request, now=request.now.astimezone(zone), woke=[post(p) for p in request.woke],
        session_until=until.astimezone(zone) if until is not None else None,
        history=[post(p) for p in request.history], cut_off=cut,
        linked=[LinkedPost(m, post(p)) for m, p in request.linked], back=back)


def _context(request: WakeRequest, config: WakeConfig, scale: float) -> dict:
    """Template variables, every person-written string escaped, big parts
    clipped to their *scale*-d share of the prompt cap."""
    cap = config.prompt_cap_chars
    woke = _post_lines(request.woke, request.now, cap * WOKE_SHARE * scale)
    links = [LinkedPost._make(item) for item in request.linked]
    linked = _post_lines([item.post for item in links], request.now, cap * LINKED_SHARE * scale,
                         moods=[item.mood for item in links])
    field_ = functools.partial(lines.one_line, limit=FIELD_CHARS)
    return {
        "kind": html.escape(request.kind, quote=True),
        "mood_attr": html.escape(lines.one_line(request.mood, FIELD_CHARS), quote=True),
        "mood": field_(request.mood),
        "mood_title": field_(request.mood_title or request.mood),
        "agent": field_(request.agent),
        "woke": woke,
        "woke_count": len(request.woke),
        "linked": linked,
        "linked_count": len(request.linked),
        "also_asked": [AlsoAsked(field_(h), bool(w)) for h, w in request.also_asked],
        "settings_changed": [DialChange(*map(field_, s)) for s in request.settings_changed][:MAX_SETTINGS_SHOWN],
        "settings_more": max(0, len(request.settings_changed) - MAX_SETTINGS_SHOWN),
        "cut_off": _cut_off(request),
        "handed": _handed(request.handed, cap * HANDED_SHARE * scale),
        "refusals": [lines.one_line(r, 500) for r in request.refusals][:MAX_REFUSALS_SHOWN],
        "arrival": Arrival(*map(field_, request.arrival[:3])) if request.arrival else None,
        "last_spoke": _last_spoke(request),
        "quiet_for": _quiet_for(request),
        "ask": lines.one_line(request.dials.consider_ask(request.discretion), 2_000),
        "verbosity_line": lines.one_line(request.dials.verbosity_line(request.verbosity), 2_000)
        if request.verbosity != "normal" else "",
        "new_count": _new_count(request),
        "tools": request.tools,
        "in_session": request.session_until is not None,
        "rules": operator_text(request.rules),
        "letter": operator_text(request.letter),
        "people": [_member(Member._make(m)) for m in request.people],
        "zone": request.timezone,
        "scheduled": _scheduled(request),
        "checkins": [field_(h) for h in request.checkins],
        "activities": [_activity(a) for a in request.activities],
        "judgment": _judgment(request),
        "back": _back(request, cap * PINGS_SHARE * scale),
        "parts": dict(request.parts),
        "todo_url": lines.one_line(config.todo_pattern.format(
            slug=urllib.parse.quote(request.mood, safe="")), 1_000) if config.todo_pattern else "",
        "etiquette_url": lines.one_line(config.etiquette_url, 1_000),
    }


def _scheduled(request: WakeRequest) -> Scheduled:
    """The scheduled wake's facts, each one line; the note quoted as text someone wrote."""
    got = Scheduled._make(request.scheduled) if request.scheduled else Scheduled()
    one = functools.partial(lines.one_line, limit=FIELD_CHARS)
    note = lines.INDENT + lines.clip_chars(lines.quote(got.note), 2_000) if got.note else ""
    return got._replace(due=one(got.due), late_by=one(got.late_by), note=note,
                        set_by=one(got.set_by), person=one(got.person), newest=one(got.newest),
                        next_due=one(got.next_due), notice_at=one(got.notice_at),
                        contact=one(got.contact), count=int(got.count),
                        body_limit=int(got.body_limit))


def _activity(a) -> dict:
    a = ActivityOffer._make(a)
    one = functools.partial(lines.one_line, limit=FIELD_CHARS)
    return {"id": one(a.id), "label": one(a.label), "lo": int(a.lo), "hi": int(a.hi),
            "reachable": bool(a.reachable)}


def _judgment(request: WakeRequest) -> dict | None:
    if request.judgment is None:
        return None
    j = Judgment._make(request.judgment)
    who = [f"@{lines.one_line(h, 80)}" for h in j.who] or ["someone"]
    return {"label": lines.one_line(j.label, FIELD_CHARS), "out_for": _duration(j.out_for_s),
            "who": " and ".join([", ".join(who[:-1]), who[-1]] if len(who) > 1 else who)}


EXCERPTS = 3  # the newest pings a return wake shows with the posts around them
MAX_PINGS_SHOWN = 50  # pings a return wake lists; older ones are counted


def _back(request: WakeRequest, share: float) -> dict:
    """A return wake's parts: what it is back from, the pings it missed (one line each
    but those in the catch-up below), and the posts around the newest few."""
    if request.back is None:
        return {"phrase": "an activity", "out_for": "a while", "cut_short": False,
                "fresh": False, "count": 0, "pings": "", "older": 0, "below": 0,
                "excerpts": ""}
    b = Back._make(request.back)
    pings = [MissedPing._make(m) for m in b.pings]
    in_catch_up = {p.id for p in request.history}
    listed = [m for m in pings if m.post.id not in in_catch_up]
    older = max(0, len(listed) - MAX_PINGS_SHOWN)
    listed = listed[older:]
    each = _each(share / 2, len(listed))
    one_liners = "\n".join(lines.line(m.post, request.now, max_chars=each, mood=m.mood)
                            for m in listed)
    shown = set(in_catch_up)
    blocks = []
    for m in [m for m in listed if m.around][-EXCERPTS:]:
        posts = [p for p in m.around if p.id not in shown]
        shown.update(p.id for p in posts)
        if any(p.id != m.post.id for p in posts):  # more than the ping itself
            blocks.append(f'Around {lines.one_line(m.post.sender, 80)}\'s ping in "'
                          f'{lines.one_line(m.mood, FIELD_CHARS)}":\n'
                          + _post_lines(posts, request.now, share / 2 / EXCERPTS))
    return {"phrase": lines.one_line(b.phrase, FIELD_CHARS),
            "out_for": _duration(b.out_for_s), "cut_short": bool(b.cut_short),
            "fresh": bool(b.fresh_eyes), "count": len(pings), "pings": one_liners,
            "older": older, "below": len(pings) - len(listed) - older,
            "excerpts": "\n\n".join(blocks)}


def _member(m: Member) -> str:
    who = lines.one_line(m.handle, FIELD_CHARS)
    if m.is_agent:
        return f"{who} (agent)"
    return f"{who} (trust {lines.one_line(m.trust, 20)})" if m.trust else who


def operator_text(text: str) -> str:
    """A text an operator wrote (a Mood's rules, its letter) as lines of the wake's frame.

    It is ours, not a post, so no line of it may pass for a post: none starts
    with the indent or with "[" (escaped as "\\["), and it cannot close the wake.
    """
    out = []
    for raw in lines.visible(lines.neutralise(str(text))).splitlines():
        line = raw.strip()
        out.append("\\" + line if line.startswith("[") else line)
    return "\n".join(out).strip()


def _new_count(request: WakeRequest) -> int:
    if request.new_after_id is None:
        return 0
    return sum(1 for p in request.history if p.id > request.new_after_id)


def _each(share: float, count: int) -> int:
    """Characters each of *count* items may take out of *share* (0: markers only)."""
    if share <= 0:
        return 0
    return max(MIN_ITEM_CHARS, int(share) // max(1, count))


def _post_lines(posts: Sequence[WakePost], now: datetime, share: float,
                moods: Sequence[str] | None = None) -> str:
    """Posts as wake lines; any one longer than its fair share of *share* is clipped."""
    if not posts:
        return ""
    each = _each(share, len(posts))
    return "\n".join(
        lines.line(p, now, max_chars=each, mood=moods[i] if moods else None)
        for i, p in enumerate(posts)
    )


def _handed(items: Sequence[Handed], share: float) -> list[Handed]:
    each = _each(share, len(items))
    one = functools.partial(lines.one_line, limit=FIELD_CHARS)
    return [
        Handed(one(h.from_mood), one(h.from_agent), one(h.about),
               lines.INDENT + lines.clip_chars(lines.quote(h.context), each), bool(h.look_only))
        for h in (Handed(*item) for item in items)
    ]


def _cut_off(request: WakeRequest) -> dict | None:
    if request.cut_off is None:
        return None
    at, why = request.cut_off
    return {"at": f"{lines.stamp(at, request.now)} {request.timezone}" if at else "",
            "why": lines.one_line(why, 500)}


def _last_spoke(request: WakeRequest) -> str:
    """When the arriving person last spoke here, in words; "" when they never did."""
    if request.arrival is None or Arrival._make(request.arrival).last_spoke is None:
        return ""
    ago = (request.now - Arrival._make(request.arrival).last_spoke).total_seconds()
    return _duration(ago) + " ago"


def _quiet_for(request: WakeRequest) -> str:
    times = [p.created_at for p in (*request.history, *request.woke)]
    if request.session_until is not None:  # a delta wake: the last post may be in the session
        times.append(request.session_until)
    if not times:
        return "a while"
    return _duration((request.now - max(times)).total_seconds())


def duration(seconds: float) -> str:
    """A span in words: "about 5 minutes", "about 3 hours", "about 2 days"."""
    return _duration(seconds)


def _duration(seconds: float) -> str:
    minutes = max(1, round(seconds / 60))
    if minutes < 90:
        return f"about {minutes} minute{'s' if minutes != 1 else ''}"
    hours = round(minutes / 60)
    if hours < 36:
        return f"about {hours} hours"
    return f"about {round(hours / 24)} days"


# --- frames with placeholders -----------------------------------------------------


def frames() -> list[tuple[str, str, str]]:
    """(kind, tools, variant): every frame `preview --frames` prints, as the kinds declare them."""
    return [(k.name, tools, variant) for k in kinds.declared() if k.composed
            for tools, variant in k.frames]


VARIANTS = {"session": ", into a live session",
            "judgment": ", while it is away: a judgment (come back, or stay out)"}


def render_frames(config: WakeConfig, templates: str | Path | None = None) -> str:
    """Every kind of wake with every optional part, placeholders in «», from
    the same templates compose() uses (for `mood-poller preview --frames`)."""
    out = []
    for kind, tools, variant in frames():
        context = dict(_placeholders(kind, tools, config), in_session=variant == "session")
        placeholders = kinds.spec(kind).placeholders
        if placeholders:
            context.update(placeholders())
        if variant == "session":
            context["summary"] = "Earlier posts: in this session (up to «time» «the Mood's time zone»)."
        if variant == "judgment":
            context["judgment"] = {"label": "«what it is out doing, e.g. out for a creek walk»",
                                   "out_for": "«how long»", "who": "@«person»"}
            context["activities"] = []
        out.append(f"==== {kind} wake, {'full tools' if tools == 'full' else 'look-only'}"
                   f"{VARIANTS.get(variant, '')} ====\n")
        out.append(_render(kind, context, templates))
        out.append("\n")
    return "".join(out)


def _placeholders(kind: str, tools: str, config: WakeConfig) -> dict:
    post = "[«sender», «time»] «text of the post; further lines indented»"
    return {
        "kind": kind, "mood_attr": "«slug»", "mood": "«slug»", "mood_title": "«Mood title»",
        "zone": "«the Mood's time zone»",
        "agent": "«agent»", "woke": post, "woke_count": int(kind in (WakeKind.MENTION, WakeKind.CONSIDER, WakeKind.CUT_OFF)),
        "linked": "[«sender», «time», in «other-mood»] «a post a woke post linked to»",
        "linked_count": int(kind in (WakeKind.MENTION, WakeKind.CONSIDER)),
        "also_asked": [AlsoAsked("«other agent»", True)],
        "settings_changed": [DialChange("«who»", "«key»", "«old»", "«new»")],
        "settings_more": 0,
        "cut_off": {"at": "«time» UTC", "why": "«why it was cut off»"},
        "handed": [Handed("«from-mood»", "«agent»", "«about»", lines.INDENT + "«the handed context»")],
        "refusals": ["«what was refused, and why»"],
        "arrival": Arrival("«handle»", "«name»", "«trust tier»"),
        "last_spoke": "«about N days ago; left out: first time here»",
        "quiet_for": "«how long»",
        "ask": "«the discretion dial's wording for this Mood's level»",
        "verbosity_line": "«the verbosity dial's wording; only when the dial is not normal»",
        "tools": tools, "in_session": False,
        "letter": "«the letter: the Mood's letter setting, or the kit's letter.md; only on an "
                  "agent's first turn in a Mood»",
        "people": ["«handle» (trust «tier»)", "«handle» (agent)"],
        "rules": "«the Mood's rules, set by its operators: on command and HTTP agents' wakes »"
                 "«(Claude Code agents get them as --append-system-prompt)»",
        "todo_url": config.todo_pattern.format(slug="«slug»") if config.todo_pattern else "",
        "etiquette_url": config.etiquette_url,
        "summary": "«digest of older posts, or [N earlier posts not shown]»",
        "recent_shown": 1, "new_count": 1,
        "scheduled": Scheduled(
            due="«when it was due, e.g. 2026-10-06 21:00 Europe/Berlin (Tue, UTC+02:00)»",
            count=2, late_by="«how late; left out when on time»", noticed_late=False,
            note=lines.INDENT + "«the note left with the alarm»" if kind == "alarm" else "",
            set_by="«who set it»",
            person="«person»", newest="«the newest missed deadline»",
            next_due="«the next deadline»", notice_at="«when the person was told»",
            contact="«the contact's e-mail address»", body_limit=3_800),
        "checkins": ["«person with a check-in agreement here»"] if kind == "checkin-missed" else [],
        "activities": [{"id": "«activity id»", "label": "«its label»", "lo": 20, "hi": 45,
                        "reachable": True},
                       {"id": "«another»", "label": "«its label»", "lo": 30, "hi": 30,
                        "reachable": False}] if kind in (WakeKind.NUDGE, WakeKind.RETURN) else [],
        "judgment": None,
        "back": {"phrase": "«what it is back from, e.g. a creek walk»", "out_for": "«how long»",
                 "cut_short": True, "fresh": True, "count": 3,
                 "pings": "[«sender», «time», in «mood»] «a ping it missed, on one line»",
                 "older": 0, "below": 1, "excerpts": 'Around «sender»\'s ping in "«mood»":\n'
                                         "[«sender», «time»] «a post around the ping»"},
        "catch_up": "[«sender», «time»] «post, word for word»\n[«sender», «time», new] «a newer post»\n",
        "parts": {},
    }
