"""Dial wording from the wiki: what each discretion and verbosity level tells an agent.

Editors change the wording on a MediaWiki page with no deploy.  This package
reads that page (mwclient), parses it (mwparserfromhell), caches the last good
copy in the database and falls back to the built-in wording in
:mod:`wiki_rules.fallback` when nothing better can be had.

The loop builds one source at start-up and asks it once per cycle::

    from wiki_rules.source import DialSource

    dials = DialSource.from_config(config, engine)   # no network yet
    words = dials.current(now)                       # a DialWords, never blocks long
    words.consider_ask("reserved"), words.verbosity_line("brief"), words.source

Modules: ``parse`` (wikitext to plain wording, pure), ``wiki`` (the wiki),
``cache`` (the last good copy, kept through :mod:`poller.store.dialcache`),
``source`` (freshness, back-off and fallbacks), ``report`` (the ``dials``
command's body), ``fallback`` (the built-in wording).
"""
