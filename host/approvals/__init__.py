"""Approval requests as people decide them: the service the inbox, the API and the CLI call."""

__all__: list[str] = []
