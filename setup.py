"""The compiled core's build (issue 39; docs/decisions.md, "A compiled core").

Everything else about the package is in pyproject.toml. The ``.pyx`` sources are compiled
with Cython (a build requirement, from the package index) and the machine's C compiler.
Without a compiler, or if the build fails, the package installs without them and the
pure-Python core runs (stratus.base.native says so once per process); the build says so
here too. Compiled files (``.c``, ``.so``) are build outputs, never committed.
"""

from __future__ import annotations

import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

#: the compiled modules and their sources (each stands in for a pure module, its reference:
#: stratus.sim.ckernel for stratus.sim.kernel.PyKernel)
SOURCES = {"stratus.sim.ckernel": "stratus/sim/ckernel.pyx"}


def _notice(why: object) -> None:
    print(f"stratus: notice: the compiled core was not built ({why}); the pure-Python core "
          f"will run (the same results, slower)", file=sys.stderr)


class OptionalBuildExt(build_ext):
    """build_ext that leaves a module out, with a notice, when it cannot be compiled."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # no compiler at all (distutils' CCompilerError and others)
            _notice(e)

    def build_extension(self, ext) -> None:
        try:
            super().build_extension(ext)
        except Exception as e:
            _notice(f"{ext.name}: {e}")


def _extensions() -> list:
    try:
        from Cython.Build import cythonize
    except ImportError as e:
        _notice(e)
        return []
    exts = [Extension(name, [src], extra_compile_args=["-O2"])
            for name, src in SOURCES.items()]
    return cythonize(exts, language_level=3, quiet=True)


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
