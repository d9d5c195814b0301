"""What the tests share (not tests themselves): one raw client per era, the server runner, the rest.

- ``paths``: the checkout's root, the help desk's specs and handlers, the fixtures folder.
- ``helpdesk``: the example project, settings for one test, small projects written to ``tmp_path``.
- ``modern``: the raw 2026-07-28 client (``Mcp``) over the in-process app, and its calls over HTTP.
- ``legacy``: the raw legacy-session client (``Legacy``) over the in-process app, and over HTTP.
- ``wire``: a POST to a served host's ``/mcp`` and a stream read as it arrives (both eras).
- ``servers``: ``host serve``, gunicorn and ``host stdio`` in subprocesses, free ports, clean env.
- ``workers``: which gunicorn worker holds a connection; two connections on two workers.
- ``redis``: private redis-servers; ``oauth``: the OAuth 2 mock authorization server.
- ``sdk``: the official SDK client's tutorial scenario; ``protected``: the auth tests' projects.
- ``waiting``: ``wait_until``, for tests that wait for a condition.

The fixtures built on these are in ``tests/conftest.py``. Tests import ``from support.x import``.
"""

__all__: list[str] = []
