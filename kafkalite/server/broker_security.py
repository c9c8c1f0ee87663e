"""A broker's security, set up from its config: each listener's protocol (TLS contexts, SASL
mechanisms), the SCRAM credentials it accepts (from ZooKeeper's ``/config/users``), its
delegation tokens (``delegation_token_manager``), the ACL
authorizer (``authorizer.class.name``) and how it connects to other brokers
(``security.inter.broker.protocol``). ``BrokerService`` owns one.

Everything that can be wrong in the config is found in the constructor, so a broker with a missing
key file or an unknown JAAS module fails at start with an error naming the setting.
"""

from __future__ import annotations

import logging

from twisted.internet import defer

import zk_schema

from kafkalite.config import ACL_AUTHORIZER, BrokerConfig
from kafkalite.security.acl_authorizer import AclAuthorizer
from kafkalite.security.authorizer import AuthorizerSettings, parse_super_users
from kafkalite.security.client_transport import broker_connector
from kafkalite.security.credential_cache import ScramCredentialCache
from kafkalite.security.settings import (
    ClientSecurity, ListenerSecurity, inter_broker_security, listener_security,
)
from kafkalite.security.tls import server_context_factory
from kafkalite.server.delegation_token_manager import DelegationTokenManager
from kafkalite.zk.acls import AclZkStore
from kafkalite.zk.credentials import UserConfigZkStore

log = logging.getLogger(__name__)

__all__ = ["BrokerSecurity"]


class BrokerSecurity:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.listeners: dict[str, ListenerSecurity] = {
            item.name: listener_security(config, item.name) for item in config.listener_list}
        # fail now, not at the first connection: every key file must load
        self._tls_contexts = {name: server_context_factory(sec.tls)
                              for name, sec in self.listeners.items() if sec.uses_tls}
        self.inter_broker: ClientSecurity | None = inter_broker_security(config)
        # connect functions for protocol.channel.BrokerChannel: replica fetchers and controlled
        # shutdown use the inter-broker listener, the controller its own listener
        self.inter_broker_connect = broker_connector(self.inter_broker)
        self.controller_connect = broker_connector(
            inter_broker_security(config, config.controller_listener))
        self.credentials = ScramCredentialCache()
        self.tokens = DelegationTokenManager.from_config(config)
        self.authorizer: AclAuthorizer | None = None
        self._authorizer_wanted = bool(config.authorizer_class_name)
        if config.authorizer_class_name and config.authorizer_class_name != ACL_AUTHORIZER:
            log.info("authorizer.class.name=%s is served by kafkalite's AclAuthorizer",
                     config.authorizer_class_name)
        self._config_watch = None
        self._tzk = None

    @property
    def protocol_map(self) -> dict[str, str]:
        return {name: sec.protocol for name, sec in self.listeners.items()}

    def scram_lookup(self, mechanism: str, user: str):
        return self.credentials.lookup(mechanism, user)

    def token_lookup(self, mechanism: str, token_id: str):
        """A delegation token's SCRAM credential and owner (token authentication)."""
        return self.tokens.scram_credential(mechanism, token_id)

    # --- listening ------------------------------------------------------------------------------
    def listen(self, reactor, listener, factory):
        """Bind ``listener`` (a config Listener) with TLS when its protocol says so."""
        interface = listener.host or "0.0.0.0"
        context = self._tls_contexts.get(listener.name)
        if context is not None:
            return reactor.listenSSL(listener.port, factory, context, interface=interface)
        return reactor.listenTCP(listener.port, factory, interface=interface)

    # --- ZooKeeper-backed parts -----------------------------------------------------------------
    @defer.inlineCallbacks
    def start(self, zk, deferred_zk):
        """Load the SCRAM credentials and keep them current; start the authorizer."""
        self._tzk = deferred_zk
        store = UserConfigZkStore(zk)
        if any(sec.uses_sasl for sec in self.listeners.values()):
            configs = yield deferred_zk.run(self.credentials.refresh, store)
            self.credentials.replace_all(configs)
            self._config_watch = zk.watch_children(zk_schema.CONFIG_CHANGES_PATH,
                                                   lambda _children: self._reload(store))
            log.info("SCRAM credentials loaded for %d user(s)", len(self.credentials.users()))
        yield self.tokens.start(zk, deferred_zk)
        if self._authorizer_wanted:
            settings = AuthorizerSettings(parse_super_users(self.config.super_users),
                                          self.config.allow_everyone_if_no_acl_found)
            self.authorizer = AclAuthorizer(settings, deferred_zk, AclZkStore(zk))
            yield self.authorizer.start(zk)

    def _reload(self, store) -> None:
        d = self._tzk.run(self.credentials.refresh, store)
        d.addCallback(self.credentials.replace_all)
        d.addErrback(lambda f: log.warning("reloading SCRAM credentials failed: %s",
                                           f.getErrorMessage()))

    def stop(self) -> None:
        self.tokens.stop()
        if self._config_watch is not None:
            self._config_watch.cancel()
            self._config_watch = None
        if self.authorizer is not None:
            self.authorizer.stop()

