"""The authorizer's decisions (kafkalite.security.authorizer): Kafka 2.x AclAuthorizer rules,
examples first, then properties over random ACL sets."""

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.security.acl import (
    AccessControlEntry as Ace, AclBindingFilter, AclOperation as Op, AclPermissionType as Perm,
    PatternType, ResourcePattern as Rp, ResourcePatternFilter, ResourceType as Rt,
)
from kafkalite.security.authorizer import (
    AclSnapshot, AuthorizerSettings, authorize, authorize_by_resource_type, parse_super_users,
)

ALLOW, DENY = Perm.ALLOW, Perm.DENY
NO_ACL_DENIES = AuthorizerSettings()


def topic(name, prefixed=False):
    return Rp(Rt.TOPIC, name, PatternType.PREFIXED if prefixed else PatternType.LITERAL)


def check(snapshot, principal, op, name, host="10.0.0.1", settings=NO_ACL_DENIES,
          resource_type=Rt.TOPIC):
    return authorize(snapshot, settings, principal, host, op, resource_type, name)


def test_allow_for_the_principal_and_nobody_else():
    snap = AclSnapshot({topic("orders"): [Ace("User:alice", "*", Op.WRITE, ALLOW)]})
    assert check(snap, "User:alice", Op.WRITE, "orders")
    assert not check(snap, "User:bob", Op.WRITE, "orders")
    assert not check(snap, "User:alice", Op.READ, "orders")
    assert not check(snap, "User:alice", Op.WRITE, "payments")


def test_deny_wins_over_allow_and_over_all():
    snap = AclSnapshot({topic("orders"): [Ace("User:*", "*", Op.ALL, ALLOW),
                                          Ace("User:bob", "*", Op.READ, DENY)]})
    assert check(snap, "User:alice", Op.READ, "orders")
    assert not check(snap, "User:bob", Op.READ, "orders")
    assert check(snap, "User:bob", Op.WRITE, "orders")


def test_deny_from_a_prefixed_pattern_beats_a_literal_allow():
    snap = AclSnapshot({topic("orders"): [Ace("User:alice", "*", Op.READ, ALLOW)],
                        topic("ord", True): [Ace("User:alice", "*", Op.READ, DENY)]})
    assert not check(snap, "User:alice", Op.READ, "orders")


def test_implied_operations():
    snap = AclSnapshot({topic("t"): [Ace("User:alice", "*", Op.READ, ALLOW)],
                        Rp(Rt.TOPIC, "c"): [Ace("User:alice", "*", Op.ALTER_CONFIGS, ALLOW)]})
    assert check(snap, "User:alice", Op.DESCRIBE, "t")            # Read implies Describe
    assert not check(snap, "User:alice", Op.WRITE, "t")
    assert check(snap, "User:alice", Op.DESCRIBE_CONFIGS, "c")    # AlterConfigs implies it
    assert not check(snap, "User:alice", Op.DESCRIBE, "c")


def test_a_deny_of_describe_is_not_lifted_by_an_allow_of_read():
    snap = AclSnapshot({topic("t"): [Ace("User:alice", "*", Op.READ, ALLOW),
                                     Ace("User:alice", "*", Op.DESCRIBE, DENY)]})
    assert not check(snap, "User:alice", Op.DESCRIBE, "t")
    assert check(snap, "User:alice", Op.READ, "t")


def test_hosts():
    snap = AclSnapshot({topic("t"): [Ace("User:alice", "10.0.0.1", Op.READ, ALLOW)]})
    assert check(snap, "User:alice", Op.READ, "t", host="10.0.0.1")
    assert not check(snap, "User:alice", Op.READ, "t", host="10.0.0.2")


def test_wildcard_and_prefixed_resources():
    snap = AclSnapshot({topic("*"): [Ace("User:alice", "*", Op.READ, ALLOW)],
                        topic("pay-", True): [Ace("User:bob", "*", Op.WRITE, ALLOW)]})
    assert check(snap, "User:alice", Op.READ, "anything")
    assert check(snap, "User:bob", Op.WRITE, "pay-eu")
    assert not check(snap, "User:bob", Op.WRITE, "pay")
    assert not check(snap, "User:bob", Op.WRITE, "orders")


def test_super_users_and_no_acl_found():
    settings_ = AuthorizerSettings(super_users=parse_super_users("User:admin; User:broker"),
                                   allow_everyone_if_no_acl_found=True)
    snap = AclSnapshot({topic("locked"): [Ace("User:alice", "*", Op.READ, ALLOW)]})
    assert check(snap, "User:admin", Op.DELETE, "locked", settings=settings_)
    assert check(snap, "User:bob", Op.WRITE, "open", settings=settings_)    # no ACLs at all
    assert not check(snap, "User:bob", Op.READ, "locked", settings=settings_)
    assert not check(snap, "User:bob", Op.WRITE, "open")                     # default: deny


