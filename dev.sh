#!/usr/bin/env bash
# pyint's one entry point on a fresh Debian 12 machine (see README):
#   ./dev.sh studies [ARGS]   install what is missing, build, run every study (default size)
#   ./dev.sh test [ARGS]      install what is missing, build, run the test suite (pytest ARGS; on one
#                             pytest-xdist worker per core, PYINT_TEST_WORKERS=N to choose), then
#                             its numerically sensitive tests again under a second BLAS kernel,
#                             then build the documentation (as ./dev.sh docs; not when ARGS are given)
#   ./dev.sh docs             install what is missing, build, build the documentation site
#                             (docs/_build/html; warnings are errors, every example runs), then
#                             check its HTML (tests/test_docs.py test_site_*)
#   ./dev.sh bench [ARGS]     install what is missing, build, run the benchmarks
#   ./dev.sh setup            only install and build
# Installs Debian packages (apt-get, as root or through sudo) and the pinned
# Python packages of requirements.lock into .venv, then builds pyint into it.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(pwd)
VENV=${PYINT_VENV:-$ROOT/.venv}
PYTHON=${PYTHON:-python3}
APT_PACKAGES="gfortran libsundials-dev liblapack-dev libblas-dev pkg-config libsuitesparse-dev"

log() { printf '[dev.sh] %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    log "need root (or sudo) to run: $*"; exit 1; fi
}

install_debian() {
  local missing=""
  for p in $APT_PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
  done
  if ! "$PYTHON" -m venv --help >/dev/null 2>&1 || ! "$PYTHON" -c "import ensurepip" 2>/dev/null; then
    missing="$missing python3-venv"
  fi
  # Python.h: pyint's extension and scikits.odes (built from its sdist against SUNDIALS) need it
  if [ ! -f "$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h" ]; then
    missing="$missing python3-dev"
  fi
  if [ -n "$missing" ]; then
    log "installing Debian packages:$missing"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
  fi
}

install_python() {
  if [ ! -x "$VENV/bin/python" ]; then
    log "creating $VENV"
    "$PYTHON" -m venv "$VENV"
  fi
  local stamp="$VENV/.requirements.sha256" want
  want=$(sha256sum requirements.lock | cut -d' ' -f1)
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    log "installing pinned Python packages (requirements.lock)"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r requirements.lock
    echo "$want" > "$stamp"
  fi
  log "building pyint (incremental build in build/)"
  PATH="$VENV/bin:$PATH" "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
    --no-build-isolation --no-deps -Cbuild-dir="build/cp-$("$VENV/bin/python" -c 'import sys;print(f"{sys.version_info[0]}{sys.version_info[1]}")')" .
}

setup() { install_debian; install_python; }

# the Sphinx site: the installed pyint's API, the guide, the seed pages (their studies run at
# --quick size into docs/_generated/) and the example gallery (every examples/plot_*.py runs);
# -W --keep-going: every warning is an error, all of them are reported
build_docs() {
  local t0=$SECONDS
  log "building the documentation (docs/_build/html)"
  # the status is returned explicitly: a function called as `build_docs || rc=$?` runs without
  # set -e, so without it a failed build would return the status of the log line (0)
  local st=0
  ( cd "$ROOT/docs" && MPLBACKEND=Agg "$VENV/bin/python" -m sphinx -b html -W --keep-going -q \
      -d "$ROOT/docs/_build/doctrees" . "$ROOT/docs/_build/html" ) || st=$?
  if [ $st != 0 ]; then log "documentation build FAILED (exit $st)"; return $st; fi
  log "documentation built in $((SECONDS - t0)) s: docs/_build/html/index.html"
  # the built site's checks (tests/test_docs.py test_site_*: nothing loaded from the network,
  # math through the local MathJax, no nan in a table, the in-page TOC), on the site just built
  ( cd "$ROOT/tests" && PYINT_DOCS_HTML="$ROOT/docs/_build/html" "$VENV/bin/python" -m pytest \
      -c "$ROOT/pyproject.toml" --rootdir "$ROOT" -p no:cacheprovider -q test_docs.py -k test_site_ ) || st=$?
  if [ $st != 0 ]; then log "checks of the built site FAILED (exit $st)"; fi
  return $st
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  setup) setup ;;
  test)
    setup
    # run from tests/ so the source tree's pyint/ never shadows the installed package
    cd "$ROOT/tests"
    # on pytest-xdist workers, one per core (PYINT_TEST_WORKERS=0: in this process), a test module
    # whole on one worker in file order (--dist loadfile): a module-scoped fixture (the golden runs, a
    # Dask cluster, computed trajectories) is computed once, and a module-level RNG draws as without
    # xdist (split, test_liegroup's draws changed and its one-ulp bounds failed; --dist loadgroup does
    # not group under pytest 9.2: xdist 3.8 renames item._nodeid, which pytest 9 no longer reads);
    # one BLAS thread per worker, so the workers do not oversubscribe the cores
    workers=${PYINT_TEST_WORKERS:-auto}
    export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
    pytest() { "$VENV/bin/python" -m pytest -c "$ROOT/pyproject.toml" --rootdir "$ROOT" -p no:cacheprovider \
                 -n "$workers" --dist loadfile "$@"; }
    rc=0; pytest "$@" || rc=$?
    # NumPy/SciPy round differently under each OpenBLAS kernel (the one a machine's CPU
    # selects): the numerically sensitive tests run a second time under the kernel every
    # x86-64 CPU can run, unless a kernel was forced (OPENBLAS_CORETYPE set).
    if [ -z "${OPENBLAS_CORETYPE:-}" ] && { [ $rc = 0 ] || [ $rc = 5 ]; }; then
      log "second run of the numerically sensitive tests (-m numerics) with OPENBLAS_CORETYPE=Sandybridge"
      rc2=0; OPENBLAS_CORETYPE=Sandybridge pytest "$@" -m numerics || rc2=$?
      # exit 5 (nothing selected) only fails when neither run ran a test
      if [ $rc = 5 ] && [ $rc2 = 5 ]; then rc=5; elif [ $rc2 != 5 ] && [ $rc2 != 0 ]; then rc=$rc2; elif [ $rc = 5 ]; then rc=0; fi
    fi
    # the whole suite (no pytest ARGS, as CI runs it) ends with the documentation: a broken
    # example or a docstring warning fails it
    if [ $# = 0 ] && [ $rc = 0 ]; then build_docs || rc=$?; fi
    exit $rc ;;
  docs)
    setup
    build_docs ;;
  studies)
    setup
    exec "$VENV/bin/pyint" study run --all "$@" ;;
  bench)
    setup
    # peers (Exudyn) live in the benchmark's own directory, never in pyint's environment
    BENCH_DEPS="$ROOT/build/bench-deps"
    if [ ! -d "$BENCH_DEPS/exudyn" ]; then
      log "installing benchmark peers (exudyn) into $BENCH_DEPS"
      "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --target "$BENCH_DEPS" exudyn==1.13.6 \
        || log "could not install exudyn: benchmarks run without it"
    fi
    cd "$ROOT/bench" && PYTHONPATH="$BENCH_DEPS" exec "$VENV/bin/python" "$ROOT/bench/run.py" "$@" ;;
  *)
    sed -n '2,12p' "$0" >&2; exit 2 ;;
esac
