"""Whether tools may ask the user: the one decision the kill switches make together.

Two switches turn questions off: the server spec's own (``elicitation: {enabled: false}`` written
out, or ``enabled`` not written at all) and the deployment's (``HOST_ELICITATION=off``). The
assembly asks :meth:`Elicitation.decide` once and hands the answer to the core, which refuses a
question that is due with ELICITATION_DISABLED and the words of whichever switch is off.
"""

from __future__ import annotations

from dataclasses import dataclass

from host.spec.model import Server

__all__ = ["ELICITATION_DISABLED_MESSAGE", "Elicitation"]

ELICITATION_DISABLED_MESSAGE = "Elicitation is disabled in server configuration."


@dataclass(frozen=True)
class Elicitation:
    """Whether tools may ask the user: decided once, from the server spec and the deployment.

    Attributes:
        enabled: Tools may ask.
        fix: When they may not, how an operator lets them: the end of the error's message.
    """

    enabled: bool
    fix: str = ""

    @classmethod
    def decide(cls, server: Server, deployment: bool = True) -> Elicitation:
        """The one rule: the deployment's kill switch, then the spec's own switch.

        Args:
            server: The server spec (``elicitation: {enabled: ...}``).
            deployment: False when the deployment turned questions off (``HOST_ELICITATION``).
        """
        if not deployment:
            return cls(
                False,
                "This deployment switches questions off (HOST_ELICITATION=off); set it to on "
                "and restart the host to let tools ask.",
            )
        if server.elicitation_enabled:
            return cls(True)
        if server.elicitation_switched_off:
            return cls(
                False,
                "The `kind: server` spec switches questions off (`elicitation: {enabled: "
                "false}`); set `enabled: true` and reload the host to let tools ask.",
            )
        return cls(
            False,
            "This tool needs to ask the user a question; to let it, add `elicitation: "
            "{enabled: true}` to the `kind: server` spec and reload the host.",
        )

    @property
    def message(self) -> str:
        """The ELICITATION_DISABLED error's message."""
        return f"{ELICITATION_DISABLED_MESSAGE} {self.fix}"
