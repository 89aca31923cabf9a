#!/usr/bin/env bash
# install.sh: `cmake --install` into a temporary prefix, moved elsewhere
# afterwards, then used as a stranger would: the installed superopt finds
# its data relative to itself (no build or source path in the installed
# files), a missing data file is exit 2 listing the paths tried, --version,
# optimize, the tool called through PATH finding its CUDA executor, the
# example program (examples/embed.c) compiled through pkg-config (shared and
# static) and through find_package(superopt) (both targets) and run without
# LD_LIBRARY_PATH, and, given a Python with pytest, the Python tests with
# the package over the installed prefix (SUPEROPT_PREFIX; `pip install
# ./python`, which builds its own copy, is tests/pip_install.sh).
#
# Where the system allows a private mount namespace (unshare -m), the
# checks run with the build tree and the source tree's data, sources,
# models, tests, examples and python/ hidden under empty tmpfs mounts, as if
# deleted (the Python interpreter's environment stays visible).
# usage: tests/install.sh BUILD_DIR SOURCE_DIR [PYTHON]
set -u
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
fails=0
. "$(dirname "$0")/lib.sh"
unset SUPEROPT_DATA SUPEROPT_LIB SUPEROPT_PREFIX SUPEROPT_BIN SUPEROPT_GPU_LIB

