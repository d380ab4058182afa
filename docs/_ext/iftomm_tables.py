"""The IFToMM page's tables, written at the site's build from the stored default-size run.

``docs/iftomm.md`` shows the study ``iftomm_benchmarks`` at its default size; its figures and its
printed summary are drawn from ``seed_data/iftomm_benchmarks.nc`` at each build (``conf.py``), and
so are its tables: :func:`write_tables` writes one Markdown table per block of the benchmark grid
into ``_generated/studies/iftomm_tables/`` and the page includes them, so a table can never
disagree with the stored run (a hand-copied table once did: it predated the singular-position
checks).  A cell is the benchmark error with its verdict (**pass**: ended ``ok`` with error
<= 1e-3, low: <= 1e-1, fail) and the run's CPU time, or the status at which the run stopped and
the time it reached; "–" where the study does not run the case (the method refuses the model, or
has no steps control, or the step is outside the benchmark's range).
"""
import os
import re

import numpy as np

DASH = "–"

#: The page's tables: (file, benchmarks as columns, or None for one column per stepping, title).
#: The planar benchmarks A01, A02, A04 side by side; A03, A05 and A02 in space each on its own,
#: one column per stepping.
TABLES = (
    ("planar", ("A01", "A02_N2", "A02_N4", "A04"), None),
    ("a03", None, "A03"),
    ("a05", None, "A05"),
    ("spatial", ("A02_N2_spatial", "A02_N4_spatial"), None),
)


def _g(x, digits=2):
    """A number as the page prints it: ``digits`` significant digits, no trailing ``e+00``."""
    s = f"{x:.{digits}g}"
    return s.replace("e+0", "e+").replace("e-0", "e-")


def _e(x):
    """``x`` with two significant digits in exponent form, the exponent without its leading zero
    and its sign when positive (``8.8e-6``, ``2.0``, ``1.4e3``)."""
    mantissa, exponent = f"{x:.1e}".split("e")
    return mantissa if int(exponent) == 0 else f"{mantissa}e{int(exponent)}"


def _cell(c, energy=False):
    """The text of one run: error, verdict (and energy balance) and CPU time, or where it stopped."""
    status = str(c["status"].values)
    if status == "skipped":
        return DASH
    cpu = float(c["cpu_time"])
    cpu_s = f" ({_g(cpu)} s)" if np.isfinite(cpu) else ""
    err = float(c["error"])
    if status == "ok" and np.isfinite(err):
        verdict = "**pass**" if float(c["passed_high"]) == 1 else ("low" if float(c["passed_low"]) == 1 else "fail")
        text = f"{_e(err)} {verdict}"
        if energy and np.isfinite(float(c["energy_change_max"])):
            text += f", {_e(float(c['energy_change_max']))} J"
        return text + cpu_s
    # where it stopped: the step the message names ("at step k (t = ...)"), else the last output
    named = re.findall(r"\(t = ([-+0-9.eE]+)\)", str(c["message"].values))
    t_stop = float(named[-1]) if named else float(c["t_reached"])
    return f"`{status}` at t = {_g(t_stop, 3)}{cpu_s}"


def _at(benchmark, method, stepping):
    """The case's labels, as a dict: ``sel(method=...)`` would be read as xarray's own argument."""
    return {"benchmark": benchmark, "method": method, "stepping": stepping}


def _ran(ds, benchmarks, method, stepping=None):
    steppings = [str(s) for s in ds.stepping.values] if stepping is None else [stepping]
    return any(str(ds["status"].sel(_at(b, method, s)).values) != "skipped"
               for b in benchmarks for s in steppings)


def _by_benchmark(ds, benchmarks):
    """Rows method x stepping (one column: the page's article is narrow), one column per benchmark."""
    benchmarks = [b for b in benchmarks if b in ds.benchmark.values]
    lines = ["| method, stepping | " + " | ".join(benchmarks) + " |",
             "| --- |" + " --- |" * len(benchmarks)]
    for m in (str(v) for v in ds.method.values):
        for s in (str(v) for v in ds.stepping.values):
            if not _ran(ds, benchmarks, m, s):
                continue
            cells = [_cell(ds.sel(_at(b, m, s))) for b in benchmarks]
            lines.append(f"| `{m}`, {s} | " + " | ".join(cells) + " |")
    return lines


def _by_stepping(ds, benchmark):
    """Rows method, one column per stepping the benchmark runs (A03: with the energy balance)."""
    steppings = [str(s) for s in ds.stepping.values
                 if any(str(ds["status"].sel(_at(benchmark, m, s)).values) != "skipped"
                        for m in ds.method.values)]
    lines = ["| method | " + " | ".join(s.replace("=", " = ") for s in steppings) + " |",
             "| --- |" + " --- |" * len(steppings)]
    for m in (str(v) for v in ds.method.values):
        if not _ran(ds, [benchmark], m):
            continue
        cells = [_cell(ds.sel(_at(benchmark, m, s)), energy=benchmark == "A03")
                 for s in steppings]
        lines.append(f"| `{m}` | " + " | ".join(cells) + " |")
    return lines


def _counts(ds, benchmarks):
    """How many cases of these benchmarks the run ran and how many of those passed (high)."""
    sub = ds.sel(benchmark=[b for b in benchmarks if b in ds.benchmark.values])
    ran = sub["status"] != "skipped"
    return int(ran.sum()), int(((sub["passed_high"] == 1) & ran).sum())


def write_tables(ds, outdir):
    """Write ``<name>.md`` (a table and the line that counts its runs) for each of :data:`TABLES`
    into ``outdir``; return the files written."""
    os.makedirs(outdir, exist_ok=True)
    out = []
    for name, benchmarks, single in TABLES:
        if not any(b in ds.benchmark.values for b in (benchmarks or (single,))):
            raise RuntimeError(f"the stored run has none of {benchmarks or single}: rerun tools/seed_data.py")
        lines = _by_benchmark(ds, benchmarks) if single is None else _by_stepping(ds, single)
        ran, passed = _counts(ds, benchmarks or (single,))
        lines += ["", f"{ran} runs, {passed} of them pass the high-precision tolerance 1e-3."]
        path = os.path.join(outdir, f"{name}.md")
        text = "\n".join(lines) + "\n"
        if not os.path.exists(path) or open(path, encoding="utf-8").read() != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        out.append(path)
    return out
