"""The store: the one way into the database.

Every SQL statement the service runs lives in this package; everything else
calls named domain verbs and gets named records back.
"""

from poller.store.core import Store, TRUST_LEVELS

__all__ = ["Store", "TRUST_LEVELS"]
