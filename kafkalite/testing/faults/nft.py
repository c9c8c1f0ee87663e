"""nftables rules that cut links between nodes of the fault network (pure: text only).

All rules live in one table of our own, ``bridge kafkalite_faults``, in the hub namespace, on the
bridge's forward hook: every frame from one node's veth to another's passes there, the host's
included. A cut link is one-directional: ``(a, b)`` drops IPv4 packets from a's address to b's,
all protocols, established connections too (a partition, not a refused connection: senders see
timeouts). A two-way cut is two directed ones.

``ruleset`` is a complete replacement of the table in one ``nft -f`` transaction: it declares the
table (so the delete cannot fail), deletes it, and creates it again with the current cuts, so
there is never a moment with half of the rules. ``heal`` is the same with no cuts.
"""

from __future__ import annotations

from typing import Iterable, Mapping

FAMILY = "bridge"
TABLE = "kafkalite_faults"
CHAIN = "forward"

Link = tuple[str, str]      # (from node, to node): packets in this direction are dropped


def directed(a: Iterable[str] | str, b: Iterable[str] | str, both: bool = True) -> set[Link]:
    """The directed links between every node of ``a`` and every node of ``b`` (each a name or
    names): a→b, and b→a too when ``both``. A node is never cut from itself."""
    sources = [a] if isinstance(a, str) else list(a)
    targets = [b] if isinstance(b, str) else list(b)
    links = {(x, y) for x in sources for y in targets if x != y}
    if both:
        links |= {(y, x) for x, y in links}
    return links


def ruleset(links: Iterable[Link], addresses: Mapping[str, str]) -> str:
    """The ``nft -f`` script that makes the table hold exactly ``links``."""
    rules = []
    for source, target in sorted(set(links)):
        try:
            src, dst = addresses[source], addresses[target]
        except KeyError as missing:
            raise KeyError(f"no address for node {missing}; known: {sorted(addresses)}") from None
        rules.append(f'        ip saddr {src} ip daddr {dst} counter drop '
                     f'comment "{source} -> {target}"')
    body = "\n".join(rules)
    return (f"table {FAMILY} {TABLE}\n"
            f"delete table {FAMILY} {TABLE}\n"
            f"table {FAMILY} {TABLE} {{\n"
            f"    chain {CHAIN} {{\n"
            f"        type filter hook forward priority filter; policy accept;\n"
            f"{body + chr(10) if body else ''}"
            f"    }}\n"
            f"}}\n")


def delete_script() -> str:
    """Remove the table (declared first, so this succeeds whether it exists or not)."""
    return f"table {FAMILY} {TABLE}\ndelete table {FAMILY} {TABLE}\n"
