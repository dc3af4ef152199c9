"""Turn arbitrary Python objects into something ``json.dumps`` accepts, as
Spinning Up does for config.json."""

import json


def convert_json(obj):
    """``obj`` in a form ``json.dumps`` takes, as config.json records it.

    JSON-serialisable values are kept; dicts, lists and tuples are converted
    element by element (a tuple becomes a list); objects with a ``__name__``
    that is not a lambda give that name; other objects with attributes become
    ``{str(obj): converted attributes}``; anything else becomes ``str(obj)``.
    """
    if is_json_serializable(obj):
        return obj
    if isinstance(obj, dict):
        return {convert_json(k): convert_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [convert_json(x) for x in obj]
    if hasattr(obj, "__name__") and "lambda" not in obj.__name__:
        return convert_json(obj.__name__)
    if hasattr(obj, "__dict__") and obj.__dict__:
        obj_dict = {convert_json(k): convert_json(v) for k, v in obj.__dict__.items()}
        return {str(obj): obj_dict}
    return str(obj)


def is_json_serializable(v) -> bool:
    """True if ``json.dumps(v)`` succeeds."""
    try:
        json.dumps(v)
        return True
    except (TypeError, ValueError, OverflowError):
        return False
