#!/usr/bin/env bash
# pip_install.sh: `pip install ./python` into a fresh virtual environment,
# as a new user would (scikit-build-core builds the repository's CMake
# project into the wheel), then used from outside the tree: the `superopt`
# command on the environment's PATH (--version; in CUDA builds --version
# --gpu names the executor it loads, bundled beside the library), one copy
# of libsuperopt.so in the package (libsuperopt_gpu.so only where CUDA is
# built), and `import superopt` loading a graph with the bundled library.
#
# The build goes to BUILD_DIR/python-wheel, kept between runs: the first run
# is a full build of the project (minutes), later ones are incremental. For
# that the build runs without pip's build isolation (a new isolated
# environment makes scikit-build-core clear the build), with
# scikit-build-core from BUILD_DIR/pip-tools (from PyPI the first time; the
# test is skipped, exit 77, when PyPI cannot be reached), and the fresh
# environment borrows PYTHON's packages (NumPy) through a .pth file. Not in
# the default suite: cmake -DSUPEROPT_TEST_PIP=ON.
# usage: tests/pip_install.sh BUILD_DIR SOURCE_DIR PYTHON
set -u
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
py=$3
. "$(dirname "$0")/lib.sh"
test_begin
unset SUPEROPT_DATA SUPEROPT_LIB SUPEROPT_PREFIX SUPEROPT_BIN SUPEROPT_GPU_LIB

tools=$build/pip-tools
if ! PYTHONPATH=$tools "$py" -c 'import scikit_build_core' 2>/dev/null; then
  if ! "$py" -m pip install -q --disable-pip-version-check --target "$tools" \
    'scikit-build-core>=0.10' >"$tmp/tools.log" 2>&1; then
    cat "$tmp/tools.log"
    echo "pip_install: skipped: scikit-build-core is not reachable (PyPI)"
    exit 77
  fi
fi
venv=$tmp/venv
"$py" -m venv --without-pip "$venv" || { echo "FAIL: python -m venv"; exit 1; }
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
{
  "$py" -c 'import numpy, os; print(os.path.dirname(os.path.dirname(numpy.__file__)))'
  echo "$tools"
} >"$site/borrowed.pth"
start=$(date +%s)
"$py" -m pip --python "$venv/bin/python" install --disable-pip-version-check \
  --no-build-isolation -C build-dir="$build/python-wheel" "$src/python" \
  >"$tmp/pip.log" 2>&1
rc=$?
echo "pip_install: pip install ./python took $(($(date +%s) - start)) s"
if [ $rc != 0 ]; then
  echo "FAIL: pip install ./python exited $rc"; tail -40 "$tmp/pip.log"; exit 1
fi

pkg=$site/superopt
mkdir "$tmp/work" && cd "$tmp/work" || exit 1
cp "$src/tests/data/good/every_op.graph" .
# one libsuperopt.so; the executor only where CUDA is built
libs=$(cd "$pkg/_native/lib" && ls)
want="libsuperopt.so"
[ -e "$build/libsuperopt_gpu.so" ] && want="$want libsuperopt_gpu.so"
[ "$(echo $libs)" = "$want" ] ||
  fail "the package's lib/ has '$(echo $libs)', not '$want'"

# the command on PATH, run from elsewhere
PATH=$venv/bin:$PATH expect 0 superopt --version
contains "superopt 0.1.0"
contains "data: $pkg/_native/bin/../share/superopt"
if [ -e "$build/libsuperopt_gpu.so" ]; then
  contains "CUDA: built (executor not loaded)"
  PATH=$venv/bin:$PATH expect 0 superopt --version --gpu
  contains "($pkg/_native/bin/../lib/libsuperopt_gpu.so)"
fi
PATH=$venv/bin:$PATH expect 0 superopt check every_op.graph

# the package, with its bundled library
expect 0 "$venv/bin/python" -c '
import superopt
g = superopt.load("every_op.graph")
print("library", superopt._lib.library_path())
print("nodes", g.num_nodes)
(h, report) = g.optimize(budget=5)
print("optimized", h.num_nodes)'
contains "library $pkg/_native/lib/libsuperopt.so"
contains "optimized "
if [ -e "$build/libsuperopt_gpu.so" ]; then # the executor beside the library
  expect 0 "$venv/bin/python" -c 'import superopt; print(superopt.build_info())'
  contains "($pkg/_native/lib/libsuperopt_gpu.so)"
fi

test_end pip_install
