#!/usr/bin/env python3
"""Generate gpunet_client/types.py from the contracts' JSON Schemas.

Reads every file of contracts/generated/json-schema (written by `npm run contracts:export`) and
writes one TypedDict per message: an event's data (`JobEnded`), a request (`SubmitJob`), the
`data` of a reply (`GetJobReply`, the JobView), and the other documents (`JobSpec`,
`FeedEntry`, `RecordedEvent`, ...). Nested objects get their own TypedDicts, named after the
path to them; enums and constants become Literals. Standard library only.

    python3 clients/python/tools/generate_types.py           # write the file
    python3 clients/python/tools/generate_types.py --check   # exit 1 when the file is stale
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLIENT = HERE.parent
ROOT = CLIENT.parent.parent
SCHEMAS = ROOT / "contracts" / "generated" / "json-schema"
TARGET = CLIENT / "gpunet_client" / "types.py"

HEADER = '''"""Types of gpunet's messages, generated from contracts/generated/json-schema.

Do not edit: run `python3 clients/python/tools/generate_types.py` (or `npm run contracts:export`).
One TypedDict per message: an event's `data` (e.g. `JobEnded`), a request (`SubmitJob`), the
`data` of a reply (`GetJobReply` is the job view), and the documents (`JobSpec`, `FeedEntry`).
"""
# fmt: off
from __future__ import annotations

from typing import Any, Dict, List, Literal, NotRequired, TypedDict, Union

'''



def py_literal(value: object) -> str:
    """A JSON value as Python source: strings quoted, true/false/null as True/False/None."""
    if value is True:
        return "True"
    if value is False:
        return "False"
    if value is None:
        return "None"
    return json.dumps(value)

def class_name(*parts: str) -> str:
    words = []
    for part in parts:
        for w in re.split(r"[^A-Za-z0-9]+", part):
            if w:
                words.append(w[0].upper() + w[1:])
    name = "".join(words) or "Anonymous"
    return name if not name[0].isdigit() else f"T{name}"


class Generator:
    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.names: set[str] = set()

    def unique(self, name: str) -> str:
        candidate, n = name, 2
        while candidate in self.names:
            candidate, n = f"{name}{n}", n + 1
        self.names.add(candidate)
        return candidate

    def type_of(self, schema: object, name: str) -> str:
        """The Python type of a JSON Schema node; objects with properties become TypedDicts named `name`."""
        if schema is True or schema == {} or not isinstance(schema, dict):
            return "Any"
        if "const" in schema:
            return f"Literal[{py_literal(schema['const'])}]"
        if "enum" in schema:
            return f"Literal[{', '.join(py_literal(v) for v in schema['enum'])}]"
        for key in ("oneOf", "anyOf"):
            if key in schema:
                variants = [self.type_of(v, f"{name}{i + 1}" if len(schema[key]) > 1 else name) for i, v in enumerate(schema[key])]
                unique = list(dict.fromkeys(variants))
                return unique[0] if len(unique) == 1 else f"Union[{', '.join(unique)}]"
        kind = schema.get("type")
        if isinstance(kind, list):
            return f"Union[{', '.join(self.type_of({**schema, 'type': k}, name) for k in kind)}]"
        if kind == "string":
            return "str"
        if kind == "integer":
            return "int"
        if kind == "number":
            return "float"
        if kind == "boolean":
            return "bool"
        if kind == "null":
            return "None"
        if kind == "array":
            return f"List[{self.type_of(schema.get('items', {}), name + 'Item')}]"
        if kind == "object" or "properties" in schema:
            props = schema.get("properties")
            if not props:
                extra = schema.get("additionalProperties", {})
                return f"Dict[str, {self.type_of(extra, name + 'Value')}]"
            return self.typed_dict(schema, name)
        return "Any"

    def typed_dict(self, schema: dict, name: str) -> str:
        cls = self.unique(name)
        required = set(schema.get("required", []))
        fields = []
        for prop, sub in schema["properties"].items():
            t = self.type_of(sub, class_name(cls, prop))
            t = t if prop in required else f"NotRequired[{t}]"
            doc = sub.get("description", "") if isinstance(sub, dict) else ""
            fields.append((prop, t, doc))
        lines = []
        doc = (schema.get("description") or "").strip()
        if doc:
            lines.append("# " + doc.replace("\n", " ")[:300])
        lines.append(f"{cls} = TypedDict({json.dumps(cls)}, {{")
        for prop, t, doc in fields:
            comment = f"  # {doc.replace(chr(10), ' ')[:160]}" if doc else ""
            lines.append(f"    {json.dumps(prop)}: {t},{comment}")
        lines.append("})")
        self.blocks.append("\n".join(lines))
        return cls


def top_level(path: Path) -> tuple[str, dict]:
    """The name and schema of one file's type: a reply's `data` (its ok branch), else the file itself."""
    schema = json.loads(path.read_text())
    stem = path.name[: -len(".json")]
    if stem.endswith(".reply"):
        ok = next(v for v in schema.get("oneOf", []) if v.get("properties", {}).get("ok", {}).get("const") is True)
        data = dict(ok["properties"]["data"])
        data.setdefault("description", schema.get("description", ""))
        return class_name(stem.replace(".reply", "Reply")), data
    return class_name(stem), schema


def render() -> str:
    gen = Generator()
    exported = []
    for path in sorted(SCHEMAS.glob("*.json")):
        name, schema = top_level(path)
        t = gen.type_of(schema, name)
        if t != name:
            # Not an object of its own (e.g. a union): an alias.
            gen.names.add(name)
            gen.blocks.append(f"{name} = {t}")
        exported.append(name)
    body = "\n\n".join(gen.blocks)
    names = ",\n".join(f"    {json.dumps(n)}" for n in exported)
    return f"{HEADER}{body}\n\n__all__ = [\n{names},\n]\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not TARGET.exists() or TARGET.read_text() != text:
            print(f"{TARGET} is stale: run python3 {Path(__file__).relative_to(ROOT)}", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
