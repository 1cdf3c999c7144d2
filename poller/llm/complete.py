"""One completion from an OpenAI-compatible endpoint, through pydantic-ai: what the
consider screen, the LLM summarizer and the away accounts ask.

:func:`complete` takes a chat body as those callers build it (``model``, ``messages``,
``temperature``, ``max_tokens``) and returns the text and the token counts the endpoint
reported.  Every failure is a :class:`CompletionError` of one line naming what asked and
the cause (timed out after N s, answered HTTP N, unreachable, not a chat completion);
the API key travels only in the Authorization header and is never in a message.  The
URL may end in ``/v1`` or not.  pydantic-ai is imported when a completion is asked for,
never before.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Optional

from poller import errors


class CompletionError(errors.PollerError):
    """The endpoint did not answer with a completion."""


@dataclass(frozen=True)
class Answer:
    text: str
    prompt_tokens: Optional[int] = None  # as the endpoint reports them, if it does
    completion_tokens: Optional[int] = None


def base_url(url: str) -> str:
    base = url.rstrip("/")
    return base if base.endswith("/v1") else base + "/v1"


def endpoint(url: str) -> str:
    """The chat completions URL of an OpenAI-compatible endpoint at *url*."""
    return base_url(url) + "/chat/completions"


def complete(url: str, api_key: str, timeout: float, body: dict, *, what: str) -> Answer:
    """POST *body* as one chat completion; the answer's text and token counts."""
    try:
        from pydantic_ai import Agent
    except ImportError:
        raise CompletionError(f"{what} needs the models extra: pip install "
                              f"'mood-poller[models]'") from None
    from poller.llm import providers

    system = "\n\n".join(str(m.get("content") or "") for m in body.get("messages", [])
                         if m.get("role") in ("system", "developer"))
    user = "\n\n".join(str(m.get("content") or "") for m in body.get("messages", [])
                       if m.get("role") == "user")
    settings = {k: body[k] for k in ("temperature", "max_tokens") if body.get(k) is not None}
    spec = providers.Spec("openai", str(body.get("model") or ""), base_url(url))

    async def ask():
        model, client = providers.build(spec, timeout=timeout, max_retries=0,
                                        environ={spec.key_env: api_key} if api_key else {})
        try:
            return await Agent(model, instructions=system or None).run(
                user, model_settings=settings or None, timeout=timeout + 1)
        finally:
            await client.close()

    try:
        result = _run(ask)
    except Exception as exc:
        raise CompletionError(_why(exc, what, timeout)) from None
    usage = result.usage
    return Answer(str(result.output or ""), usage.input_tokens or None,
                  usage.output_tokens or None)


def _run(make):
    """Run the coroutine *make* makes on a loop of its own: in this thread, or in a thread
    of its own when this one already runs a loop (the web server's)."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    out: dict = {}

    def go():
        try:
            out["value"] = asyncio.run(make())
        except BaseException as exc:  # handed back to the caller's thread
            out["error"] = exc

    t = threading.Thread(target=go, name="completion", daemon=True)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def _why(exc: BaseException, what: str, timeout: float) -> str:
    from pydantic_ai import exceptions as x

    if isinstance(exc, (x.RunTimedOut, x.ModelTimeoutError, x.ModelRequestTimeout,
                        TimeoutError)):
        return f"{what} timed out after {timeout:g}s"
    if isinstance(exc, x.ModelHTTPError):
        return f"{what} answered HTTP {exc.status_code}"
    if isinstance(exc, x.ModelConnectionError):
        return f"{what} unreachable: {type(exc).__name__}"
    return f"{what} answered something that is not a chat completion"
