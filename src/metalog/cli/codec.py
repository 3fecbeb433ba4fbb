"""``metalog codec``: encode, decode and explain Kafka messages from the command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from metalog.errors import MetalogError

ENCODE_EXAMPLES = """\
  echo '{"name": "FeatureLevelRecord", "version": 0, "data": {"name": "metadata.version", "featureLevel": 17}}' \\
    | metalog codec encode
"""
DECODE_EXAMPLES = """\
  echo '{"name": "FeatureLevelRecord", "version": 0, "hex": "116d657461646174612e76657273696f6e001100"}' \\
    | metalog codec decode
  echo '{"hex": "010c00116d657461646174612e76657273696f6e001100"}' | metalog codec decode --framed
"""
EXPLAIN_EXAMPLES = """\
  metalog codec explain FeatureLevelRecord 0 116d657461646174612e76657273696f6e001100
  metalog codec explain --framed 010c00116d657461646174612e76657273696f6e001100   # a value as the log stores it
"""
EXAMPLES = f"examples:\n{ENCODE_EXAMPLES}{DECODE_EXAMPLES}{EXPLAIN_EXAMPLES}  metalog codec list\n"


def register(sub: Any) -> None:
    from metalog.cli import options

    p = sub.add_parser("codec", help="encode, decode and explain Kafka messages",
                       description="Kafka's binary message format, byte-identical to Kafka.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = p.add_subparsers(dest="codec_verb", metavar="COMMAND", required=True)

    enc = verbs.add_parser("encode", help='JSON lines {"name", "version", "data"} -> {"hex"}',
                           epilog="examples:\n" + ENCODE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    enc.add_argument("--framed", action="store_true",
                     help="write metadata records framed as in the metadata log (frame version, apiKey, version)")
    enc.set_defaults(func=lambda a: _lines(sys.stdin, sys.stdout, lambda r: _encode(r, a.framed)))

    dec = verbs.add_parser("decode", help='JSON lines {"name", "version", "hex"} -> {"data"}',
                           epilog="examples:\n" + DECODE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    dec.add_argument("--framed", action="store_true",
                     help='input is a framed metadata record value: {"hex"} alone; name and version come from it')
    dec.set_defaults(func=lambda a: _lines(sys.stdin, sys.stdout, lambda r: _decode(r, a.framed)))

    exp = verbs.add_parser("explain", help="annotated dissection of one message: offset, length, field, value",
                           epilog="examples:\n" + EXPLAIN_EXAMPLES,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    exp.add_argument("name", nargs="?", help="message name, e.g. PartitionRecord (with --framed: the HEX)")
    exp.add_argument("version", nargs="?", type=options.API_VERSION, help="the message's version")
    exp.add_argument("hex", nargs="?", help="the message bytes in hex ('-' reads them from stdin)")
    exp.add_argument("--framed", action="store_true",
                     help="HEX alone is a metadata record value as the log stores it: its frame (frame version, "
                          "apiKey, version) is explained too, and names the message")
    exp.set_defaults(func=_explain)

    lst = verbs.add_parser("list", help="every message metalog knows, with its versions",
                           epilog="examples:\n  metalog codec list\n  metalog codec list | grep Record",
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    lst.set_defaults(func=_list)


def _lines(inp: TextIO, out: TextIO, handle: Callable[[dict[str, Any]], dict[str, Any]]) -> int:
    """One answer line per input line; errors in-band; non-zero exit at the end if any line failed."""
    from metalog.codec.jsonform import loads

    failed = 0
    for lineno, line in enumerate(_non_empty(inp), start=1):
        try:
            try:
                request = loads(line)
            except ValueError as e:
                raise ValueError(f"not JSON: {e}") from None
            if not isinstance(request, dict):
                raise ValueError("each line must be a JSON object")
            answer = handle(request)
        except (MetalogError, ValueError, KeyError, TypeError) as e:
            failed += 1
            answer = {"error": f"line {lineno}: {_reason(e)}"}
        out.write(json.dumps(answer) + "\n")
    out.flush()
    if failed:
        print(f"metalog: {failed} line(s) failed", file=sys.stderr)
    return 1 if failed else 0


def _non_empty(inp: TextIO) -> Iterable[str]:
    return (line for line in inp if line.strip())


def _reason(e: Exception) -> str:
    if isinstance(e, KeyError):
        return str(e.args[0]) if e.args else "missing key"
    return str(e)


def _require(request: dict[str, Any], key: str) -> Any:
    if key not in request:
        raise KeyError(f"missing {key!r}")
    return request[key]


def _version(request: dict[str, Any]) -> int:
    v = _require(request, "version")
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"'version' must be an integer, not {v!r}")
    return v


def _encode(request: dict[str, Any], framed: bool) -> dict[str, Any]:
    from metalog.codec import message_class
    from metalog.codec.framing import encode_metadata_record

    cls = message_class(_require(request, "name"))
    version = _version(request)
    msg = cls.from_json(_require(request, "data"), version)
    raw = encode_metadata_record(msg, version) if framed else msg.encode(version)
    return {"hex": raw.hex()}


def _decode(request: dict[str, Any], framed: bool) -> dict[str, Any]:
    from metalog.codec import message_class
    from metalog.codec.framing import decode_metadata_record

    raw = _hex(_require(request, "hex"))
    if framed:
        record = decode_metadata_record(raw)
        return {"name": record.message.NAME, "version": record.version,
                "data": record.message.to_json(record.version)}
    version = _version(request)
    return {"data": message_class(_require(request, "name")).decode(raw, version).to_json(version)}


def _hex(text: Any) -> bytes:
    if not isinstance(text, str):
        raise ValueError("'hex' must be a string of hex digits")
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise ValueError(f"'hex' is not hex: {text[:40]!r}") from None


def _explain(args: argparse.Namespace) -> int:
    from metalog.codec import message_class
    from metalog.codec.definitions import MESSAGES
    from metalog.codec.explain import explain, explain_framed, render_table

    if args.framed:
        if args.name is None or args.version is not None:
            raise MetalogError("--framed takes the HEX alone: the frame names the message and its version")
        rows = explain_framed(_hex_argument(args.name))
        print(render_table(rows))
        return 1 if any(r.role == "error" for r in rows) else 0
    if args.hex is None:
        raise MetalogError("give NAME VERSION HEX (or --framed HEX)")
    try:
        message_class(args.name)
    except KeyError as e:
        raise MetalogError(str(e.args[0])) from None
    valid = MESSAGES[args.name].valid_versions
    if args.version not in valid:
        raise MetalogError(f"{args.name} has no version {args.version} (valid versions: {valid})")
    rows = explain(args.name, args.version, _hex_argument(args.hex))
    print(render_table(rows))
    return 1 if any(r.role == "error" for r in rows) else 0


def _hex_argument(text: str) -> bytes:
    """HEX as given, or read from stdin for '-' (blanks ignored)."""
    text = sys.stdin.read().strip() if text == "-" else text
    try:
        return _hex("".join(text.split()))
    except ValueError as e:
        raise MetalogError(str(e)) from None


def _list(args: argparse.Namespace) -> int:
    from metalog.codec.definitions import MESSAGES

    width = max(len(n) for n in MESSAGES)
    print(f"{'MESSAGE':<{width}}  {'KIND':<8}  {'API KEY':>7}  VERSIONS  FLEXIBLE")
    for name in sorted(MESSAGES, key=lambda n: (MESSAGES[n].kind, MESSAGES[n].api_key or 0, n)):
        m = MESSAGES[name]
        key = "" if m.api_key is None else str(m.api_key)
        print(f"{name:<{width}}  {m.kind:<8}  {key:>7}  {m.valid:<8}  {m.flexible}")
    return 0
