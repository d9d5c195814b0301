"""Values as strict JSON holds them, for what the host writes out of what handlers returned.

Bodies that come in are I-JSON already (:mod:`host.protocol.ijson`). What goes out comes from the
user's handlers and templates, which may return what JSON has no form for: a datetime, a Decimal,
``float("nan")``, a lone surrogate. The audit trail keeps such values, and a call's result is made
of them, the same way: every encoder after that point (the reply, the act's record, the stream,
the audit row) then takes the value as it is.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["storable"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def storable(value: Any) -> Any:
    """``value`` as strict JSON holds it: non-finite numbers by name, lone surrogates U+FFFD.

    Other values JSON has no type for are left as they are (the encoders write them as ``str``).
    """
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, Mapping):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable(item) for item in value]
    return value
