"""python -m codegen: rewrite the codec's generated modules, pure and compiled, from the definitions."""

from __future__ import annotations

import sys

from codegen import compiled, pure


def main() -> int:
    count = pure.write_all()
    print(f"wrote {count} modules to {pure.OUT_DIR}", file=sys.stderr)
    count = compiled.write_all()
    print(f"wrote {count} modules to {compiled.OUT_DIR} (build them: pip install -e .)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
