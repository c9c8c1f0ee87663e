"""Delegation tokens in ZooKeeper (Kafka 2.8's KafkaZkClient token methods over
zk_schema.delegation_tokens).

``DelegationTokenZkStore(zk)`` uses only the raw ZnodeOps, so its methods block: call them
through ``TwistedZk.run`` from the reactor. Every change of a token (created, renewed, expired)
is followed by a sequential notification naming the token, which every broker watches.
"""

from __future__ import annotations

import time

from zk_schema import delegation_tokens as s_tokens
from zk_schema._codec import SchemaError

from kafkalite.zk.errors import ZkNoNodeError
from kafkalite.zk.ops import ZnodeOps
from kafkalite.zk.znode_acls import sensitive_acl

__all__ = ["DelegationTokenZkStore", "CHANGE_EXPIRATION_MS"]

#: notifications older than this are deleted (Kafka's ZkNodeChangeNotificationListener default)
CHANGE_EXPIRATION_MS = 15 * 60 * 1000


class DelegationTokenZkStore:
    def __init__(self, zk: ZnodeOps):
        self.zk = zk

    def create_paths(self) -> None:
        for path in s_tokens.DELEGATION_TOKEN_PATHS:
            self.zk.ensure_path(path)

    # --- tokens --------------------------------------------------------------------------------
    def token_ids(self) -> list[str]:
        return self.zk.get_children(s_tokens.TOKENS_PATH)

    def get(self, token_id: str) -> s_tokens.TokenInfo | None:
        """The token, or None when it has no znode. SchemaError for a znode that is not one."""
        path = s_tokens.token_path(token_id)
        got = self.zk.get_data(path)
        if got is None:
            return None
        return s_tokens.TokenInfo.decode(got[0], path)

    def set_or_create(self, token: s_tokens.TokenInfo) -> None:
        path = s_tokens.token_path(token.token_id)
        # tokens are sensitive (Kafka's SensitiveRootPaths): not world-readable
        self.zk._create_or_set(path, token.encode(), acl=sensitive_acl(self.zk, path))

    def delete(self, token_id: str) -> None:
        self.zk.delete(s_tokens.token_path(token_id), recursive=True)

    def notify_change(self, token_id: str) -> str:
        """Announce that a token changed; returns the notification's path."""
        data = s_tokens.encode_change(token_id)
        try:
            return self.zk.create(s_tokens.change_prefix_path(), data, sequence=True)
        except ZkNoNodeError:
            self.zk.ensure_path(s_tokens.TOKEN_CHANGES_PATH)
            return self.zk.create(s_tokens.change_prefix_path(), data, sequence=True)

    # --- change notifications ------------------------------------------------------------------
    def read_changes(self, children: list[str], after: int) -> tuple[int, list[str]]:
        """(the highest sequence seen, the token ids named by notifications newer than
        ``after``), in order; notifications gone already are skipped."""
        fresh = sorted((c for c in children if c.startswith(s_tokens.TOKEN_CHANGE_PREFIX)),
                       key=s_tokens.change_sequence)
        last, token_ids = after, []
        for child in fresh:
            sequence = s_tokens.change_sequence(child)
            if sequence <= after:
                continue
            last = sequence
            got = self.zk.get_data(s_tokens.change_child_path(child))
            if got is None:
                continue
            try:
                token_ids.append(s_tokens.decode_change(got[0]))
            except SchemaError:
                continue
        return last, token_ids

    def purge_changes(self, children: list[str], now_ms: int | None = None) -> int:
        """Delete notifications older than Kafka's 15 minutes (every broker has seen them)."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        removed = 0
        for child in children:
            if not child.startswith(s_tokens.TOKEN_CHANGE_PREFIX):
                continue
            path = s_tokens.change_child_path(child)
            got = self.zk._get_with_stat(path)
            if got is not None and now_ms - int(got[1].ctime) > CHANGE_EXPIRATION_MS:
                if self.zk.delete(path):
                    removed += 1
        return removed
