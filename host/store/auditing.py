"""The store's audit trail: one record per call, written, read, pruned, and its chain.

:class:`Auditing` is a part of :class:`host.store.shared.Store` (the contract is there).
"""

from __future__ import annotations

from collections.abc import Sequence

from host.store.chain import CHECKPOINT_EVERY
from host.store.checks import check_filters, check_limit, check_ttl
from host.store.records import AuditRecord
from host.store.roles import AuditLog
from host.store.signing import Signer

__all__ = ["Auditing"]


class Auditing:
    """The audit records of :class:`host.store.shared.Store`, and the chain they are kept in."""

    _audit: AuditLog

    def write_audit(self, record: AuditRecord, *, rank: int, keep_s: float) -> bool:
        """Write the audit record of a call, in one step.

        A call has one record: a write for a call that has one already replaces it only with a
        higher ``rank`` (:data:`host.store.records.ACTED` over :data:`~host.store.records.ENDED`).
        NOTE: on SQLite it waits at most a second for another process's write lock, not the
        usual busy timeout: a stuck writer must not hold every call's answer for that long.

        Args:
            record: The record.
            rank: How much this writer knows of the call.
            keep_s: The retention period: Redis expires the record after it; SQLite keeps it
                until :meth:`prune_audit`.

        Returns:
            True if the record was written.
        """
        check_ttl(keep_s, "keep_s")
        return self._audit.write(record, rank, keep_s)

    def act_starting(self, record: AuditRecord, *, keep_s: float) -> None:
        """Keep the record of a first round's act (which has no claim) before the act starts.

        It is the record the act keeps if its worker dies (rank ``STARTED``): written into the
        audit records at once (Redis), or kept in a file of this process's own that whoever finds
        the process dead writes into them (SQLite, whose processes share one machine); either way
        it survives the worker's death, and the call's own record replaces it.

        Raises:
            host.errors.StoreError: It could not be kept.
        """
        check_ttl(keep_s, "keep_s")
        self._audit.started(record, keep_s)

    def write_audits(self, records: Sequence[tuple[AuditRecord, int]], *, keep_s: float) -> None:
        """Write the audit records of many calls at once, each as :meth:`write_audit` would.

        One transaction (SQLite) or one round trip (Redis) for the whole batch, in order: a later
        record of the same call replaces an earlier one only with a higher rank.

        Args:
            records: Each record with its rank.
            keep_s: The retention period, as for :meth:`write_audit`.
        """
        check_ttl(keep_s, "keep_s")
        if records:
            self._audit.write_many(records, keep_s)

    def audit_records(
        self,
        *,
        tool: str | None = None,
        principal: str | None = None,
        since: float | None = None,
        limit: int = 100,
    ) -> list[AuditRecord]:
        """The newest records that match every filter given, newest first.

        Args:
            tool: Only this tool's calls.
            principal: Only this caller's calls.
            since: Only calls that ended at this Unix time or later.
            limit: At most this many records.
        """
        check_filters(tool=tool, principal=principal)
        check_limit(limit)
        return self._audit.query(tool, principal, since, limit)

    def prune_audit(self, before: float) -> int:
        """Delete the audit chain's entries before its newest checkpoint older than ``before``
        (Unix time), so the chain stays verifiable from that checkpoint; how many."""
        return self._audit.prune(before)

    def audit_entries(self, *, after: int = 0, limit: int = 500) -> list[tuple[int, str, str]]:
        """The audit chain's entries after seq ``after``, in order: ``(seq, body, hash)``.

        ``body`` is the entry's canonical JSON, ``hash`` its SHA-256 as written
        (:mod:`host.store.chain`); :func:`host.store.chain_check.check_chain` checks them.
        """
        check_limit(limit)
        return self._audit.entries(after, limit)

    def audit_head(self) -> int:
        """The seq of the audit chain's newest entry (0: none yet)."""
        return self._audit.head_seq()

    def sign_checkpoints(self, signer: Signer | None, *, every: int = CHECKPOINT_EVERY) -> None:
        """Sign the audit chain's checkpoints with ``signer`` (None: write none), one at least
        every ``every`` entries (and every hour)."""
        self._audit.chain.signer = signer
        self._audit.chain.every = every
