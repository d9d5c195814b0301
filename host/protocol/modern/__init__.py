"""The modern era (2026-07-28): stateless requests, per-request ``_meta``, questions as MRTR.

``era`` serves ``server/discover``, ``tools/list`` and ``tools/call``; ``envelope`` checks each
request's ``_meta`` and the routing headers that mirror it; ``headers`` checks a tool's
``Mcp-Param-*`` headers; ``state`` seals a call's ledger into the ``requestState`` the client
carries between rounds; ``tasks`` serves the tasks extension (``tasks/get``, ``tasks/update``,
``tasks/cancel``), ``task_runs`` carries a task's call on round by round and ``task_views`` says
how a task reads on the wire.
"""

__all__: list[str] = []
