"""Figures from files on a layout harder than the selftest's: three grid dims, mixed coordinate units,
no position level, a failed series."""
import dataclasses

import numpy as np
import pytest
from matplotlib.image import imread

from pyint.study.datasets import load_netcdf
from pyint.study.plotting import _level_units, axis_label, plot_file
from pyint.study import run_study

import _studies


@pytest.fixture(scope="module")
def rolling(tmp_path_factory):
    return run_study(_studies.ROLLING, out=tmp_path_factory.mktemp("rolling"), workers=1, figures=False,
                     verbose=False).path


def test_generic_figures_of_a_three_parameter_study(rolling, tmp_path):
    paths = plot_file(rolling, tmp_path)
    assert sorted(p.name for p in paths) == ["constraint_violation.png", "energy_error.png", "error_vs_h.png",
                                             "trajectories.png", "violation_vs_h.png", "work_precision.png"]
    # the position level is NaN everywhere: two panels (velocity, acceleration), not three
    one_panel = imread(tmp_path / "energy_error.png").shape[1]
    assert imread(tmp_path / "constraint_violation.png").shape[1] < 1.5 * one_panel


def test_axis_labels_carry_the_units_of_the_file(rolling):
    ds = load_netcdf(rolling)
    assert axis_label(ds, "time") == "t [s]"
    assert axis_label(ds, "error") == "error [m]"
    assert axis_label(ds, "cpu_time") == "CPU time [s]"
    assert axis_label(ds, "q", short="theta", units="rad") == "theta [rad]"
    assert axis_label(ds, "eps_vel") == r"$\varepsilon(\dot\Phi)$ [Phi]/s"  # model units placeholder
    assert axis_label(ds, "energy_error") == r"$|\Delta H / H_0|$"  # dimensionless: no brackets
    assert axis_label(ds, "q", units="m^2") == "q [m$^{2}$]"
    assert _level_units("[Phi]/s^k", "acceleration") == "[Phi]/s^2" and _level_units("[Phi]/s^k", "position") == "[Phi]"


def test_failed_series_are_left_out_and_the_rest_fitted(rolling):
    ds = load_netcdf(rolling)
    assert (ds["status"].sel({"method": "b", "rho_inf": 0.5}) == "failed").all()
    assert str(ds["message"].sel({"method": "b", "rho_inf": 0.5, "h": 0.1}).values).startswith(
        "RuntimeError: Newton did not converge")
    assert np.isfinite(ds["error"].sel({"method": "a"})).all()


def test_animate_draws_a_natural_coordinate_mechanism_frame_by_frame(tmp_path):
    """pyint.plotting.animate on a four-bar in natural coordinates (IFToMM A02, N = 2): one GIF frame per
    drawn sample; the model's drawing puts jointed bodies' shared points together (to the constraint
    residual) and a model without a drawing asks for points=."""
    from PIL import Image

    from pyint import GeneralizedAlpha
    from pyint.models.iftomm import n_four_bar, n_four_bar_state
    from pyint.plotting import animate
    model = n_four_bar(2)
    q0, v0 = n_four_bar_state(model, np.pi / 4, 2.0)
    res = GeneralizedAlpha().integrate(model, q0, v0, t_end=0.2, h=1e-3, every=20)
    lines = model.drawing(res.q[-1])
    bodies = [p for p in lines if len(p) > 1]
    assert len(bodies) == len(model.system.bodies) and all(p.shape == (2, 2) for p in bodies)
    ends = np.vstack(bodies)
    # every body end is a joint: it meets another body's end or a ground point, to the residual
    grounds = np.vstack([p for p in lines if len(p) == 1])
    for k, x in enumerate(ends):
        others = np.vstack([np.delete(ends, [k, k ^ 1], axis=0), grounds])
        assert np.min(np.linalg.norm(others - x, axis=1)) <= 10 * res.eps_pos + 1e-14, (k, x)
    out = animate(res, tmp_path / "a" / "four_bar.gif", every=2)
    with Image.open(out) as gif:
        assert gif.n_frames == len(range(0, len(res.t), 2)) and gif.size[0] > 100
    assert not list((tmp_path / "a").glob(".*part*"))
    with pytest.raises(ValueError, match="points="):
        animate(dataclasses.replace(res, model=_NoDrawing()), tmp_path / "x.gif")
    with pytest.raises(ValueError, match=".gif or .mp4"):
        animate(res, tmp_path / "x.png")
    custom = animate(res, tmp_path / "c.gif", points=lambda q: [q[:2].reshape(1, 2)], every=5)
    assert custom.is_file()


class _NoDrawing:
    name = "no_drawing"


def test_series_styles_do_not_repeat_within_forty():
    from pyint.study.plotting import series_style
    styles = [tuple(sorted(series_style(i).items())) for i in range(40)]
    assert len(set(styles)) == 40


def test_legend_outside_draws_nothing_without_labels_and_warns_nothing():
    import warnings

    from matplotlib.figure import Figure

    from pyint.study.plotting import legend_outside
    fig = Figure()
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # "No artists with labels found" would raise here
        assert legend_outside(ax) is None and legend_outside(fig) is None
    ax.plot([0, 1], [1, 0], label="b")
    leg = legend_outside(ax)
    assert [t.get_text() for t in leg.get_texts()] == ["b"]


def test_every_standard_figure_carries_its_caption_and_short_labels(rolling, tmp_path):
    from pyint.study.plotting import CAPTIONS, _series, caption_of, grid_dims
    for path in plot_file(rolling, tmp_path):
        assert caption_of(path) == CAPTIONS[path.name]
    ds = load_netcdf(rolling)
    labels = [label for label, _ in _series(ds, grid_dims(ds))]
    # text values alone, numbers as key=value; the dims with one value are left out
    assert all("method=" not in lab for lab in labels) and len(set(labels)) == len(labels)


def test_a_study_figure_is_not_drawn_over_by_the_standard_one_of_its_name(rolling, tmp_path):
    from pyint.study.plotting import study_figures

    def figures(path, outdir):
        p = outdir / "energy_error.png"
        p.write_bytes(b"own")
        return [p]
    study = dataclasses.replace(_studies.ROLLING, figures=figures)
    made = study_figures(rolling, tmp_path, study)
    assert [p.name for p in made].count("energy_error.png") == 1
    assert (tmp_path / "energy_error.png").read_bytes() == b"own"