def test_authorize_by_resource_type():
    alice_writes = AclSnapshot({topic("t"): [Ace("User:alice", "*", Op.WRITE, ALLOW)]})
    assert authorize_by_resource_type(alice_writes, NO_ACL_DENIES, "User:alice", "h", Op.WRITE,
                                      Rt.TOPIC)
    assert not authorize_by_resource_type(alice_writes, NO_ACL_DENIES, "User:bob", "h",
                                          Op.WRITE, Rt.TOPIC)
    denied = alice_writes.updated(topic("*"), [Ace("User:alice", "*", Op.WRITE, DENY)])
    assert not authorize_by_resource_type(denied, NO_ACL_DENIES, "User:alice", "h", Op.WRITE,
                                          Rt.TOPIC)
    shadowed = alice_writes.updated(topic("t", True), [Ace("User:alice", "*", Op.WRITE, DENY)])
    assert not authorize_by_resource_type(shadowed, NO_ACL_DENIES, "User:alice", "h", Op.WRITE,
                                          Rt.TOPIC)


def test_snapshot_bindings_and_filters():
    snap = AclSnapshot({topic("a"): [Ace("User:x", "*", Op.READ, ALLOW)],
                        topic("a", True): [Ace("User:y", "*", Op.WRITE, ALLOW)],
                        Rp(Rt.GROUP, "g"): [Ace("User:x", "*", Op.READ, ALLOW)]})
    assert len(snap) == 3
    matched = list(snap.bindings(AclBindingFilter(ResourcePatternFilter(
        Rt.TOPIC, "abc", PatternType.MATCH))))
    assert [b.pattern for b in matched] == [topic("a", True)]   # "abc" starts with prefix "a"
    exact = list(snap.bindings(AclBindingFilter(ResourcePatternFilter(Rt.TOPIC, "a",
                                                                      PatternType.ANY))))
    assert {b.pattern for b in exact} == {topic("a"), topic("a", True)}
    assert snap.updated(Rp(Rt.GROUP, "g"), []).patterns() == [topic("a"), topic("a", True)]


# --- properties --------------------------------------------------------------------------------

names = st.text(alphabet="ab-*", min_size=1, max_size=4)
principals = st.sampled_from(["User:alice", "User:bob", "User:*"])
ops = st.sampled_from([Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALL, Op.ALTER_CONFIGS,
                       Op.DESCRIBE_CONFIGS])
entries = st.builds(Ace, principals, st.sampled_from(["*", "h1", "h2"]), ops,
                    st.sampled_from([ALLOW, DENY]))
patterns = st.builds(Rp, st.sampled_from([Rt.TOPIC, Rt.GROUP]), names,
                     st.sampled_from([PatternType.LITERAL, PatternType.PREFIXED]))
acl_maps = st.dictionaries(patterns, st.lists(entries, max_size=3), max_size=6)
asks = st.tuples(st.sampled_from(["User:alice", "User:bob"]), st.sampled_from(["h1", "h2"]),
                 st.sampled_from([Op.READ, Op.WRITE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS]),
                 st.sampled_from([Rt.TOPIC, Rt.GROUP]), names)


def _applies(pattern, resource_type, name):
    if pattern.resource_type != resource_type:
        return False
    if pattern.pattern_type == PatternType.LITERAL:
        return pattern.name in (name, "*")
    return name.startswith(pattern.name)


@settings(max_examples=120, deadline=None)
@given(acl_maps, asks)
def test_matching_finds_exactly_the_applicable_patterns(acls, ask):
    _, _, _, resource_type, name = ask
    snap = AclSnapshot(acls)
    expected = sorted(e for p, es in acls.items() if _applies(p, resource_type, name)
                      for e in set(es))
    assert sorted(snap.matching(resource_type, name)) == expected


@settings(max_examples=120, deadline=None)
@given(acl_maps, asks)
def test_a_matching_deny_always_refuses(acls, ask):
    principal, host, op, resource_type, name = ask
    deny = Ace(principal, host, op, DENY)
    snap = AclSnapshot(acls).updated(Rp(resource_type, name),
                                     set(acls.get(Rp(resource_type, name), [])) | {deny})
    assert not authorize(snap, NO_ACL_DENIES, principal, host, op, resource_type, name)
    assert authorize(snap, AuthorizerSettings(super_users=frozenset({principal})), principal,
                     host, op, resource_type, name)


@settings(max_examples=120, deadline=None)
@given(acl_maps, asks, patterns, entries)
def test_adding_an_allow_never_refuses_and_adding_a_deny_never_grants(acls, ask, pattern, entry):
    principal, host, op, resource_type, name = ask
    snap = AclSnapshot(acls)
    before = authorize(snap, NO_ACL_DENIES, principal, host, op, resource_type, name)
    after = authorize(snap.updated(pattern, set(acls.get(pattern, [])) | {entry}),
                      NO_ACL_DENIES, principal, host, op, resource_type, name)
    if entry.permission_type == ALLOW:
        assert after or not before
    else:
        assert before or not after


@settings(max_examples=100, deadline=None)
@given(acl_maps, asks)
def test_no_applicable_acl_means_the_config_decides(acls, ask):
    principal, host, op, resource_type, name = ask
    snap = AclSnapshot({p: es for p, es in acls.items() if not _applies(p, resource_type, name)})
    for allow in (True, False):
        assert authorize(snap, AuthorizerSettings(allow_everyone_if_no_acl_found=allow),
                         principal, host, op, resource_type, name) is allow
