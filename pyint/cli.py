"""The ``pyint`` command.

    pyint [info]                        version, compiled kernels, built-in models, studies
    pyint study list                    the registered studies
    pyint study run NAME [options]      run one study (see pyint study run -h)
    pyint study run --all [options]     every registered study at its default size
    pyint plot FILE.nc [--out DIR]      redraw a study's figures from its file
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def _kernels():
    from . import _fortran
    return sorted(n for n in dir(_fortran) if type(getattr(_fortran, n)).__name__ == "fortran")


def cmd_info(args) -> int:
    import pyint
    from .datasets import git_commit
    from .models import BUILTIN_MODELS
    from .runner import studies
    print(f"pyint {pyint.__version__} (git {git_commit()}) from {Path(pyint.__file__).parent}")
    print(f"compiled kernels (pyint._fortran): {', '.join(_kernels()) or '(none)'}")
    print("built-in models: " + (", ".join(f"{k} ({cls.__name__})" for k, cls in BUILTIN_MODELS.items())
                                 or "(none)"))
    print(f"studies: {', '.join(studies()) or '(none yet)'}; smoke test: selftest  (pyint study list)")
    return EXIT_OK


def _n_cases(study, quick):
    grid, _ = study.resolve(quick=quick)
    return math.prod(len(v) for v in grid.values())


def cmd_study_list(args) -> int:
    from .runner import studies
    rows = [(s, "") for s in studies().values()]
    from ._selftest_study import STUDY as selftest
    rows.append((selftest, "  [smoke test, not in --all]"))
    width = max(len(s.name) for s, _ in rows)
    print(f"{'study'.ljust(width)}  cases (quick)  description")
    for s, note in rows:
        print(f"{s.name.ljust(width)}  {_n_cases(s, False):5d} ({_n_cases(s, True):4d})  {s.description}{note}")
    return EXIT_OK


def cmd_study_run(args, chosen=None) -> int:
    """``pyint study run``; ``chosen``: the Study objects to run instead of ``args.names``
    (:func:`pyint.runner.study_main`, a study script run as ``python studies/NAME.py``)."""
    from .runner import failure_table, get_study, run_study, studies, summary_table
    if chosen is not None and (args.all or args.names):
        raise ValueError(f"a study script runs its own study ({chosen[0].name}): give only options, "
                         "no study names or --all")
    if chosen is None:
        if args.all == bool(args.names):
            raise ValueError("give study names or --all (not both)")
        if args.all and args.grid:
            raise ValueError("--grid applies to one study; not with --all")
    if args.workers is not None and args.scheduler:
        raise ValueError("give --workers (local processes) or --scheduler (Dask), not both")
    if chosen is None:
        chosen = list(studies().values()) if args.all else [get_study(n) for n in args.names]
    if args.all and not chosen:
        print("pyint: no studies are registered yet (pyint.studies is empty)", file=sys.stderr)
        return EXIT_OK
    if args.grid and len(chosen) > 1:
        raise ValueError("--grid applies to one study; name only one")
    overrides = [study.parse_overrides(args.grid) for study in chosen]
    runs, status, last = [], EXIT_OK, []
    for study, grid in zip(chosen, overrides):
        try:
            runs.append((study, run_study(study, out=args.out, grid=grid, quick=args.quick, workers=args.workers,
                                          scheduler=args.scheduler, rerun_failed=args.rerun_failed,
                                          figures=not args.no_figures)))
        except Exception as exc:  # noqa: BLE001 - one broken study must not stop the others
            if len(chosen) == 1:
                raise
            print(f"pyint: study {study.name} did not finish: {type(exc).__name__}: {exc}", file=sys.stderr)
            last.append(f"study {study.name} did not finish")
            status = EXIT_ERROR
    if len(chosen) > 1:
        total = sum(run.seconds for _, run in runs)
        print(f"\n{len(runs)} of {len(chosen)} studies finished in {total / 60:.1f} min", file=sys.stderr)
    for study, run in runs:
        print()
        try:
            print(study.summary(run.dataset) if study.summary is not None else summary_table(run.dataset))
        except Exception as exc:  # noqa: BLE001 - the study's summary may need cases that failed
            if not run.n_failed:
                raise
            print(summary_table(run.dataset))
            print(f"(the study's own summary failed: {type(exc).__name__}: {exc})")
        print(f"-> {run.path}" + (f"; figures: {run.path.with_suffix('')}/" if run.figures else ""))
        if run.n_failed:
            print(f"\n{study.name}: {run.n_failed} of {run.n_cases} cases did not end ok:")
            print(failure_table(run.dataset))
        if run.n_errors:  # raised or crashed: no result (a status a case returned itself is a result)
            last.append(f"study {study.name}: {run.n_errors} of {run.n_cases} cases failed (see the table "
                        f"above); {run.path} holds every case with its status and message")
            status = EXIT_ERROR
        if run.figure_error:
            last.append(f"study {study.name}: figures failed: {run.figure_error}")
            status = EXIT_ERROR
    sys.stdout.flush()
    for line in last:
        print(f"pyint: error: {line}", file=sys.stderr)
    return status


def cmd_plot(args) -> int:
    from .plotting import study_figures
    made = study_figures(args.file, args.out)
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
    sub.add_parser("info", help="version, compiled kernels, built-in models").set_defaults(func=cmd_info)

    study = sub.add_parser("study", help="list or run studies")
    ssub = study.add_subparsers(dest="study_command", required=True)
    ssub.add_parser("list", help="the registered studies").set_defaults(func=cmd_study_list)
    run = ssub.add_parser("run", help="run studies (cached cases are not rerun)")
    run.add_argument("names", nargs="*", metavar="NAME", help="study to run")
    run.add_argument("--all", action="store_true", help="every registered study at its default size")
    run.add_argument("--grid", action="extend", nargs="+", default=[], metavar="KEY=V1,V2",
                     help="values of a parameter (a fixed parameter given several values becomes a grid dimension)")
    run.add_argument("--out", type=Path, default=Path("results"), help="output directory (default: results)")
    run.add_argument("--workers", type=int, default=None,
                     help="local worker processes (default: all cores; 1 = run in this process)")
    run.add_argument("--scheduler", default=None, metavar="ADDR",
                     help="run on the Dask distributed scheduler at ADDR (e.g. tcp://host:8786)")
    run.add_argument("--quick", action="store_true", help="the study's reduced grid (smoke test)")
    run.add_argument("--rerun-failed", action="store_true", help="rerun cached cases that did not end ok")
    run.add_argument("--no-figures", action="store_true", help="write the dataset only")
    run.set_defaults(func=cmd_study_run)

    plot = sub.add_parser("plot", help="draw a study's figures from its NetCDF file")
    plot.add_argument("file", type=Path, help="the study's .nc file")
    plot.add_argument("--out", type=Path, default=None, help="directory for the PNGs (default: FILE without .nc)")
    plot.set_defaults(func=cmd_plot)
    return parser


def main(argv=None, study=None) -> int:
    """The ``pyint`` command; ``study``: a Study object that ``study run`` runs (argv then holds
    only its options), see :func:`pyint.runner.study_main`."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        return cmd_info(args)
    try:
        if study is not None:
            return cmd_study_run(args, [study])
        return args.func(args)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        print(f"pyint: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (RuntimeError, OSError) as exc:
        print(f"pyint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
