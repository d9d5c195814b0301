"""A call's W3C trace context: from ``params._meta`` first, else the HTTP headers, checked."""

from __future__ import annotations

from types import MappingProxyType

from host.protocol.context import RequestContext, trace_context

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_meta_first_then_headers_and_only_strings_of_a_sane_length() -> None:
    headers = RequestContext.http({"traceparent": "00-from-header", "tracestate": "h=1"})
    meta = {"_meta": {"traceparent": PARENT, "tracestate": "a=1"}}

    assert trace_context(meta, headers) == {"traceparent": PARENT, "tracestate": "a=1"}
    assert trace_context({}, headers) == {"traceparent": "00-from-header", "tracestate": "h=1"}
    assert trace_context({"_meta": "junk"}, headers)["traceparent"] == "00-from-header"
    assert trace_context({"_meta": {"traceparent": 7}}, RequestContext()) == {}
    long = {"_meta": {"traceparent": PARENT, "tracestate": "x" * 513}}
    assert trace_context(long, RequestContext()) == {"traceparent": PARENT}
    empty = {"_meta": {"traceparent": PARENT, "tracestate": ""}}
    assert trace_context(empty, RequestContext()) == {"traceparent": PARENT}
    proxied = {"_meta": MappingProxyType({"traceparent": PARENT})}
    assert trace_context(proxied, headers) == {"traceparent": PARENT}
