"""The ``pyint`` command, on top of the library: it owns study discovery.

    pyint                               a short usage: the commands, where the documentation is
    pyint info                          version, compiled kernels, built-in models, studies
    pyint study list                    the studies found (see :func:`studies`)
    pyint study run NAME|FILE [options] run one study (see pyint study run -h)
    pyint study run --all [options]     every study found, smoke tests aside, at its default size
    pyint plot FILE.nc [--out DIR]      redraw a study's figures from its file

Studies are found in three places (:func:`studies`, :func:`get_study`): the modules of
``pyint.studies`` (pyint's own), the entry-point group ``pyint.studies`` of installed
distributions (another package's studies), and a file named on the command line
(``pyint study run path/to/mystudy.py``).
"""
from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import importlib.util
import math
import sys
from pathlib import Path

from .study.runner import EXIT_ERROR, EXIT_OK, add_run_options, exit_status, run_and_report
from .study.workers import _describe
from .study.declaration import Study

#: The entry-point group through which installed distributions declare studies: each entry point
#: names a module that defines ``STUDY`` (``name = "pkg.module"``) or the Study itself
#: (``name = "pkg.module:STUDY"``).
ENTRY_POINT_GROUP = "pyint.studies"


def _kernels():
    from . import _fortran
    return sorted(n for n in dir(_fortran) if type(getattr(_fortran, n)).__name__ == "fortran")


# -- discovery ---------------------------------------------------------------------------------------
def _study_of(obj, where: str) -> Study:
    study = getattr(obj, "STUDY", None) if not isinstance(obj, Study) else obj
    if not isinstance(study, Study):
        raise TypeError(f"{where} defines no STUDY = Study(...) (pyint.study.Study)")
    return study


def _entry_point_studies() -> list[tuple[Study, str]]:
    found = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        where = f"entry point {ep.name} = {ep.value} (group {ENTRY_POINT_GROUP})"
        try:
            study = _study_of(ep.load(), where)
        except Exception as exc:  # noqa: BLE001 - one broken package must not hide the others
            print(f"pyint: cannot load study {where}: {_describe(exc)}", file=sys.stderr)
            continue
        found.append((study, where))
    return found


def studies(smoke: bool = False) -> dict[str, Study]:
    """Every study found: the ``STUDY`` of each module of ``pyint.studies`` (modules whose names
    start with ``_`` are helpers), then those of the entry-point group ``pyint.studies``.
    ``smoke``: include smoke tests (``Study(smoke=True)``, e.g. ``selftest``).

    A module that fails to import is reported on stderr and left out; two studies with one name
    are an error.
    """
    import pkgutil

    import pyint.studies as package
    found: dict[str, tuple[Study, str]] = {}
    candidates = []
    for info in sorted(pkgutil.iter_modules(package.__path__, package.__name__ + "."), key=lambda i: i.name):
        if info.name.rsplit(".", 1)[-1].startswith("_"):
            continue
        try:
            module = importlib.import_module(info.name)
        except Exception as exc:  # noqa: BLE001 - one broken study must not hide the others
            print(f"pyint: cannot import study module {info.name}: {_describe(exc)}", file=sys.stderr)
            continue
        if isinstance(getattr(module, "STUDY", None), Study):
            candidates.append((module.STUDY, f"module {info.name}"))
    for study, where in candidates + _entry_point_studies():
        if study.name in found and found[study.name][0] is not study:
            raise RuntimeError(f"two studies are named {study.name!r}: {found[study.name][1]} and {where}")
        found[study.name] = (study, where)
    return {name: study for name, (study, _) in found.items() if smoke or not study.smoke}


def load_study_file(path) -> Study:
    """The ``STUDY`` of a study script (``pyint study run path/to/mystudy.py``).  The script is
    imported as the module named by its file (its directory goes first on ``sys.path``, as
    ``python mystudy.py`` does), so worker processes find its ``run_case``."""
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no study file {path}")
    name = path.stem
    if not name.isidentifier():
        raise ValueError(f"study file {path}: its name must be a Python identifier (letters, digits, _)")
    loaded = sys.modules.get(name)
    if loaded is not None:
        if Path(getattr(loaded, "__file__", "") or "").resolve() != path:
            raise ValueError(f"study file {path}: a module named {name!r} is already imported from "
                             f"{getattr(loaded, '__file__', '(built in)')}; rename the file")
        return _study_of(loaded, f"study file {path}")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        # the user's file, not pyint: where and what, as one error line (no traceback through the cli)
        del sys.modules[name]
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        text = f": {exc.text.strip()}" if exc.text and exc.text.strip() else ""
        raise ValueError(f"study file {path} has a syntax error at {where} ({exc.msg}){text}; fix the "
                         "file and run again") from None
    except BaseException:
        del sys.modules[name]
        raise
    return _study_of(module, f"study file {path}")


