"""The pure rules of MCP elicitation: which `requestedSchema` a server may send, and
whether what a person answers fits it.

The MCP specification restricts a form's schema to a flat object whose properties are
primitives: a string (optionally `minLength`/`maxLength`, `format` one of email, uri, date,
date-time), a number or integer (optionally `minimum`/`maximum`), a boolean, or a choice: a
string with `enum` (optionally the legacy `enumNames`) or `oneOf` of `{const, title}`, and an
array of such strings (`items.enum` or `items.anyOf`, optionally `minItems`/`maxItems`).
`required` names properties. Anything else is refused (the server is told so), and an answer
is checked against the schema here, whoever sent it (the page checks too, as a courtesy).
"""

from __future__ import annotations

import json
import math
import re
from datetime import date, datetime
from typing import Any
from urllib.parse import urlsplit

from planboard.exceptions import PlanError

SCHEMA_MAX_BYTES = 32 * 1024
PROPERTIES_MAX = 50
NAME_MAX = 100
CHOICES_MAX = 200
STRING_ANSWER_MAX = 10_000
MESSAGE_MAX = 4000
URL_MAX = 2000
FORMATS = ("email", "uri", "date", "date-time")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_LABELS = ("title", "description")


def _bad(reason: str) -> PlanError:
    return PlanError(
        f"The server's form is not one Planboard can show: {reason}", code="bad_schema"
    )


def _text(prop: dict[str, Any], key: str, where: str) -> None:
    value = prop.get(key)
    if value is not None and not isinstance(value, str):
        raise _bad(f"{where}: {key!r} must be text.")


def _count(prop: dict[str, Any], key: str, where: str) -> None:
    value = prop.get(key)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _bad(f"{where}: {key!r} must be a whole number, 0 or more.")


def choices_of(prop: dict[str, Any]) -> list[tuple[str, str]] | None:
    """A choice property's `(value, label)` pairs (for an array: its items'), or None when
    the property is no choice."""
    source = prop.get("items") if prop.get("type") == "array" else prop
    if not isinstance(source, dict):
        return None
    if "enum" in source:
        values = source["enum"]
        names = source.get("enumNames") if source is prop else None
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise _bad("'enum' must list text values.")
        if names is not None and (
            not isinstance(names, list)
            or len(names) != len(values)
            or not all(isinstance(n, str) for n in names)
        ):
            raise _bad("'enumNames' must give one text label per 'enum' value.")
        return list(zip(values, names or values, strict=True))
    key = "anyOf" if prop.get("type") == "array" else "oneOf"
    if key in source:
        options = source[key]
        if not isinstance(options, list) or not all(
            isinstance(o, dict)
            and isinstance(o.get("const"), str)
            and isinstance(o.get("title", ""), str)
            for o in options
        ):
            raise _bad(f"'{key}' must list {{const, title}} text pairs.")
        return [(o["const"], o.get("title") or o["const"]) for o in options]
    return None


def _check_property(name: str, prop: Any) -> None:
    where = f"field {name!r}"
    if not isinstance(prop, dict):
        raise _bad(f"{where} is not an object.")
    for key in _LABELS:
        _text(prop, key, where)
    kind = prop.get("type")
    if kind == "string":
        choices = choices_of(prop)
        if choices is None:
            fmt = prop.get("format")
            if fmt is not None and fmt not in FORMATS:
                raise _bad(f"{where}: format {fmt!r} is not one of {', '.join(FORMATS)}.")
            _count(prop, "minLength", where)
            _count(prop, "maxLength", where)
    elif kind in ("number", "integer"):
        for key in ("minimum", "maximum"):
            value = prop.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise _bad(f"{where}: {key!r} must be a number.")
            if not math.isfinite(value):
                raise _bad(f"{where}: {key!r} must be a finite number.")
    elif kind == "boolean":
        pass
    elif kind == "array":
        if choices_of(prop) is None:
            raise _bad(f"{where}: an array must be a multiple choice ('items' with enum or anyOf).")
        _count(prop, "minItems", where)
        _count(prop, "maxItems", where)
    else:
        raise _bad(f"{where}: type {kind!r} is not string, number, integer, boolean or array.")
    choices = choices_of(prop)
    if choices is not None and not 0 < len(choices) <= CHOICES_MAX:
        raise _bad(f"{where}: a choice needs 1 to {CHOICES_MAX} options.")


