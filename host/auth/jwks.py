"""The issuer's signing keys: discovered, fetched, cached, and refetched at a bounded rate.

One :class:`KeyCache` per process. It fetches on first use, again when the keys are older than
``max_age``, and when a token names a key id it does not know (the issuer rotated its keys) but
no more often than once per ``refetch_interval``, so tokens with made-up key ids cannot make the
host hammer the issuer. After a failed fetch it waits ``retry_interval`` before trying again and
keeps using the keys it had. Fetch failures are logged for the operator; callers only learn that
their token could not be verified.

Fetches run on a background thread, one at a time, within one total deadline (``timeout``, for
discovery and key set together, however slowly the issuer sends). A request never waits on one
longer than ``wait``, and only when it needs it: before the first keys arrive, or for a key id
not yet known. Tokens signed with known keys, and static tokens, never wait at all.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import jwt

from host.auth.errors import AuthError
from host.auth.fetch import FetchError, fetch_json
from host.auth.urls import authorization_server_metadata_urls, check_url

__all__ = ["MAX_KEYS", "KeyCache"]

log = logging.getLogger("host.auth")

Fetch = Callable[[str, float], dict[str, Any]]

#: More keys than any issuer publishes at once (a few, during a rotation).
MAX_KEYS = 100

# Key types that can verify an asymmetric signature; an "oct" (shared secret) key never is used.
_KEY_TYPES = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}


class KeyCache:
    """The issuer's JSON Web Key Set, kept fresh off the request path.

    Args:
        issuer: The issuer, whose metadata names the key set when ``jwks_uri`` is None.
        jwks_uri: The key set's URL, or None to discover it.
        timeout: Seconds allowed for one whole refresh (discovery and key set, every byte).
        wait: The most seconds a request waits for a refresh it needs (no keys yet, or an
            unknown key id); it is refused after that, and the refresh carries on.
        refetch_interval: Least seconds between fetches caused by an unknown key id.
        retry_interval: Seconds to wait after a failed fetch before trying again.
        max_age: Seconds after which the keys are fetched again (in the background).
        fetch: How to fetch a JSON document (the default: HTTPS, no redirects).
        clock: Monotonic seconds.
    """

    def __init__(
        self,
        issuer: str,
        jwks_uri: str | None,
        *,
        timeout: float = 5.0,
        wait: float = 2.0,
        refetch_interval: float = 30.0,
        retry_interval: float = 5.0,
        max_age: float = 3600.0,
        fetch: Fetch = fetch_json,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._issuer = issuer
        self._jwks_uri = jwks_uri
        self._timeout = timeout
        self._wait = wait
        self._refetch_interval = refetch_interval
        self._retry_interval = retry_interval
        self._max_age = max_age
        self._fetch = fetch
        self._clock = clock
        # NOTE: held only to read or swap the state below, never while fetching: a slow issuer
        # must not stall the verification of tokens whose keys are already here.
        self._lock = threading.Lock()
        self._keys: list[dict[str, Any]] | None = None
        self._parsed: dict[tuple[int, str], jwt.PyJWK] = {}
        self._fetched_at = -float("inf")
        self._attempted_at = -float("inf")
        self._failed = False
        self._refreshing: tuple[int, threading.Event] | None = None

    def key(self, kid: str | None, alg: str) -> jwt.PyJWK:
        """The key that verifies a token with header ``kid`` and ``alg``.

        Raises:
            AuthError: ``invalid_token``: no such key, or the keys could not be fetched.
        """
        with self._lock:
            now = self._clock()
            retry = self._retry_interval if self._failed else 0.0
            if now - self._fetched_at >= self._max_age:
                self._refresh_soon(now, retry)  # stale keys still verify meanwhile
            found = self._select(kid, alg)
            pending = None
            if self._keys is None:
                pending = self._refresh_soon(now, retry)
            elif found is None and kid is not None and not self._has_kid(kid):
                # NOTE: an unknown kid is how key rotation first shows; bounded by the interval.
                interval = self._retry_interval if self._failed else self._refetch_interval
                pending = self._refresh_soon(now, interval)
        if pending is not None:
            pending.wait(self._wait)
            with self._lock:
                found = self._select(kid, alg)
        if found is None:
            if self._keys is None:
                raise AuthError("invalid_token", "the issuer's keys are not available (see above)")
            raise AuthError("invalid_token", f"no key for kid={kid!r} alg={alg} in the JWKS")
        return found

    def warm_up(self) -> str | None:
        """Fetch the keys now; a description of the problem for the log, or None when fine."""
        with self._lock:
            pending = self._refresh_soon(self._clock(), 0.0)
        if pending is not None:
            pending.wait(self._timeout + 1.0)
        if self._keys is None:
            return "the issuer's signing keys could not be fetched (the log says why)"
        return None

    def _refresh_soon(self, now: float, interval: float) -> threading.Event | None:
        """The refresh under way, or a new one unless the last began under ``interval`` ago.

        Called with the lock held; None when no refresh is under way or allowed.
        """
        if self._refreshing is not None and self._refreshing[0] == os.getpid():
            return self._refreshing[1]
        if now - self._attempted_at < interval:
            return None
        self._attempted_at = now
        done = threading.Event()
        # NOTE: keyed by process: one inherited over fork is a parent's, and never ends here.
        self._refreshing = (os.getpid(), done)
        thread = threading.Thread(target=self._refresh, args=(done,), name="host-jwks", daemon=True)
        thread.start()
        return done

    def _has_kid(self, kid: str) -> bool:
        return any(key.get("kid") == kid for key in self._keys or ())

    def _select(self, kid: str | None, alg: str) -> jwt.PyJWK | None:
        candidates = [
            (index, key)
            for index, key in enumerate(self._keys or ())
            if (kid is None or key.get("kid") == kid) and _usable(key, alg)
        ]
        # NOTE: without a kid only an unambiguous key set will do; guessing among keys would let
        # any of them vouch for a token meant for another.
        if len(candidates) != 1:
            return None
        index, key = candidates[0]
        parsed = self._parsed.get((index, alg))
        if parsed is None:
            try:
                parsed = jwt.PyJWK(key, algorithm=alg)
            except jwt.PyJWKError as exc:
                log.warning(
                    "unusable key in the issuer's JWKS",
                    extra={"event": "auth_jwks_bad_key", "kid": key.get("kid"), "error": str(exc)},
                )
                return None
            self._parsed[(index, alg)] = parsed
        return parsed

    def _refresh(self, done: threading.Event) -> None:
        """Fetch the keys (on a thread of its own), all of it within ``timeout``."""
        deadline = time.monotonic() + self._timeout
        try:
            uri = self._jwks_uri or self._discover(deadline)
            document = self._fetch(uri, _left(deadline, uri))
            keys = document.get("keys")
            if not isinstance(keys, list) or not all(isinstance(k, dict) for k in keys):
                raise FetchError(f"{uri} is not a JSON Web Key Set (no 'keys' list)")
            if len(keys) > MAX_KEYS:
                raise FetchError(f"{uri} holds {len(keys)} keys, more than {MAX_KEYS}")
        except FetchError as exc:
            log.error(
                "could not fetch the issuer's signing keys; tokens cannot be verified meanwhile",
                extra={"event": "auth_jwks_fetch_failed", "error": exc.message},
            )
            self._done(done, None)
            return
        log.info(
            "fetched the issuer's signing keys",
            extra={"event": "auth_jwks_fetched", "url": uri, "keys": len(keys)},
        )
        self._done(done, keys)

    def _done(self, done: threading.Event, keys: list[dict[str, Any]] | None) -> None:
        with self._lock:
            if keys is None:
                self._failed = True
            else:
                self._keys = keys
                self._parsed = {}
                self._fetched_at = self._clock()
                self._failed = False
            self._refreshing = None
        done.set()

    def _discover(self, deadline: float) -> str:
        """The issuer's ``jwks_uri``, from its RFC 8414 or OpenID Connect metadata."""
        problems = []
        for url in authorization_server_metadata_urls(self._issuer):
            try:
                metadata = self._fetch(url, _left(deadline, url))
            except FetchError as exc:
                problems.append(exc.message)
                continue
            if metadata.get("issuer") != self._issuer:
                # RFC 8414 section 3.3: metadata for another issuer must not be used.
                raise FetchError(
                    f"{url} names issuer {metadata.get('issuer')!r}, not HOST_AUTH_ISSUER "
                    f"{self._issuer!r}; set HOST_AUTH_ISSUER to exactly the issuer's identifier"
                )
            uri = metadata.get("jwks_uri")
            if not isinstance(uri, str):
                raise FetchError(f"{url} has no jwks_uri; set HOST_AUTH_JWKS_URI")
            problem = check_url(uri, f"the jwks_uri in {url}")
            if problem:
                raise FetchError(problem)
            # NOTE: found once; the key set's address does not move when the keys rotate.
            self._jwks_uri = uri
            return uri
        raise FetchError(
            "no metadata found for HOST_AUTH_ISSUER (" + "; ".join(problems) + "); "
            "set HOST_AUTH_JWKS_URI if the issuer publishes none"
        )


def _left(deadline: float, url: str) -> float:
    """Seconds left for fetching ``url`` before ``deadline``."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise FetchError(f"no time left to fetch {url} (HOST_AUTH_JWKS_TIMEOUT)")
    return left


def _usable(key: dict[str, Any], alg: str) -> bool:
    """Whether ``key`` may verify an ``alg`` signature (right type, meant for signing)."""
    if key.get("kty") != _KEY_TYPES.get(alg[:2]):
        return False
    if key.get("use") not in (None, "sig"):
        return False
    ops = key.get("key_ops")
    if isinstance(ops, list) and "verify" not in ops:
        return False
    # A key that names its algorithm verifies that one only.
    return key.get("alg") in (None, alg)