def get_study(name: str) -> Study:
    """The study named ``name`` (smoke tests included), or the study of the file ``name``
    (a path ending in ``.py``)."""
    if str(name).endswith(".py"):
        return load_study_file(name)
    known = studies(smoke=True)
    if name not in known:
        raise ValueError(f"no study named {name!r}; known: {', '.join(sorted(known)) or '(none)'} "
                         "(or give a study file: pyint study run path/to/mystudy.py)")
    return known[name]


# -- the commands --------------------------------------------------------------------------------------
def cmd_info(args) -> int:
    import pyint

    from .study.datasets import git_commit
    from .models import BUILTIN_MODELS
    found = studies(smoke=True)
    print(f"pyint {pyint.__version__} (git {git_commit()}) from {Path(pyint.__file__).parent}")
    print(f"compiled kernels (pyint._fortran): {', '.join(_kernels()) or '(none)'}")
    print("built-in models: " + (", ".join(f"{k} ({cls.__name__})" for k, cls in BUILTIN_MODELS.items())
                                 or "(none)"))
    smoke = [n for n, s in found.items() if s.smoke]
    print(f"studies: {', '.join(n for n, s in found.items() if not s.smoke) or '(none yet)'}"
          + (f"; smoke test: {', '.join(smoke)}" if smoke else "") + "  (pyint study list)")
    return EXIT_OK


def cmd_usage(parser) -> int:
    """Bare ``pyint``: what the command does, in a few lines (``pyint info``: the installation)."""
    import pyint
    print(f"pyint {pyint.__version__}: integrators for constrained multibody DAEs\n")
    print(parser.format_usage().rstrip())
    print("""
  pyint study list                 the studies and their sizes
  pyint study show NAME            a study's parameters with units, its --quick size, its expected time
  pyint study run NAME [--quick]   run a study into results/NAME.nc (pyint study run -h: the options)
  pyint plot results/NAME.nc       redraw a study's figures from its file
  pyint info                       version, compiled kernels, built-in models, studies

The library: `from pyint import GeneralizedAlpha` (the documentation's getting started page).""")
    return EXIT_OK


def _n_cases(study, quick):
    grid, _ = study.resolve(quick=quick)
    return math.prod(len(v) for v in grid.values())


def cmd_study_list(args) -> int:
    rows = sorted(studies(smoke=True).values(), key=lambda s: (s.smoke, s.name))
    width = max([len(s.name) for s in rows] + [5])
    print(f"{'study'.ljust(width)}  cases (quick)  description")
    for s in rows:
        note = "  [smoke test, not in --all]" if s.smoke else ""
        print(f"{s.name.ljust(width)}  {_n_cases(s, False):5d} ({_n_cases(s, True):4d})  {s.description}{note}")
    return EXIT_OK


def _values_text(values) -> str:
    shown = ", ".join(map(str, values[:6]))
    return f"[{shown}{', ...' if len(values) > 6 else ''}]"


def _unit_of(study, key) -> tuple[str, str]:
    from .study.datasets import metadata_table
    return metadata_table(study.meta).get(key, ("?", "(no units declared)"))


