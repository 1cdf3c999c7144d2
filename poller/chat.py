"""One call to an OpenAI-compatible ``/v1/chat/completions`` endpoint, with a timeout.

The LLM summarizer and the consider screen both use it.  The API key travels
only in the Authorization header; it is never logged or put in an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import httpx

from poller import errors


class ChatError(errors.PollerError):
    """The endpoint did not answer with a chat completion."""


@dataclass(frozen=True)
class ChatAnswer:
    text: str
    prompt_tokens: Optional[int] = None  # as the endpoint reports them, if it does
    completion_tokens: Optional[int] = None


def endpoint(url: str) -> str:
    base = url.rstrip("/")
    if not base.endswith("/v1"):
        base += "/v1"
    return base + "/chat/completions"


def complete(url: str, api_key: str, timeout: float, body: dict, *, what: str,
             client: Optional[httpx.Client] = None) -> ChatAnswer:
    """POST *body*; the reply's text and token counts.  Raises ChatError naming *what*."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        own = client or httpx.Client(timeout=timeout, follow_redirects=False)
        try:
            response = own.post(endpoint(url), json=body, headers=headers, timeout=timeout)
        finally:
            if client is None:
                own.close()
        response.raise_for_status()
        data = response.json()
        usage = data.get("usage") or {}
        return ChatAnswer(data["choices"][0]["message"]["content"] or "",
                     usage.get("prompt_tokens"), usage.get("completion_tokens"))
    except httpx.TimeoutException as exc:
        raise ChatError(f"{what} timed out after {timeout:g}s") from exc
    except httpx.HTTPStatusError as exc:
        raise ChatError(f"{what} answered HTTP {exc.response.status_code}") from exc
    except httpx.HTTPError as exc:
        raise ChatError(f"{what} unreachable: {type(exc).__name__}") from exc
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ChatError(f"{what} answered something that is not a chat completion") from exc
