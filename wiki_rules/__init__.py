"""Dial wording from the wiki: what each discretion and verbosity level tells an agent.

Editors change the wording on a MediaWiki page with no deploy.  This package
reads that page (mwclient), parses it (mwparserfromhell), caches the last good
copy in the database and falls back to the built-in wording in
:mod:`wiki_rules.fallback` when nothing better can be had.
"""