def cmd_study_show(args) -> int:
    """``pyint study show NAME``: what a run of the study is before running it: its parameters with
    units, its size at the default and the ``--quick`` grid, and what an earlier run's file says it cost."""
    from .study.datasets import load_netcdf
    study = get_study(args.name)
    print(f"{study.name} (version {study.version}): {study.description}")
    grid, fixed = study.resolve()
    qgrid, qfixed = study.resolve(quick=True)
    print("grid (a case per combination):")
    for key, values in grid.items():
        units, long_name = _unit_of(study, key)
        quick = f"; --quick: {len(qgrid[key])} {_values_text(qgrid[key])}" if key in qgrid else \
            f"; --quick: fixed at {qfixed.get(key)!r}"
        print(f"  {key}{f' [{units}]' if units else ''} {long_name}: {len(values)} values {_values_text(values)}{quick}")
    for key, value in fixed.items():
        units, long_name = _unit_of(study, key)
        quick = f" (--quick: {qfixed[key]!r})" if key in qfixed and qfixed[key] != value else ""
        print(f"  {key}{f' [{units}]' if units else ''} {long_name}: fixed at {value!r}{quick}")
    for key in qgrid.keys() - grid.keys():
        print(f"  {key}: --quick makes it a grid of {len(qgrid[key])} values {_values_text(qgrid[key])}")
    n, nq = math.prod(len(v) for v in grid.values()), math.prod(len(v) for v in qgrid.values())
    print(f"cases: {n} (--quick: {nq})" + ("; the study's where() may skip some" if study.where else ""))
    path = Path(args.out) / f"{study.name}.nc"
    if path.is_file():
        ds = load_netcdf(path)
        cpu = float(ds["cpu_time"].sum()) if "cpu_time" in ds else None
        ran = int(ds.attrs.get("n_cases", 0)) or None
        size = "--quick" if ds.attrs.get("quick") else "a grid"
        if cpu is not None and ran:
            print(f"expected time: about {cpu / ran * n:.3g} s of CPU at the default size, {cpu / ran * nq:.3g} s "
                  f"--quick (the cases' cpu_time in {path}, {size} run of {ran} cases, {ds.attrs.get('created', '')})")
        else:
            print(f"expected time: {path} records no cpu_time of its cases")
    else:
        print(f"expected time: unknown until a first run ({path} does not exist; pyint study run "
              f"{study.name} --quick is the smoke size)")
    return EXIT_OK


def cmd_study_run(args) -> int:
    """``pyint study run``: the studies named (or given as files), or ``--all``."""
    if args.all == bool(args.names):
        raise ValueError("give study names or --all (not both)")
    if args.all and args.grid:
        raise ValueError("--grid applies to one study; not with --all")
    chosen = list(studies().values()) if args.all else [get_study(n) for n in args.names]
    if args.all and not chosen:
        print("pyint: no studies are registered yet (pyint.studies is empty)", file=sys.stderr)
        return EXIT_OK
    return run_and_report(chosen, args)


def cmd_plot(args) -> int:
    from .study.datasets import load_netcdf
    from .study.plotting import study_figures
    path = Path(args.file)
    name = load_netcdf(path).attrs.get("study")
    study = studies(smoke=True).get(name) if name else None
    made = study_figures(path, args.out, study)
    for path in made:
        print(path)
    if not made:
        print(f"pyint: error: no figure applies to {args.file} (no variable a figure draws)", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pyint", description="Integrators for constrained multibody DAEs: "
                                     "studies, datasets and figures.")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("info", help="version, compiled kernels, built-in models, studies").set_defaults(func=cmd_info)

    study = sub.add_parser("study", help="list or run studies")
    ssub = study.add_subparsers(dest="study_command", required=True)
    ssub.add_parser("list", help="the registered studies").set_defaults(func=cmd_study_list)
    show = ssub.add_parser("show", help="a study's parameters with units, its size and expected time")
    show.add_argument("name", metavar="NAME", help="a name (pyint study list) or a study file path/to/mystudy.py")
    show.add_argument("--out", type=Path, default=Path("results"), help="where an earlier run wrote its file "
                      "(default: results)")
    show.set_defaults(func=cmd_study_show)
    run = ssub.add_parser("run", help="run studies (cached cases are not rerun)")
    run.add_argument("names", nargs="*", metavar="NAME", help="study to run: a name (pyint study list) or a "
                     "study file path/to/mystudy.py")
    run.add_argument("--all", action="store_true", help="every study found (smoke tests aside) at its default size")
    add_run_options(run)
    run.set_defaults(func=cmd_study_run)

    plot = sub.add_parser("plot", help="draw a study's figures from its NetCDF file")
    plot.add_argument("file", type=Path, help="the study's .nc file")
    plot.add_argument("--out", type=Path, default=None, help="directory for the PNGs (default: FILE without .nc)")
    plot.set_defaults(func=cmd_plot)
    return parser


def main(argv=None) -> int:
    """The ``pyint`` command (a study script runs through :func:`pyint.study.study_main`)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        return cmd_usage(parser)
    return exit_status(args.func, args)


if __name__ == "__main__":
    sys.exit(main())
