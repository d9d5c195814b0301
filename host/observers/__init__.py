"""Observers the assembly plugs into the protocol's events: the audit trail, Prometheus metrics and
OpenTelemetry traces, beside the log line.

Each is fed the same :class:`host.protocol.Round` and :class:`host.protocol.Refusal` events, so
the log, the audit trail, the metrics and the traces cannot disagree. The audit trail
(:mod:`host.observers.audit`) is always on and writes to the store. The others' libraries are
imported only when they are switched on: :mod:`host.observers.metrics` (``prometheus-client``,
unless ``HOST_METRICS=off``) and :mod:`host.observers.traces` (OpenTelemetry, when it is installed
and configured).
"""
