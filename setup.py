"""Builds metalog's optional compiled readers (Cython; see src/metalog/codec/generator_compiled.py), its
compiled log core (hand-written Cython twins of the log's hot paths, src/metalog/log/compiled and
src/metalog/state/compiled) and the analysis' compiled per-batch step (src/metalog/analysis/domain/compiled).

Everything else is in pyproject.toml. Where Cython or a C compiler is missing, or a module fails to
compile, the install goes on without it (a warning says why) and metalog runs its pure Python codec.
METALOG_PURE_BUILD=1 skips the compiled readers altogether.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
COMPILED = Path("src", "metalog", "codec", "compiled")
# each directory of compiled modules, and the hand-written files its modules are built from besides their .pyx
COMPILED_DIRS = {
    COMPILED: [COMPILED / "_reader.h", COMPILED / "_reader.pxd"],
    Path("src", "metalog", "log", "compiled"): [Path("src", "metalog", "log", "compiled", "_log.h")],
    Path("src", "metalog", "state", "compiled"): [],
    Path("src", "metalog", "analysis", "domain", "compiled"): [],
}
PREBUILT: dict[str, Path] = {}  # module -> its up-to-date build in src/ (an editable install's)


def warn(what: str) -> None:
    print(f"WARNING: metalog: {what}; metalog will use its pure Python codec", file=sys.stderr)


class OptionalBuildExt(build_ext):
    """build_ext where a module that does not compile is a warning, not a failed install."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if self.parallel is None:  # the modules compile independently: one job per core
            self.parallel = os.cpu_count() or 1

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # no compiler at all, and the like
            warn(f"the compiled readers were not built ({type(e).__name__}: {e})")

    def build_extension(self, ext: Extension) -> None:
        built = PREBUILT.get(ext.name)
        target = Path(self.get_ext_fullpath(ext.name))
        if built is not None and built.resolve() != target.resolve():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(built, target)
            return
        try:
            super().build_extension(ext)
        except Exception as e:
            warn(f"{ext.name} was not built ({type(e).__name__}: {e})")


def in_place(name: str, pyx: Path) -> Path | None:
    """The module as an editable install left it in src/, if it is newer than everything it is built from
    (so scripts/test.sh, which reinstalls before every run, does not recompile)."""
    built = HERE / pyx.with_name(name.rsplit(".", 1)[-1] + sysconfig.get_config_var("EXT_SUFFIX"))
    if not built.exists():
        return None
    newest = max((HERE / p).stat().st_mtime for p in [pyx, *COMPILED_DIRS[pyx.parent], Path("setup.py")])
    return built if built.stat().st_mtime > newest else None


def module_name(pyx: Path) -> str:
    """src/metalog/log/compiled/records.pyx -> metalog.log.compiled.records"""
    return ".".join(pyx.with_suffix("").parts[1:])


def extensions() -> list[Extension]:
    if os.environ.get("METALOG_PURE_BUILD", "") not in ("", "0"):
        return []
    pyxs = sorted(p for d in COMPILED_DIRS for p in d.glob("*.pyx"))
    if not pyxs:
        warn(f"no compiled reader sources in {', '.join(map(str, COMPILED_DIRS))}")
        return []
    names = {p: module_name(p) for p in pyxs}
    for p, name in names.items():
        built = in_place(name, p)
        if built is not None:
            PREBUILT[name] = built
    ready = [Extension(names[p], [str(p)]) for p in pyxs if names[p] in PREBUILT]
    todo = [p for p in pyxs if names[p] not in PREBUILT]
    if not todo:
        return ready
    try:
        import Cython
        from Cython.Build import cythonize
    except ImportError:
        warn("Cython is not installed, so the compiled readers were not built")
        return ready
    modules = [
        Extension(names[p], [str(p)], include_dirs=[str(p.parent)], depends=[str(d) for d in COMPILED_DIRS[p.parent]],
                  define_macros=[("METALOG_CYTHON_VERSION", f'"{Cython.__version__}"')],
                  extra_compile_args=["-O2"] if os.name != "nt" else [])
        for p in todo
    ]
    try:
        return ready + cythonize(modules, quiet=True, build_dir="build/cython",
                                 nthreads=int(os.environ.get("METALOG_BUILD_JOBS", "0")))
    except Exception as e:
        warn(f"Cython could not translate the compiled readers ({type(e).__name__}: {e})")
        return ready


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
