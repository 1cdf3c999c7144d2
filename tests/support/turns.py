"""Driving turns through the CLI on the tests' timeline: a cycle, a post, and what the
store holds afterwards (wakes, posts, a table's rows)."""

from __future__ import annotations

import json

import sqlalchemy as sa

from poller.store import db
from support.timeline import at


def tick(cli, seconds):
    return cli("tick", "--now", at(seconds), "--wait").out


def post(cli, seconds, who, text, mood="lobby"):
    return int(cli("post", mood, "--as", who, "--at", at(seconds), text).out)


def wakes(cli, **kw):
    args = ["wakes", "--json"] + [f"--{k}={v}" for k, v in kw.items()]
    return sorted(json.loads(cli(*args).out), key=lambda w: w["id"])


def posts(cli, mood="lobby"):
    return json.loads(cli("posts", mood, "--limit", "200", "--json").out)


def rows(cli, model):
    engine = db.make_engine(cli.db_url)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.select(model.__table__)).mappings().all()
    finally:
        engine.dispose()