if [ -z "${INSTALL_SH_TMP:-}" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  if ! cmake --install "$build" --prefix "$tmp/stage" >"$tmp/install.log" 2>&1; then
    echo "FAIL: cmake --install"; cat "$tmp/install.log"; exit 1
  fi
  # The prefix is relocatable: move it; the test inputs go outside the tree.
  mv "$tmp/stage" "$tmp/prefix"
  mkdir "$tmp/work"
  cp "$src/tests/data/good/every_op.graph" "$src/examples/embed.c" "$tmp/work/"
  mkdir "$tmp/work/python"
  cp -r "$src/python/superopt" "$src/python/tests" "$tmp/work/python/"
  cp "$src/models/onnx/exports/bert.legacy.onnx" "$tmp/work/"
  if unshare -m --propagation private true 2>/dev/null; then
    INSTALL_SH_TMP=$tmp INSTALL_SH_MASK=1 unshare -m --propagation private \
      bash "$0" "$@"
  else
    echo "install: no mount namespace here: build and source trees stay visible"
    INSTALL_SH_TMP=$tmp bash "$0" "$@"
  fi
  exit $?
fi
tmp=$INSTALL_SH_TMP
p=$tmp/prefix
if [ -n "${INSTALL_SH_MASK:-}" ]; then
  for d in "$build" "$src/rules" "$src/costdb" "$src/src" "$src/models" \
    "$src/tests" "$src/examples" "$src/python"; do
    mount -t tmpfs none "$d" || { echo "FAIL: cannot hide $d"; exit 1; }
  done
  [ ! -e "$src/rules/default.rules" ] && [ ! -e "$build/superopt" ] ||
    { echo "FAIL: the trees are still visible"; exit 1; }
fi
cd "$tmp/work" || exit 1

for f in bin/superopt lib/libsuperopt.so lib/libsuperopt.a \
  include/superopt/superopt.h lib/pkgconfig/superopt.pc \
  lib/cmake/superopt/superoptConfig.cmake \
  lib/cmake/superopt/superoptTargets.cmake \
  share/superopt/rules/default.rules share/superopt/rules/extended.rules \
  share/superopt/rules/passes.rules share/superopt/costdb/h100.tsv; do
  [ -e "$p/$f" ] || fail "$f not installed"
done
# Nothing installed names the data of the build or the source tree (debug
# information aside: strip it first; protobuf-c's generated code keeps its
# own file name for assertions).
for f in bin/superopt lib/libsuperopt.so; do
  strip -o "$tmp/stripped" "$p/$f"
  if grep -qaF -e "$src/rules" -e "$src/costdb" -e "$build/share" \
    -e "$src/models" "$tmp/stripped"; then
    fail "$f names the build or source tree"
  fi
  if readelf -d "$p/$f" | grep -E 'RPATH|RUNPATH' | grep -qF -e "$build" -e "$src"; then
    fail "$f has a run path into the build or source tree"
  fi
done

expect 0 "$p/bin/superopt" --version
contains "superopt 0.1.0"
# the commit the build was made from (12 hex digits, -dirty with changes)
grep -qE '^commit: ([0-9a-f]{12}(-dirty)?|unknown)$' "$tmp/out" ||
  fail "no commit line"
contains "backends: CPU"
contains "CUDA: "
contains "data: $p/bin/../share/superopt"

expect 0 "$p/bin/superopt" optimize every_op.graph --budget 20 \
  --db "$tmp/cost.sqlite" -o opt.onnx
contains "check: max relative error"
contains "wrote opt.onnx"

# A missing data file: exit 2 and the paths tried, nothing written.
mv "$p/share/superopt/rules/default.rules" "$tmp/default.rules"
expect 2 "$p/bin/superopt" optimize every_op.graph --db "$tmp/cost.sqlite" \
  -o missing.graph
contains "data file 'rules/default.rules' not found; looked in: $p/bin/../share/superopt/rules/default.rules"
[ ! -e missing.graph ] || fail "wrote missing.graph"
mv "$p/share/superopt/costdb" "$tmp/costdb"
expect 2 "$p/bin/superopt" optimize every_op.graph --db "$tmp/cost.sqlite"
contains "data file 'costdb' not found; looked in: $p/bin/../share/superopt/costdb"
mv "$tmp/costdb" "$p/share/superopt/costdb"
# ... and SUPEROPT_DATA finds a copy elsewhere (the default's two rules
# files; passes.rules for --passes rules).
mkdir -p "$tmp/data/rules"
mv "$tmp/default.rules" "$tmp/data/rules/"
cp "$p/share/superopt/rules/extended.rules" "$p/share/superopt/rules/passes.rules" "$tmp/data/rules/"
cp -r "$p/share/superopt/costdb" "$tmp/data/"
SUPEROPT_DATA=$tmp/data expect 0 "$p/bin/superopt" optimize every_op.graph \
  --budget 5 --db "$tmp/cost.sqlite"
contains "rules read: $(grep -c '^rule ' "$tmp/data/rules/default.rules") from $tmp/data/rules/default.rules, $(grep -c '^rule ' "$tmp/data/rules/extended.rules") from $tmp/data/rules/extended.rules"
mv "$tmp/data/rules/default.rules" "$p/share/superopt/rules/"

# CUDA builds: the executor (libsuperopt_gpu.so) is loaded only when a
# command needs it: not for --help, --version or a CPU command, but for
# --version --gpu, which names the file it loaded: the prefix's, also when
# the tool is called through PATH (argv[0] a bare name) from elsewhere.
if [ -e "$p/lib/libsuperopt_gpu.so" ]; then
  LD_DEBUG=files "$p/bin/superopt" --help >/dev/null 2>"$tmp/ld.log"
  LD_DEBUG=files "$p/bin/superopt" --version >/dev/null 2>>"$tmp/ld.log"
  LD_DEBUG=files "$p/bin/superopt" check every_op.graph >/dev/null 2>>"$tmp/ld.log"
  if grep -qE 'libcudnn|libcublasLt|libcudart|libsuperopt_gpu' "$tmp/ld.log"; then
    fail "--help, --version or check loaded the CUDA libraries"
  fi
  expect 0 "$p/bin/superopt" --version
  contains "CUDA: built (executor not loaded)"
  LD_DEBUG=files "$p/bin/superopt" --version --gpu >/dev/null 2>"$tmp/ld.log"
  grep -q 'libsuperopt_gpu' "$tmp/ld.log" ||
    fail "--version --gpu did not load the executor"
  PATH=$p/bin:$PATH expect 0 superopt --version --gpu
  contains "($p/bin/../lib/libsuperopt_gpu.so)"
  # run --device cuda through PATH: the executor loads (no GPU here: "no
  # CUDA device", exit 3; on a GPU machine, exit 0)
  PATH=$p/bin:$PATH superopt run every_op.graph --device cuda >"$tmp/out" 2>&1
  if grep -q "could not be loaded" "$tmp/out"; then
    fail "superopt on PATH did not load its executor"
    sed 's/^/  | /' "$tmp/out"
  fi
  SUPEROPT_GPU_LIB=$tmp/none.so expect 3 "$p/bin/superopt" run every_op.graph \
    --device cuda
  contains "the CUDA executor (libsuperopt_gpu.so) could not be loaded: $tmp/none.so"
  SUPEROPT_GPU_LIB=$tmp/none.so expect 0 "$p/bin/superopt" --version --gpu
  contains "CUDA: executor not loaded ($tmp/none.so"
fi

# In a sanitizer build the installed library is instrumented: a program
# or Python module linking it needs the ASan runtime loaded first. The
# plain build runs the rest.
if [ "${INSTALL_SANITIZED:-0}" = 1 ]; then
  echo "install: sanitizer build: the example program and the Python" \
    "package are checked by the plain build only"
  [ "$fails" = 0 ] && echo "install: all passed"
  exit $((fails > 0))
fi

# The example through pkg-config, against the shared library: --cflags
# name only the prefix's include/ (no dependency's folders), --libs give the
# run path of the prefix's lib/, so it starts without LD_LIBRARY_PATH...
export PKG_CONFIG_PATH=$p/lib/pkgconfig
for pc in superopt superopt-static; do
  [ "$(pkg-config --cflags $pc | xargs)" = "-I$p/lib/pkgconfig/../../include" ] ||
    fail "pkg-config --cflags $pc: $(pkg-config --cflags $pc)"
done
expect 0 cc -std=c17 -Wall -Wextra -Werror embed.c \
  $(pkg-config --cflags --libs superopt) -lm -o embed
expect 0 env -u LD_LIBRARY_PATH ./embed every_op.graph embed.onnx 20
contains "optimized: "
contains "wrote embed.onnx"
env -u LD_LIBRARY_PATH ldd ./embed | grep -qF "$p/lib/pkgconfig/../../lib/libsuperopt.so" ||
  fail "embed does not use the installed libsuperopt.so"
# ... and the static one (superopt-static.pc: the archive and the shared
# libraries it depends on).
expect 0 cc -std=c17 -Wall -Wextra -Werror embed.c \
  $(pkg-config --cflags --libs superopt-static) -lm -o embed_static
# A program with the archive linked in finds no data beside itself:
expect 2 env -u LD_LIBRARY_PATH ./embed_static every_op.graph embed2.onnx 20
contains "data file 'costdb' not found; looked in: $tmp/work/../share/superopt/costdb"
SUPEROPT_DATA=$p/share/superopt expect 0 env -u LD_LIBRARY_PATH \
  ./embed_static every_op.graph embed2.onnx 20
contains "wrote embed2.onnx"

# find_package(superopt) from a CMake project: the exported targets, the
# shared library and the archive (whose dependencies the config finds).
mkdir -p cm
cat >cm/CMakeLists.txt <<'CM'
cmake_minimum_required(VERSION 3.18)
project(embed_example C)
find_package(superopt 0.1 REQUIRED)
add_executable(embed ../embed.c)
target_link_libraries(embed PRIVATE superopt::superopt m)
add_executable(embed_static ../embed.c)
target_link_libraries(embed_static PRIVATE superopt::superopt_static m)
file(WRITE ${CMAKE_BINARY_DIR}/data_dir.txt "${SUPEROPT_DATA_DIR}")
CM
expect 0 cmake -S cm -B cm/build -DCMAKE_PREFIX_PATH="$p"
expect 0 cmake --build cm/build
expect 0 env -u LD_LIBRARY_PATH cm/build/embed every_op.graph embed3.onnx 5
contains "wrote embed3.onnx"
SUPEROPT_DATA=$(cat cm/build/data_dir.txt) expect 0 env -u LD_LIBRARY_PATH \
  cm/build/embed_static every_op.graph embed4.onnx 5
contains "wrote embed4.onnx"

# The Python package over the installed prefix (SUPEROPT_PREFIX), its tests
# run from outside the tree.
py=${3:-}
if [ -n "$py" ]; then
  mv python/tests pytests
  SUPEROPT_PREFIX=$p PYTHONPATH=$tmp/work/python expect 0 "$py" -c \
    'import superopt; print(superopt._lib.library_path())'
  contains "$p/lib/libsuperopt.so"
  # the library's loader finds the executor beside the library itself
  if [ -e "$p/lib/libsuperopt_gpu.so" ]; then
    SUPEROPT_PREFIX=$p PYTHONPATH=$tmp/work/python expect 0 "$py" -c \
      'import superopt; print(superopt.build_info())'
    contains "($p/lib/libsuperopt_gpu.so)"
  fi
  SUPEROPT_PREFIX=$p PYTHONPATH=$tmp/work/python \
    SUPEROPT_TEST_BERT=$tmp/work/bert.legacy.onnx expect 0 "$py" -m pytest \
    -q -p no:cacheprovider pytests
  contains "passed"
fi

test_end install