def check_schema(schema: Any) -> dict[str, Any]:
    """`schema` if it is a form the specification allows (and within our size limits), or
    `PlanError` (code `bad_schema`) saying why not."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise _bad("it must be an object schema.")
    if len(json.dumps(schema)) > SCHEMA_MAX_BYTES:
        raise _bad(f"it is larger than {SCHEMA_MAX_BYTES} bytes.")
    properties = schema.get("properties", {})
    if not isinstance(properties, dict) or len(properties) > PROPERTIES_MAX:
        raise _bad(f"'properties' must map at most {PROPERTIES_MAX} field names to fields.")
    for name, prop in properties.items():
        if not name or len(name) > NAME_MAX:
            raise _bad(f"field names are 1 to {NAME_MAX} characters.")
        _check_property(name, prop)
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(r in properties for r in required):
        raise _bad("'required' must name fields of the form.")
    return schema


# --- answers --------------------------------------------------------------------------------


def _label(name: str, prop: dict[str, Any]) -> str:
    title = prop.get("title")
    return f"{title!r} ({name})" if isinstance(title, str) and title else repr(name)


def _wrong(name: str, prop: dict[str, Any], reason: str) -> PlanError:
    return PlanError(f"Field {_label(name, prop)}: {reason}", code="invalid_answer")


def _string(name: str, prop: dict[str, Any], value: Any) -> str:
    if not isinstance(value, str):
        raise _wrong(name, prop, "must be text.")
    if len(value) > STRING_ANSWER_MAX:
        raise _wrong(name, prop, f"at most {STRING_ANSWER_MAX} characters.")
    low, high = prop.get("minLength"), prop.get("maxLength")
    if low is not None and len(value) < low:
        raise _wrong(name, prop, f"at least {low} characters.")
    if high is not None and len(value) > high:
        raise _wrong(name, prop, f"at most {high} characters.")
    fmt = prop.get("format")
    if fmt == "email" and not _EMAIL.match(value):
        raise _wrong(name, prop, "must be an email address.")
    if fmt == "uri":
        parts = urlsplit(value)
        if not parts.scheme or not (parts.netloc or parts.path) or " " in value:
            raise _wrong(name, prop, "must be a URI (like https://example.com/).")
    if fmt == "date":
        try:
            date.fromisoformat(value)
        except ValueError:
            raise _wrong(name, prop, "must be a date as YYYY-MM-DD.") from None
        if len(value) != 10:
            raise _wrong(name, prop, "must be a date as YYYY-MM-DD.")
    if fmt == "date-time":
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise _wrong(name, prop, "must be a date and time (ISO 8601).") from None
        if "T" not in value.upper() and " " not in value:
            raise _wrong(name, prop, "must be a date and time (ISO 8601).")
        del moment
    return value


def _number(name: str, prop: dict[str, Any], value: Any) -> int | float:
    whole = prop.get("type") == "integer"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _wrong(name, prop, "must be a whole number." if whole else "must be a number.")
    if not math.isfinite(value):
        raise _wrong(name, prop, "must be a finite number.")
    if whole:
        if isinstance(value, float) and not value.is_integer():
            raise _wrong(name, prop, "must be a whole number.")
        value = int(value)
    low, high = prop.get("minimum"), prop.get("maximum")
    if low is not None and value < low:
        raise _wrong(name, prop, f"must be at least {low}.")
    if high is not None and value > high:
        raise _wrong(name, prop, f"must be at most {high}.")
    return value


def _value(name: str, prop: dict[str, Any], value: Any) -> Any:
    kind = prop.get("type")
    choices = choices_of(prop)
    if kind == "boolean":
        if not isinstance(value, bool):
            raise _wrong(name, prop, "must be true or false.")
        return value
    if kind in ("number", "integer"):
        return _number(name, prop, value)
    allowed = {v for v, _ in choices} if choices is not None else None
    if kind == "array":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _wrong(name, prop, "must be a list of choices.")
        if allowed is not None and not set(value) <= allowed:
            raise _wrong(name, prop, "holds a value that is not one of the choices.")
        if len(set(value)) != len(value):
            raise _wrong(name, prop, "names a choice twice.")
        low, high = prop.get("minItems"), prop.get("maxItems")
        if low is not None and len(value) < low:
            raise _wrong(name, prop, f"choose at least {low}.")
        if high is not None and len(value) > high:
            raise _wrong(name, prop, f"choose at most {high}.")
        return value
    if allowed is not None:
        if value not in allowed:
            raise _wrong(name, prop, "must be one of the choices.")
        return value
    return _string(name, prop, value)


def check_content(schema: dict[str, Any], content: Any) -> dict[str, Any]:
    """The answer to a form, checked against its (already checked) schema: every field
    known, of its type and within its bounds, the required ones present. Returns the answer
    (integers given as `3.0` become `3`); `PlanError` (code `invalid_answer`) otherwise."""
    if not isinstance(content, dict):
        raise PlanError("'content' must be an object of field values.", code="invalid_answer")
    properties: dict[str, Any] = schema.get("properties") or {}
    unknown = sorted(set(content) - set(properties))
    if unknown:
        raise PlanError(
            f"The form has no field {', '.join(map(repr, unknown))}.", code="invalid_answer"
        )
    cleaned: dict[str, Any] = {}
    for name, value in content.items():
        if value is None:
            continue  # left empty
        cleaned[name] = _value(name, properties[name], value)
    missing = [n for n in schema.get("required") or [] if n not in cleaned]
    if missing:
        labels = ", ".join(_label(n, properties[n]) for n in missing)
        raise PlanError(f"Required: {labels}.", code="invalid_answer")
    return cleaned


def check_url(url: Any) -> str:
    """The URL a server asks a person to open (URL mode): http(s) only."""
    if not isinstance(url, str) or len(url) > URL_MAX:
        raise _bad(f"the URL must be text of at most {URL_MAX} characters.")
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise _bad("the URL must be an http(s) address.")
    return url
