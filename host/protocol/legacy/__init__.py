"""The legacy era (2025-11-25 and older): sessions opened with ``initialize``.

``era`` serves a session's methods; ``sessions`` mints and opens the signed session ids;
``relay`` asks questions on a call's stream and carries the answers across workers through the
store; ``fallback`` asks them in tool results for clients without forms
(``sendElicitationResult``), worded for the model by ``describe``; ``listen`` is a session's GET
stream.
"""

__all__: list[str] = []
