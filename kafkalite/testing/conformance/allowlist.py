"""Known differences between kafkalite and Apache Kafka 2.8.2: scenario name -> reason.

Every reason names the issue whose fix removes the difference (issue 23: an API or feature
kafkalite lacks; issue 24: a kafkalite bug). An entry whose scenario answers the same on both
systems fails the run as stale, so this list only ever holds differences that still exist.
"""

from __future__ import annotations

ALLOWLIST: dict[str, str] = {
}
