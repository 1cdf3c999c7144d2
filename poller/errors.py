"""One exception hierarchy for the whole service.

Library code raises these (translating driver errors with ``raise ... from``);
only the CLI turns them into one-line messages and exit codes.
"""

from __future__ import annotations


class PollerError(Exception):
    """Base of every error mood-poller raises on purpose."""

    exit_code = 1


class UserError(PollerError):
    """Bad input from the person at the keyboard: a clear message, nothing written."""


class NotFound(UserError):
    """A named Mood, participant, agent, post or wake does not exist."""


class AlreadyExists(UserError):
    """A slug or handle is already taken."""


class PostTooLong(UserError):
    """A post's text is longer than :data:`poller.text.MAX_POST_CHARS` (the API answers 413)."""


class InvalidSetting(UserError):
    """A setting key or value fails validation."""


class ConfigError(PollerError):
    """The configuration is broken: a supervisor should not restart us."""

    exit_code = 78  # EX_CONFIG


class StoreError(PollerError):
    """The database could not be opened or used."""

    exit_code = 78


class StoreGone(StoreError):
    """The SQLite file the store opened was deleted or replaced under it.

    Nothing more is written (it would go into a file no one can open again);
    restarting would start on an empty or different database, so a supervisor
    should not restart us: an operator puts the file back.
    """


class StoreBusy(StoreError):
    """Another writer held the database past the busy timeout: try again later."""

    exit_code = 75  # EX_TEMPFAIL


class StoreUnavailable(StoreError):
    """The database server could not be reached (refused, timed out, name not resolved,
    starting up): it may come back, so a supervisor should try again later."""

    exit_code = 75  # EX_TEMPFAIL


class TokenizerError(ConfigError):
    """The configured tiktoken encoding cannot be loaded offline."""


class WikiError(PollerError):
    """The dials wiki could not be read or written."""


class WikiUnavailable(WikiError):
    """The dials wiki could not be reached (refused, timed out) where it was needed."""

    exit_code = 75  # EX_TEMPFAIL
