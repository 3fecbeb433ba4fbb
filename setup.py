"""Builds metalog's optional compiled readers (Cython; see src/metalog/codec/generator_compiled.py).

Everything else is in pyproject.toml. Where Cython or a C compiler is missing, or a module fails to
compile, the install goes on without it (a warning says why) and metalog runs its pure Python codec.
METALOG_PURE_BUILD=1 skips the compiled readers altogether.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).parent
COMPILED = Path("src", "metalog", "codec", "compiled")


def warn(what: str) -> None:
    print(f"WARNING: metalog: {what}; metalog will use its pure Python codec", file=sys.stderr)


class OptionalBuildExt(build_ext):
    """build_ext where a module that does not compile is a warning, not a failed install."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # no compiler at all, and the like
            warn(f"the compiled readers were not built ({type(e).__name__}: {e})")

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as e:
            warn(f"{ext.name} was not built ({type(e).__name__}: {e})")


def extensions() -> list[Extension]:
    if os.environ.get("METALOG_PURE_BUILD", "") not in ("", "0"):
        return []
    try:
        import Cython
        from Cython.Build import cythonize
    except ImportError:
        warn("Cython is not installed, so the compiled readers were not built")
        return []
    sources = sorted(str(p) for p in COMPILED.glob("*.pyx"))
    version = Cython.__version__
    modules = [
        Extension(f"metalog.codec.compiled.{Path(s).stem}", [s], include_dirs=[str(COMPILED)],
                  define_macros=[("METALOG_CYTHON_VERSION", f'"{version}"')],
                  extra_compile_args=["-O2"] if os.name != "nt" else [])
        for s in sources
    ]
    try:
        return cythonize(modules, quiet=True, build_dir="build/cython",
                         nthreads=int(os.environ.get("METALOG_BUILD_JOBS", "0")))
    except Exception as e:
        warn(f"Cython could not translate the compiled readers ({type(e).__name__}: {e})")
        return []


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
