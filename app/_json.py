"""Plain JSON values out of the service's result types (dataclasses, pydantic models, numpy values)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

__all__ = ["jsonable"]


def jsonable(value: Any) -> Any:
    """Dataclasses, pydantic models, tuples, numpy values -> plain JSON values."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, BaseModel):
        return jsonable(value.model_dump(mode="json"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    if callable(tolist):
        return jsonable(tolist())
    return str(value)
