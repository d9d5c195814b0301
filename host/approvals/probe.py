"""Whether a host at a URL serves the pages on this store: what ``host stdio`` asks at start.

A stdio host cannot show an approval request or a URL ask to anyone: people decide and answer
in the pages of a host served over HTTP (``host serve``), which must read the same store to see
the stdio host's requests. So ``host stdio`` serving such specs writes a random probe into its
store and asks the host at ``HOST_PUBLIC_URL`` for it (:func:`inbox_problem`); that host answers
from its own store (:class:`StoreProbeResource`, served only where the pages are). The probe
holds nothing but its random name and expires within a minute.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import urllib.error
import urllib.request
from typing import TYPE_CHECKING

from host.store import Store

if TYPE_CHECKING:
    import falcon  # NOTE: host stdio imports this module and serves no HTTP

__all__ = ["PROBE_PATH", "StoreProbeResource", "inbox_problem"]

PROBE_PATH = "/approvals/api/store-probe/"
_KEY = "store-probe:"
_KEEP_S = 60.0
#: Seconds allowed for the running host to answer.
_TIMEOUT_S = 5.0


class StoreProbeResource:
    """``GET /approvals/api/store-probe/NAME``: 200 if this host's store holds the probe, else 409.

    Args:
        store: This host's store.
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    def on_get(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        """Whether the probe ``name`` is in this host's store."""
        resp.cache_control = ["no-store"]
        found = len(name) <= 64 and self.store.get(_KEY + name) is not None
        resp.status = 200 if found else 409
        resp.media = {"store": "same"} if found else {"error": "another_store"}


def inbox_problem(store: Store, public_url: str | None, tools: list[str]) -> str | None:
    """Why the host at ``public_url`` cannot decide for ``tools`` on ``store``; None if it can."""
    fix = (
        "start `host serve` with auth settings on the same store (the same HOST_STORE, or "
        "HOST_DATA_DIR on this machine) and set HOST_PUBLIC_URL to its base URL for host stdio too"
    )
    needs = f"{', '.join(tools)} ask people on the host's pages (approve steps or URL asks)"
    if not public_url:
        return f"{needs}, which host stdio does not serve: {fix}"
    name = secrets.token_urlsafe(24)
    store.put(_KEY + name, "1", _KEEP_S)
    url = public_url.rstrip("/") + PROBE_PATH + name
    try:
        with urllib.request.urlopen(url, timeout=_TIMEOUT_S) as reply:
            answer = json.loads(reply.read() or b"{}")
            status = int(reply.status)
    except urllib.error.HTTPError as exc:
        status, answer = exc.code, {}
        with contextlib.suppress(ValueError):
            answer = json.loads(exc.read() or b"{}")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return f"{needs}; HOST_PUBLIC_URL ({public_url}) cannot be reached ({exc}): {fix}"
    finally:
        store.delete(_KEY + name)
    if status == 200 and isinstance(answer, dict) and answer.get("store") == "same":
        return None
    if status == 409 and isinstance(answer, dict) and answer.get("error") == "another_store":
        return f"{needs}; the host at {public_url} serves its pages on another store: {fix}"
    return f"{needs}; {public_url} does not serve the approvals pages (HTTP {status}): {fix}"
