"""The front door: ``mood-poller serve`` — a JSON API, an event stream and web pages.

An ASGI application (Starlette, served by uvicorn) over the same store as the
command line, built by :func:`poller.web.app.create_app`:

- :mod:`poller.web.auth` — who is asking (a bearer token or a session
  cookie), what they may do, CSRF tokens, the posting rate limit;
- :mod:`poller.web.api` — ``/api/v1``: every route described once, which
  also gives the OpenAPI document (:mod:`poller.web.openapi`);
- :mod:`poller.web.events` — ``/api/v1/moods/{slug}/events``, Server-Sent
  Events fed by one watcher of the store per process;
- :mod:`poller.web.pages` — the server-rendered pages (``templates/``,
  ``static/``: no build step, nothing from elsewhere);
- :mod:`poller.web.health` — ``/healthz``, ``/metrics`` and the facts
  ``mood-poller health`` prints;
- :mod:`poller.web.handling` — reading a request's body and query, and
  turning the library's errors into refusals;
- :mod:`poller.web.batch` — the group commit of API posts;
- :mod:`poller.web.serving` — uvicorn over the app, the poller beside it.

Everything the app does to the store goes through the store's verbs, so a
post made here is validated exactly as ``mood-poller post`` validates it.
"""
