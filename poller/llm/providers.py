"""Which model a model agent speaks to: ``PROVIDER:MODEL``, an optional base URL, and the
environment variable its key is read from at turn time.

Providers: ``openai`` (OpenAI, or any OpenAI-compatible server given ``--base-url``:
vLLM, llama.cpp's server, LM Studio), ``anthropic``, ``ollama`` (OpenAI-compatible at
``http://127.0.0.1:11434/v1`` unless a base URL says otherwise) and ``openrouter``.
The key is never stored: only the name of the variable that holds it, read when a turn
runs; a local server needs none.  Checking a spec (:func:`parse`) imports nothing heavy;
:func:`build` imports the provider library.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from typing import Mapping, Optional

from poller import errors


@dataclass(frozen=True)
class Provider:
    name: str
    key_env: str  # the provider's usual variable for its key
    base_url: str  # "" : the library's own default
    needs_key: bool  # without a base URL of the operator's own
    wire: str  # "openai" | "anthropic": the protocol spoken


PROVIDERS = {p.name: p for p in (
    Provider("openai", "OPENAI_API_KEY", "", True, "openai"),
    Provider("anthropic", "ANTHROPIC_API_KEY", "", True, "anthropic"),
    Provider("ollama", "OLLAMA_API_KEY", "http://127.0.0.1:11434/v1", False, "openai"),
    Provider("openrouter", "OPENROUTER_API_KEY", "https://openrouter.ai/api/v1", True, "openai"),
)}
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
MODEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}")


@dataclass(frozen=True)
class Spec:
    """A model agent's aim: provider, model name, base URL, key variable (never the key)."""

    provider: str
    model: str
    base_url: str = ""
    api_key_env: str = ""

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def key_env(self) -> str:
        return self.api_key_env or PROVIDERS[self.provider].key_env

    @property
    def url(self) -> str:
        return self.base_url or PROVIDERS[self.provider].base_url

    def key(self, environ: Optional[Mapping[str, str]] = None) -> str:
        """The key, read now from the environment ("" when none is set)."""
        environ = os.environ if environ is None else environ
        return environ.get(self.key_env, "")

    def missing_key(self, environ: Optional[Mapping[str, str]] = None) -> str:
        """Why no turn can run for want of a key, or "" (a local server needs none)."""
        needs = PROVIDERS[self.provider].needs_key and not self.base_url
        if needs and not self.key(environ):
            return f"no API key for {self.provider}: set {self.key_env} in the poller's environment"
        return ""


def parse(model: str, base_url: str = "", api_key_env: str = "") -> Spec:
    """``PROVIDER:MODEL`` and its options, checked; a one-line UserError if they are not."""
    provider, sep, name = (model or "").strip().partition(":")
    provider = provider.lower()
    if not sep or provider not in PROVIDERS:
        raise errors.UserError(f"--model must be PROVIDER:MODEL with PROVIDER one of "
                               f"{', '.join(PROVIDERS)} (e.g. openai:gpt-4o-mini), got {model!r}")
    if not MODEL_RE.fullmatch(name):
        raise errors.UserError(f"--model {provider}:… needs a model name of letters, digits and "
                               f"._:/@+- (at most 200), got {name!r}")
    if base_url and not re.fullmatch(r"https?://[^\s/?#@]+(/[^\s?#]*)?", base_url):
        raise errors.UserError(f"--base-url must be an http(s) URL with no user name or "
                               f"password, got {base_url[:100]!r}")
    if api_key_env and not ENV_NAME_RE.fullmatch(api_key_env):
        raise errors.UserError("--api-key-env takes the NAME of an environment variable "
                               "(letters, digits, _), not a key: the key itself is never stored")
    return Spec(provider, name, base_url.rstrip("/"), api_key_env)


def with_model(spec: Spec, override: str) -> Spec:
    """*spec* with a Mood's ``model`` setting over it: a bare name keeps the provider, a
    ``PROVIDER:MODEL`` replaces both (the base URL and key variable stay the agent's)."""
    override = (override or "").strip()
    if not override:
        return spec
    if ":" in override and override.split(":", 1)[0].lower() in PROVIDERS:
        other = parse(override)
        return Spec(other.provider, other.model, spec.base_url, spec.api_key_env)
    return parse(f"{spec.provider}:{override}", spec.base_url, spec.api_key_env)


@functools.cache
def _tls() -> "ssl.SSLContext":
    """One TLS context per process: loading the system's certificates costs tens of
    milliseconds, and a turn makes a client of its own."""
    import ssl

    return ssl.create_default_context()


def build(spec: Spec, *, timeout: float, max_retries: int = 3, environ=None):
    """The pydantic-ai model for *spec* and its client (close it when the turn ends),
    bounded by *timeout* seconds a request and retrying 429s and 5xx *max_retries* times
    with backoff (honouring Retry-After); redirects are not followed."""
    key = spec.key(environ)
    wire = PROVIDERS[spec.provider].wire
    if wire == "anthropic":
        import anthropic
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        http = anthropic.DefaultAsyncHttpxClient(verify=_tls(), timeout=timeout,
                                                 follow_redirects=False)
        client = anthropic.AsyncAnthropic(api_key=key or "not-needed", base_url=spec.url or None,
                                          max_retries=max_retries, timeout=timeout,
                                          http_client=http)
        return AnthropicModel(spec.model, provider=AnthropicProvider(anthropic_client=client)), client
    import openai
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    http = openai.DefaultAsyncHttpxClient(verify=_tls(), timeout=timeout, follow_redirects=False)
    client = openai.AsyncOpenAI(api_key=key or "not-needed", base_url=spec.url or None,
                                max_retries=max_retries, timeout=timeout, http_client=http)
    provider = OpenAIProvider(openai_client=client)
    if spec.provider == "openai" and not spec.url:
        return OpenAIChatModel(spec.model, provider=provider), client
    # OpenAI-compatible servers (ollama, vLLM, llama.cpp, OpenRouter) take max_tokens.
    from pydantic_ai.profiles.openai import openai_model_profile

    profile = {**openai_model_profile(spec.model), "openai_chat_supports_max_completion_tokens": False}
    return OpenAIChatModel(spec.model, provider=provider, profile=profile), client
