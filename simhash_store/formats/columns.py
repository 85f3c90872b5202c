"""The columns of records whose fields differ: the union of their fields, and one type per field.

Records from JSON need not agree: a field may be missing from some, or hold ``1`` in one
record and ``"x"`` in the next. A table (Parquet, CSV) needs one column per field and one
type per column, decided from every record, not only the first. The rules, applied to each
field and, the same way, to each nested field and to the items of lists:

- missing or null values do not count: a field that is null in some records takes the type
  of the others;
- integers and floats together are floats, when every integer is exact as a float
  (within 2**53); otherwise, like any other mix, they become text;
- lists are lists of the common type of their items; objects are structs of the union of
  their members (in first-seen order), up to ``MAX_NESTED_FIELDS`` members;
- any other mix (a number and a string, an object and a list), and an integer outside 64 bits,
  is text: strings as they are, ``true``/``false``, numbers as Python writes them (``1``,
  ``2.5``), lists and objects as their JSON text (``{"a": 1}``).

So nothing is lost and no record fails for its types. No pyarrow here until a type is asked for.

>>> shapes = Columns()
>>> shapes.add({"n": 1})
>>> shapes.add({"n": 2.5, "kind": "a"})
>>> list(shapes.fields), shapes.fields["n"] is FLOAT
(['n', 'kind'], True)
"""

from __future__ import annotations

from typing import Any

from ..terminal import json_text

# The shapes of values. A shape is one of these constants, ("list", item shape) or
# ("struct", {member: shape}); None is a null (or missing) value, which any shape absorbs.
BOOL, INT, WIDE_INT, FLOAT, STRING, TEXT = "bool", "int", "wide int", "float", "string", "text"
HUGE_INT = "huge int"  # outside int64: text, unless a column given beforehand (uint64) holds it
OTHER = "other"  # a value that is not JSON (a date from Parquet): pyarrow decides its type
MAX_NESTED_FIELDS = 1000  # an object used as a map (a word -> count) would make a struct of every word
_EXACT = 1 << 53
_INT64 = 1 << 63


def shape_of(value: Any):
    """The shape of one value (see the module's rules)."""
    if value is None:
        return None
    kind = type(value)
    if kind is str:
        return STRING
    if kind is bool:
        return BOOL
    if kind is int:
        if -_EXACT <= value <= _EXACT:
            return INT
        return WIDE_INT if -_INT64 <= value < _INT64 else HUGE_INT
    if kind is float:
        return FLOAT
    if kind is list:
        item = None
        for element in value:
            item = unify(item, shape_of(element))
        return ("list", item)
    if kind is dict:
        if len(value) > MAX_NESTED_FIELDS:
            return TEXT
        return ("struct", {name: shape_of(member) for name, member in value.items()})
    return OTHER


def unify(a, b):
    """The shape that holds values of both shapes."""
    if a is None or a == b:
        return b
    if b is None:
        return a
    if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0]:
        if a[0] == "list":
            return ("list", unify(a[1], b[1]))
        members = dict(a[1])
        for name, shape in b[1].items():
            members[name] = unify(members.get(name), shape)
        return ("struct", members) if len(members) <= MAX_NESTED_FIELDS else TEXT
    pair = {a, b} if not (isinstance(a, tuple) or isinstance(b, tuple)) else None
    if pair == {INT, WIDE_INT}:
        return WIDE_INT
    if pair in ({INT, HUGE_INT}, {WIDE_INT, HUGE_INT}):
        return HUGE_INT
    if pair == {INT, FLOAT}:
        return FLOAT
    return TEXT


class Columns:
    """The fields of records seen so far, in first-seen order, each with the shape of its values."""

    def __init__(self) -> None:
        self.fields: dict[str, Any] = {}

    def add(self, record: dict) -> None:
        fields = self.fields
        for name, value in record.items():
            shape = shape_of(value)
            if name not in fields:
                fields[name] = shape
            elif shape is not None and shape != fields[name]:
                fields[name] = unify(fields[name], shape)


def arrow_type(shape, pyarrow):
    """The Arrow type of a shape; None where pyarrow must infer it from the values (OTHER)."""
    if shape is None:
        return pyarrow.null()
    if shape == BOOL:
        return pyarrow.bool_()
    if shape in (INT, WIDE_INT):
        return pyarrow.int64()
    if shape == FLOAT:
        return pyarrow.float64()
    if shape in (STRING, TEXT, HUGE_INT):
        return pyarrow.string()
    if shape == OTHER:
        return None
    if shape[0] == "list":
        item = arrow_type(shape[1], pyarrow)
        return None if item is None else pyarrow.list_(item)
    members = []
    for name, member in shape[1].items():
        kind = arrow_type(member, pyarrow)
        if kind is None:
            return None
        members.append(pyarrow.field(name, kind))
    return pyarrow.struct(members)


def fits(shape, kind, pyarrow) -> bool:
    """Whether values of this shape go into a column of an Arrow type given beforehand (a
    Parquet input's) without being changed: pyarrow itself would truncate 2.5 into an int64."""
    types = pyarrow.types
    if shape is None or shape == OTHER:
        return True
    if types.is_dictionary(kind):
        kind = kind.value_type
    if shape == BOOL:
        return types.is_boolean(kind)
    if shape in (INT, WIDE_INT, HUGE_INT):
        return types.is_integer(kind) or (shape == INT and types.is_floating(kind))
    if shape == FLOAT:
        return types.is_floating(kind)
    if shape in (STRING, TEXT):
        return types.is_string(kind) or types.is_large_string(kind)
    if shape[0] == "list":
        if types.is_map(kind):
            return shape[1] in (None, OTHER)  # a map's entries come as (key, value) tuples
        return (types.is_list(kind) or types.is_large_list(kind) or types.is_fixed_size_list(kind)) and fits(
            shape[1], kind.value_type, pyarrow
        )
    if not types.is_struct(kind):
        return False
    names = {kind.field(i).name: kind.field(i).type for i in range(kind.num_fields)}
    return all(name in names and fits(member, names[name], pyarrow) for name, member in shape[1].items())


def convert(value: Any, shape) -> Any:
    """A value as its column of this shape holds it: text for TEXT, members of structs in the
    struct's order. Values of every other shape are given as they are."""
    if value is None:
        return None
    if shape in (TEXT, HUGE_INT):
        return as_text(value)
    if isinstance(shape, tuple):
        if shape[0] == "list":
            return [convert(item, shape[1]) for item in value]
        return {name: convert(value.get(name), member) for name, member in shape[1].items()}
    return value


def needs_conversion(shape) -> bool:
    """Whether :func:`convert` changes any value of this shape."""
    if shape in (TEXT, HUGE_INT):
        return True
    if isinstance(shape, tuple):
        if shape[0] == "list":
            return needs_conversion(shape[1])
        return any(needs_conversion(member) for member in shape[1].values())
    return False


def as_text(value: Any) -> str:
    """A value in a column of text (and in a CSV cell): a string as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json_text(value, ensure_ascii=False, default=str)
    return str(value)


__all__ = ["Columns", "MAX_NESTED_FIELDS", "arrow_type", "as_text", "convert", "fits", "shape_of", "unify"]
