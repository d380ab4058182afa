"""Studies: a parameter sweep declared once (:mod:`~pyint.study.declaration`), run anywhere and
cached (:mod:`~pyint.study.runner`, :mod:`~pyint.study.cache`), its cases combined into one
dataset (:mod:`~pyint.study.combine`, conventions in :mod:`~pyint.study.datasets`) and drawn
(:mod:`~pyint.study.plotting`).  Finding studies by name is the command line's job (:mod:`pyint.cli`).

    from pyint.study import Study, run_study, study_main
"""
from .declaration import Study
from .runner import StudyRun, run_study, study_main

__all__ = ["Study", "StudyRun", "run_study", "study_main"]
