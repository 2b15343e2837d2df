"""The PubMed query language: parse, validate and render Boolean queries with field tags and date ranges."""

from ._errors import QuerySyntaxError
from ._query import (
    DATE_FIELDS,
    FIELD_NAMES,
    And,
    Node,
    Not,
    Or,
    Range,
    Term,
    normalise_field,
    parse_date_bounds,
    parse_query,
    render,
    validate_query,
)

__all__ = [
    "DATE_FIELDS",
    "FIELD_NAMES",
    "And",
    "Node",
    "Not",
    "Or",
    "QuerySyntaxError",
    "Range",
    "Term",
    "normalise_field",
    "parse_date_bounds",
    "parse_query",
    "render",
    "validate_query",
]
