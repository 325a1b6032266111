"""Read consistency, chosen per store or per call: `LINEARIZABLE`,
`Consistency.at_least(revision)` or `STALE`, sent with a read as its
`ReadOptions`."""

from __future__ import annotations

from dataclasses import dataclass

from handlestore.v1 import common_pb2


@dataclass(frozen=True)
class Consistency:
    """Read consistency, chosen per store or per call: `LINEARIZABLE` (the
    default: read-index from the leader), `at_least(revision)`
    (read-your-writes without a leader round trip) or `STALE` (whatever the
    serving node has applied)."""

    kind: common_pb2.Consistency = common_pb2.CONSISTENCY_LINEARIZABLE
    min_revision: int = 0

    @staticmethod
    def at_least(revision: int) -> "Consistency":
        return Consistency(common_pb2.CONSISTENCY_AT_LEAST, revision)

    def to_pb(self) -> common_pb2.ReadOptions:
        return common_pb2.ReadOptions(consistency=self.kind, min_revision=self.min_revision)


LINEARIZABLE = Consistency()
STALE = Consistency(common_pb2.CONSISTENCY_STALE)
