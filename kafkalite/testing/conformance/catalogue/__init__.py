"""The conformance catalogue: every scenario, grouped by family (one module each).

The scenarios cover every Kafka API a kafkalite broker advertises (31 API keys, the table in
``kafkalite.server.api_table``), and a few of Kafka 2.8's that it
does not serve yet (whose differences are allowlisted). ``tests/conformance`` checks that every
served key is named by some scenario. The ``acls`` scenarios run on a pair of 1-broker clusters
with an authorizer (``conformance.clusters``); all others on the shared 3-broker pair.
"""

from __future__ import annotations

from kafkalite.testing.conformance.catalogue import (acls, admin, configs, groups,
                                                     produce_fetch, retention, security,
                                                     topics)
from kafkalite.testing.conformance.catalogue import scram_features
from kafkalite.testing.conformance.catalogue import log_dirs
from kafkalite.testing.conformance.catalogue import delegation_tokens
from kafkalite.testing.conformance.catalogue import transactions
from kafkalite.testing.conformance.catalogue import producers
from kafkalite.testing.conformance.catalogue import purge
from kafkalite.testing.conformance.scenario import Scenario

MODULES = (topics, produce_fetch, groups, configs, admin, security, acls, retention,
           scram_features)
MODULES += (log_dirs,)
MODULES += (delegation_tokens,)
MODULES += (transactions,)
MODULES += (producers,)
MODULES += (purge,)

SCENARIOS: list[Scenario] = [s for module in MODULES for s in module.family.scenarios]
BY_NAME: dict[str, Scenario] = {s.name: s for s in SCENARIOS}
if len(BY_NAME) != len(SCENARIOS):
    raise ValueError("two conformance scenarios share a name")
