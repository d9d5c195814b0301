"""What a client makes of an ``input_required`` result: its questions, checked as a real client
would check them (only ``elicitation/create``, only in a mode the client declared)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from host.client.answers import Elicitation
from host.client.match import shown
from host.client.results import ProtocolViolation

__all__ = ["can_elicit", "on_page", "questions_of"]


def questions_of(
    name: str,
    arguments: dict[str, Any],
    round_: int,
    result: Mapping[str, Any],
    capabilities: Mapping[str, Any],
) -> list[Elicitation]:
    """The questions of an ``input_required`` result, refusing what the client cannot answer."""
    __tracebackhide__ = True
    requests = result.get("inputRequests")
    if requests is None and "requestState" in result:
        return []
    if not isinstance(requests, Mapping) or not requests:
        raise ProtocolViolation(
            f"{name}: input_required needs inputRequests or requestState: {shown(result)}"
        )
    questions: list[Elicitation] = []
    for key, request in requests.items():
        method = request.get("method") if isinstance(request, Mapping) else None
        params = request.get("params") if isinstance(request, Mapping) else None
        if method != "elicitation/create" or not isinstance(params, Mapping):
            raise ProtocolViolation(
                f"{name}: this test client answers only elicitation/create, got {key!r}: "
                f"{shown(request)}"
            )
        if not can_elicit(capabilities, params):
            raise ProtocolViolation(
                f"{name} asked {key!r} although this client did not declare that kind of "
                f"elicitation (capabilities {shown(capabilities)}): {shown(params)}"
            )
        schema = params.get("requestedSchema")
        questions.append(
            Elicitation(
                key=str(key),
                message=str(params.get("message", "")),
                requested_schema=dict(schema) if isinstance(schema, Mapping) else {},
                tool=name,
                arguments=arguments,
                round=round_,
                params=dict(params),
            )
        )
    return questions


def can_elicit(capabilities: Mapping[str, Any], params: Mapping[str, Any]) -> bool:
    """Whether ``capabilities`` declare the elicitation mode ``params`` asks in."""
    declared = capabilities.get("elicitation")
    if not isinstance(declared, Mapping):
        return False
    mode = params.get("mode", "form")
    # NOTE: `elicitation: {}` declares form mode only, for compatibility with older clients.
    return mode in declared or (mode == "form" and not declared)


def on_page(question: Elicitation) -> bool:
    """Whether a question is a URL ask: its answer is given on a host page."""
    return question.params.get("mode") == "url"
