"""Observers the assembly plugs into the protocol's events: Prometheus metrics and OpenTelemetry
traces, beside the log line.

Each is fed the same :class:`host.protocol.Round` and :class:`host.protocol.Refusal` events, so
the log, the metrics and the traces cannot disagree. Their libraries are imported only when they
are switched on: :mod:`host.observers.metrics` (``prometheus-client``, unless ``HOST_METRICS=off``)
and :mod:`host.observers.traces` (OpenTelemetry, when it is installed and configured).
"""
