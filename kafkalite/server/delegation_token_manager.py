"""A broker's delegation tokens (KIP-48): Kafka 2.8's DelegationTokenManager over ZooKeeper.

Tokens live in ``/delegation_token/tokens/<tokenId>`` (``zk.delegation_tokens``); each broker
keeps every live token in a ``TokenCache`` (with its SCRAM credentials, for token
authentication), loaded at start and kept current from the ``/delegation_token/token_changes``
notifications that every create, renew and expiry writes. Without a secret key
(``delegation.token.secret.key`` or its alias ``delegation.token.master.key``) tokens are
disabled: nothing is created in ZooKeeper and every call answers DELEGATION_TOKEN_AUTH_DISABLED.

Changes are made one at a time (a DeferredLock, Kafka's lock), each written to ZooKeeper, then to
this broker's cache, then announced. The active controller removes expired tokens every
``delegation.token.expiry.check.interval.ms``, as in Kafka.
"""

from __future__ import annotations

import logging
import time
from typing import Callable

from twisted.internet import defer, task

from kafkalite import errors
from kafkalite.security.delegation_tokens import (
    DelegationToken, TokenCache, TokenInfo, create_hmac, is_expired, may_renew,
)
from kafkalite.zk.delegation_tokens import DelegationTokenZkStore
from zk_schema.delegation_tokens import TOKEN_CHANGES_PATH, new_token_id

log = logging.getLogger(__name__)

__all__ = ["DelegationTokenManager", "secret_key_of"]

ERROR_TIMESTAMP = -1
_DISABLED = errors.DelegationTokenAuthDisabledError.code
_NOT_FOUND = errors.DelegationTokenNotFoundError.code
_MISMATCH = errors.DelegationTokenOwnerMismatchError.code
_EXPIRED = errors.DelegationTokenExpiredError.code


def secret_key_of(config) -> str | None:
    """Kafka 2.8: delegation.token.secret.key, else its alias delegation.token.master.key;
    empty means none."""
    key = getattr(config, "delegation_token_secret_key", None) or getattr(
        config, "delegation_token_master_key", None)
    return key or None


