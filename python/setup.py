"""Copies libsgtopk.so into the package (sgtopk/_lib/) while it is built, so
that `pip install ./python` and `pip wheel ./python` carry the library: from
$SGTOPK_LIBRARY (the .so or its folder), else this checkout's build/release.
Build the library first (scripts/setup release)."""

import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def built_library():
    env = os.environ.get("SGTOPK_LIBRARY")
    path = (os.path.join(env, "libsgtopk.so") if os.path.isdir(env) else env) if env else \
        os.path.join(os.path.dirname(HERE), "build", "release", "libsgtopk.so")
    if not os.path.isfile(path):
        raise SystemExit("sgtopk: %s not found: build the library first (scripts/setup release) or set "
                         "SGTOPK_LIBRARY to the .so or its folder" % path)
    return os.path.realpath(path)


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "sgtopk", "_lib")
        os.makedirs(target, exist_ok=True)
        shutil.copy2(built_library(), os.path.join(target, "libsgtopk.so"))


setup(cmdclass={"build_py": BuildWithLibrary})
