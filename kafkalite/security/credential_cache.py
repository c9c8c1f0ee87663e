"""The broker's SCRAM credentials, kept in memory from ZooKeeper's ``/config/users`` (Kafka's
CredentialCache), so a SCRAM exchange never waits for ZooKeeper.

``refresh(store)`` reads every user (blocking: run it through ``TwistedZk.run``); the broker calls
it at start and whenever ``/config/changes`` changes, so a credential added, changed or deleted
with ``kafkalite configs --alter --entity-type users`` is in force within moments on every
broker. A value that is not a credential is logged and skipped, never fatal.
"""

from __future__ import annotations

import logging

from kafkalite.security.scram import (
    SCRAM_MECHANISMS, ScramCredential, credential_from_string,
)

log = logging.getLogger(__name__)

__all__ = ["ScramCredentialCache"]


class ScramCredentialCache:
    def __init__(self):
        self._credentials: dict[tuple[str, str], ScramCredential] = {}

    def lookup(self, mechanism: str, user: str) -> ScramCredential | None:
        return self._credentials.get((mechanism, user))

    def users(self) -> set[str]:
        return {user for _, user in self._credentials}

    def replace_all(self, configs: dict[str, dict[str, str]]) -> None:
        """Swap in every user's credentials from their configs (``{user: {mechanism: text}}``)."""
        fresh: dict[tuple[str, str], ScramCredential] = {}
        for user, config in configs.items():
            for mechanism in SCRAM_MECHANISMS:
                text = config.get(mechanism)
                if text is None:
                    continue
                try:
                    fresh[(mechanism, user)] = credential_from_string(text)
                except ValueError as exc:
                    log.warning("ignoring the %s credential of user %s in ZooKeeper: %s",
                                mechanism, user, exc)
        self._credentials = fresh

    def refresh(self, store) -> dict[str, dict[str, str]]:
        """Read every user's config from ``store`` (a ``zk.credentials.UserConfigZkStore``).
        Blocking; returns what was read, for ``replace_all`` on the reactor."""
        return store.get_all()
