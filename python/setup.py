"""setup.py: bundles a built superopt into the wheel (superopt/_native/:
lib/libsuperopt.so*, bin/superopt, share/superopt/), so that the installed
package works without the repository. The bundle comes from
$SUPEROPT_PREFIX (an install prefix) when set, else from `cmake --install` of
the repository's build directory ($SUPEROPT_BUILD, default ../build). With
neither, the package is pure Python and finds the library at run time
(superopt/_lib.py)."""
import os
import shutil
import subprocess
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def _prefix(tmp):
    prefix = os.environ.get("SUPEROPT_PREFIX")
    if prefix:
        return prefix
    build = os.environ.get("SUPEROPT_BUILD", os.path.join(HERE, "..", "build"))
    if not os.path.exists(os.path.join(build, "cmake_install.cmake")):
        return None
    subprocess.run(["cmake", "--install", build, "--prefix", tmp], check=True,
                   stdout=subprocess.DEVNULL)
    return tmp


class BuildWithNative(build_py):
    def run(self):
        super().run()
        with tempfile.TemporaryDirectory() as tmp:
            prefix = _prefix(tmp)
            if not prefix:
                print("superopt: no SUPEROPT_PREFIX and no ../build: "
                      "pure-Python package (set SUPEROPT_LIB at run time)")
                return
            dest = os.path.join(self.build_lib, "superopt", "_native")
            shutil.rmtree(dest, ignore_errors=True)
            os.makedirs(os.path.join(dest, "lib"))
            for f in os.listdir(os.path.join(prefix, "lib")):
                if f.startswith("libsuperopt") and ".so" in f:
                    shutil.copy2(os.path.join(prefix, "lib", f),
                                 os.path.join(dest, "lib", f),
                                 follow_symlinks=True)
            os.makedirs(os.path.join(dest, "bin"))
            shutil.copy2(os.path.join(prefix, "bin", "superopt"),
                         os.path.join(dest, "bin", "superopt"))
            shutil.copytree(os.path.join(prefix, "share"),
                            os.path.join(dest, "share"))


setup(cmdclass={"build_py": BuildWithNative})
