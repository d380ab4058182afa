"""Drawing a result: :func:`animate` turns a trajectory into a GIF or MP4 of the mechanism.

What is drawn comes from the model (its ``drawing(q)`` method: a list of polylines, each an
array of points, for the built-in chains and :class:`pyint.models.NaturalSystem` mechanisms)
or from the caller (``points=``, a function of q giving the same), so a model of one's own is
drawn without subclassing anything.  Matplotlib does the drawing; GIFs go through Pillow (a
matplotlib dependency), MP4 through ffmpeg when it is installed.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["animate"]


def _polylines(draw, q) -> list[np.ndarray]:
    lines = [np.atleast_2d(np.asarray(p, dtype=float)) for p in draw(q)]
    if not lines or any(p.shape[1] not in (2, 3) for p in lines):
        raise ValueError("the drawing function must return a list of (k, 2) or (k, 3) point arrays, got shapes "
                         f"{[p.shape for p in lines]}")
    return lines


def animate(result, path, points=None, every=1, fps=25, plane=(0, 1), title=None, dpi=80, trace=True):
    """Write the motion of ``result`` (a :class:`pyint.results.Result`) as an animation.

    Parameters
    ----------
    result : Result
        The trajectory; its samples are the frames (every ``every``-th).
    path : str or Path
        Output file: ``.gif`` (Pillow) or ``.mp4`` (needs ffmpeg).
    points : callable, optional
        ``points(q) -> [array (k, 2 or 3), ...]``: the polylines to draw at configuration q
        (one per body, a single point for a marker).  Default: the model's ``drawing(q)``.
    every : int
        Draw every ``every``-th sample.
    fps : int
        Frames per second of the file.
    plane : tuple of two ints
        Which coordinates of spatial points are drawn (0, 1, 2 = x, y, z); planar points are drawn as they are.
    title : str, optional
        The figure's title (default: method and model).
    dpi : int
        Resolution of the frames.
    trace : bool
        Draw the path of the last point of the last polyline (a chain's tip) as it goes.

    Returns
    -------
    Path
        The file written.

    Raises
    ------
    ValueError
        The model cannot draw itself and no ``points`` was given, or the drawing is malformed,
        or the file type is not .gif/.mp4.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from pyint import GeneralizedAlpha, PendulumChain
    >>> from pyint.plotting import animate
    >>> model = PendulumChain(n_links=3)
    >>> q0, v0 = model.initial_state([np.pi / 2, np.pi / 2, np.pi / 2])
    >>> res = GeneralizedAlpha().integrate(model, q0, v0, t_end=0.5, h=1e-2)
    >>> path = animate(res, os.path.join(tempfile.mkdtemp(), "chain.gif"), every=5)
    >>> path.suffix, path.stat().st_size > 0
    ('.gif', True)
    """
    import matplotlib.pyplot as plt
    from matplotlib import animation

    path = Path(path)
    if path.suffix not in (".gif", ".mp4"):
        raise ValueError(f"animate writes .gif or .mp4 files, got {path.name!r}")
    draw = points if points is not None else getattr(result.model, "drawing", None)
    if draw is None:
        raise ValueError(f"model {result.model.name!r} has no drawing(q); pass points=lambda q: [array of "
                         "(x, y) points per body, ...] to animate it")
    every = max(int(every), 1)
    frames = list(range(0, len(result.t), every))
    if not frames:
        raise ValueError("the result has no samples to draw")
    i, j = plane
    shapes = [[p[:, [i, j]] if p.shape[1] == 3 else p for p in _polylines(draw, result.q[k])] for k in frames]
    allpts = np.vstack([p for lines in shapes for p in lines])
    lo, hi = allpts.min(axis=0), allpts.max(axis=0)
    pad = 0.08 * max(float(np.max(hi - lo)), 1e-9)

    fig, ax = plt.subplots(figsize=(5, 5), dpi=dpi)
    try:
        ax.set_xlim(lo[0] - pad, hi[0] + pad)
        ax.set_ylim(lo[1] - pad, hi[1] + pad)
        ax.set_aspect("equal")
        ax.set_xlabel("xyz"[i])
        ax.set_ylabel("xyz"[j])
        ax.set_title(title or f"{result.method} on {result.model.name}")
        artists = [ax.plot([], [], "o-" if len(p) > 1 else "k^", lw=2, ms=4)[0] for p in shapes[0]]
        tip, = ax.plot([], [], "-", lw=0.8, color="0.6")
        clock = ax.text(0.02, 0.96, "", transform=ax.transAxes, va="top")
        path_x, path_y = [], []

        def frame(n):
            for art, p in zip(artists, shapes[n]):
                art.set_data(p[:, 0], p[:, 1])
            if trace:
                end = shapes[n][-1][-1]
                path_x.append(end[0])
                path_y.append(end[1])
                tip.set_data(path_x, path_y)
            clock.set_text(f"t = {result.t[frames[n]]:.3g} s")
            return [*artists, tip, clock]

        anim = animation.FuncAnimation(fig, frame, frames=len(frames), blit=False)
        if path.suffix == ".gif":
            writer = animation.PillowWriter(fps=fps)
        else:
            if not animation.FFMpegWriter.isAvailable():
                raise ValueError("writing .mp4 needs ffmpeg on PATH; write a .gif instead")
            writer = animation.FFMpegWriter(fps=fps)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.part{path.suffix}")
        anim.save(tmp, writer=writer)
        tmp.replace(path)   # never a half-written animation under the user's name
    finally:
        plt.close(fig)
    return path