class DelegationTokenManager:
    def __init__(self, secret_key: str | None, max_lifetime_ms: int, default_renew_ms: int,
                 check_interval_ms: int, now_ms: Callable[[], int] | None = None):
        self.secret_key = secret_key or None
        self.max_lifetime_ms = max_lifetime_ms
        self.default_renew_ms = default_renew_ms
        self.check_interval_ms = check_interval_ms
        self.now_ms = now_ms or (lambda: int(time.time() * 1000))
        self.cache = TokenCache()
        #: whether this broker runs the expiry check (the broker says: its active controller)
        self.is_controller: Callable[[], bool] = lambda: True
        self._lock = defer.DeferredLock()
        self._store: DelegationTokenZkStore | None = None
        self._deferred_zk = None
        self._watch = None
        self._expiry_loop: task.LoopingCall | None = None
        self._last_change = -1
        self._busy = False
        self._again: list[str] | None = None

    @classmethod
    def from_config(cls, config) -> "DelegationTokenManager":
        return cls(secret_key_of(config), config.delegation_token_max_lifetime_ms,
                   config.delegation_token_expiry_time_ms,
                   config.delegation_token_expiry_check_interval_ms)

    @property
    def enabled(self) -> bool:
        return self.secret_key is not None

    # --- start and stop ------------------------------------------------------------------------
    @defer.inlineCallbacks
    def start(self, zk, deferred_zk, reactor=None):
        """Create the paths, load every token, follow the change notifications, and check for
        expired tokens periodically. Nothing when tokens are disabled."""
        if not self.enabled:
            return
        self._deferred_zk = deferred_zk
        self._store = DelegationTokenZkStore(zk)
        yield deferred_zk.run(self._store.create_paths)
        tokens = yield deferred_zk.run(self._load_all)
        for token in tokens:
            self.cache.update(token)
        log.info("delegation tokens enabled: %d token(s) loaded", len(tokens))
        self._watch = zk.watch_children(TOKEN_CHANGES_PATH, self._changed)
        self._expiry_loop = task.LoopingCall(self._check_expiry)
        if reactor is not None:
            self._expiry_loop.clock = reactor
        self._expiry_loop.start(self.check_interval_ms / 1000.0, now=False)

    def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        if self._expiry_loop is not None and self._expiry_loop.running:
            self._expiry_loop.stop()

    def _token(self, info: TokenInfo) -> DelegationToken:
        return DelegationToken(info, create_hmac(info.token_id, self.secret_key))

    def _load_all(self) -> list[DelegationToken]:
        """Blocking: every token in ZooKeeper (a znode that is not one is logged and skipped)."""
        out = []
        for token_id in self._store.token_ids():
            try:
                info = self._store.get(token_id)
            except ValueError as exc:
                log.error("ignoring delegation token %s: %s", token_id, exc)
                continue
            if info is not None:
                out.append(self._token(info))
        return out

    # --- notifications from other brokers ------------------------------------------------------
    def _changed(self, children) -> None:
        """The notifications' children changed (on the reactor): re-read the tokens named by
        the new ones, one pass at a time."""
        if self._busy:
            self._again = list(children or [])
            return
        self._busy = True
        d = self._deferred_zk.run(self._read_changed, list(children or []))
        d.addCallback(self._apply_changed)
        d.addErrback(lambda f: log.warning("processing token change notifications failed: %s",
                                           f.getErrorMessage()))
        d.addBoth(self._pass_done)

    def _read_changed(self, children: list[str]):
        last, token_ids = self._store.read_changes(children, self._last_change)
        fresh = {}
        for token_id in dict.fromkeys(token_ids):
            try:
                fresh[token_id] = self._store.get(token_id)
            except ValueError as exc:
                log.error("ignoring delegation token %s: %s", token_id, exc)
        self._store.purge_changes(children, self.now_ms())
        return last, fresh

    def _apply_changed(self, result) -> None:
        last, fresh = result
        self._last_change = max(self._last_change, last)
        for token_id, info in fresh.items():
            if info is None:
                self.cache.remove(token_id)
            else:
                self.cache.update(self._token(info))
            log.info("processed the change notification of token %s", token_id)

    def _pass_done(self, _result) -> None:
        self._busy = False
        again, self._again = self._again, None
        if again is not None:
            self._changed(again)

    # --- the APIs ------------------------------------------------------------------------------
    def _update(self, token: DelegationToken) -> defer.Deferred:
        """Write the token, cache it, announce it (Kafka's updateToken)."""
        def write():
            self._store.set_or_create(token.info)
        d = self._deferred_zk.run(write)
        d.addCallback(lambda _: self.cache.update(token))
        d.addCallback(lambda _: self._deferred_zk.run(self._store.notify_change,
                                                      token.info.token_id))
        return d

    def _remove(self, token_id: str) -> defer.Deferred:
        d = self._deferred_zk.run(self._store.delete, token_id)
        d.addCallback(lambda _: self.cache.remove(token_id))
        d.addCallback(lambda _: self._deferred_zk.run(self._store.notify_change, token_id))
        return d

    def create(self, owner: str, renewers: list[str], max_lifetime_ms: int) -> defer.Deferred:
        """Fires with ``(error code, DelegationToken or None)``."""
        if not self.enabled:
            return defer.succeed((_DISABLED, None))

        @defer.inlineCallbacks
        def locked():
            now = self.now_ms()
            lifetime = (self.max_lifetime_ms if max_lifetime_ms <= 0
                        else min(max_lifetime_ms, self.max_lifetime_ms))
            max_timestamp = now + lifetime
            info = TokenInfo(new_token_id(), owner, tuple(renewers), now, max_timestamp,
                             min(max_timestamp, now + self.default_renew_ms))
            token = self._token(info)
            yield self._update(token)
            log.info("Created a delegation token: %s for owner: %s", info.token_id, owner)
            return 0, token
        return self._lock.run(locked)

    def renew(self, principal: str, hmac: bytes, renew_period_ms: int) -> defer.Deferred:
        """Fires with ``(error code, expiry timestamp)``."""
        return self._change(principal, hmac, renew_period_ms, renew=True)

    def expire(self, principal: str, hmac: bytes, expiry_period_ms: int) -> defer.Deferred:
        """Fires with ``(error code, expiry timestamp)``; a negative period expires now."""
        return self._change(principal, hmac, expiry_period_ms, renew=False)

    def _change(self, principal: str, hmac: bytes, period_ms: int, renew: bool):
        if not self.enabled:
            return defer.succeed((_DISABLED, ERROR_TIMESTAMP))

        @defer.inlineCallbacks
        def locked():
            info = self.cache.token_for_hmac(hmac)
            if info is None:
                return _NOT_FOUND, ERROR_TIMESTAMP
            now = self.now_ms()
            if not may_renew(principal, info):
                return _MISMATCH, ERROR_TIMESTAMP
            if is_expired(info, now):
                return _EXPIRED, ERROR_TIMESTAMP
            if not renew and period_ms < 0:
                yield self._remove(info.token_id)
                log.info("Token expired for token: %s for owner: %s", info.token_id, info.owner)
                return 0, now
            period = self.default_renew_ms if renew and period_ms < 0 else period_ms
            expiry = min(info.max_timestamp, now + period)
            yield self._update(self._token(_with_expiry(info, expiry)))
            log.info("%s expiry time of token %s (owner %s) to %d",
                     "Renewed the" if renew else "Updated the", info.token_id, info.owner, expiry)
            return 0, expiry
        return self._lock.run(locked)

    def tokens(self, eligible: Callable[[TokenInfo], bool]) -> list[DelegationToken]:
        return [self._token(info) for info in self.cache.tokens() if eligible(info)]

    # --- token authentication ------------------------------------------------------------------
    def scram_credential(self, mechanism: str, token_id: str):
        """``(credential, owner)`` for a SCRAM login with a token, or None (unknown token)."""
        info = self.cache.token(token_id)
        credential = self.cache.credential(mechanism, token_id)
        if info is None or credential is None:
            return None
        return credential, info.owner

    # --- expiry --------------------------------------------------------------------------------
    def _check_expiry(self):
        if not self.is_controller():
            return None
        d = self.expire_tokens()
        d.addErrback(lambda f: log.warning("the token expiry check failed: %s",
                                           f.getErrorMessage()))
        return d

    def expire_tokens(self) -> defer.Deferred:
        """Remove every token past its expiry or maximum time (Kafka's expireTokens)."""
        @defer.inlineCallbacks
        def locked():
            now = self.now_ms()
            for info in self.cache.tokens():
                if is_expired(info, now):
                    log.info("Delegation token expired for token: %s for owner: %s",
                             info.token_id, info.owner)
                    yield self._remove(info.token_id)
        return self._lock.run(locked)


def _with_expiry(info: TokenInfo, expiry: int) -> TokenInfo:
    return TokenInfo(info.token_id, info.owner, info.renewers, info.issue_timestamp,
                     info.max_timestamp, expiry)
