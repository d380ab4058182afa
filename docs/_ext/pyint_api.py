"""The API reference is generated from each public package's ``__all__``.

`write_api_pages` writes ``docs/api/<package>.rst``: one autosummary table (with a
generated page per name) of exactly the names in ``package.__all__``.  Nothing is
listed by hand, so a name added to ``__all__`` gets its page at the next build and a
name removed loses it; ``tests/test_docs.py`` checks that the generated pages are
``__all__``, name for name.  ``api/index.rst`` lists every object with its one-line
summary.

The user pages show what a user calls: an integrator's page (template
``autosummary/method_class.rst``) its constructor parameters (the class docstring) and the
inherited ``integrate`` / ``integrate_batch``.  The hooks a new method or model kind implements
(:data:`DEVELOPER_MEMBERS`) are left off them (:func:`skip_developer_member`) and documented
once, on ``api/developer.rst``.  A private or unexported base class (``_AlphaFamily``) is shown
as its first public ancestor (:func:`public_bases`).
"""
import importlib
import inspect
import os

# the public packages, in the order the reference shows them
PACKAGES = ("pyint", "pyint.models", "pyint.reference", "pyint.study", "pyint.plotting")


#: The hooks of the kernel contract and of the model kinds, by the class that declares them: off
#: the user API pages, on the developer page (the checklist of pyint/integrator.py's docstring).
DEVELOPER_MEMBERS = {
    "pyint.Integrator": ("KERNEL", "STATS", "STATS_REALS", "NRES", "START_CHECKS_RANK", "kernel_options",
                         "kernel_start", "kernel_aux", "kernel_model", "decode_stats", "check_model",
                         "ADAPTIVE_REFUSAL", "ADAPTIVE_PER_UNIT_STEP", "ACCELERATION_IS_QDDOT", "OUTPUT_QUINTIC",
                         "DENSE_MODE", "adaptive_refusal", "adaptive_options", "adaptive_aux"),
    "pyint.models.Model": ("fortran_name", "callback_bundle", "fortran_params", "fortran_callback"),
    "pyint.models.SymbolicModel": ("fortran_source", "compiled_ipar"),
}
#: Every developer hook's name (a subclass's override of one is a developer hook too).
DEVELOPER_NAMES = frozenset(n for names in DEVELOPER_MEMBERS.values() for n in names)
#: The members an integrator's page shows besides its own: the ones every method inherits.
METHOD_MEMBERS = ("integrate", "integrate_batch", "accepts", "params")


def is_method_class(obj):
    """An integrator (a subclass of :class:`pyint.Integrator`, not the base itself)."""
    from pyint import Integrator
    return isinstance(obj, type) and issubclass(obj, Integrator) and obj is not Integrator


def skip_developer_member(app, what, name, obj, skip, options):
    """autodoc-skip-member: a developer hook is not on the user pages (None: autodoc decides)."""
    return True if name in DEVELOPER_NAMES else None


def _exported():
    """Every object some public package exports (the ones with an API page)."""
    out = set()
    for package in available_packages():
        mod = importlib.import_module(package)
        out |= {id(getattr(mod, n)) for n in mod.__all__}
    return out


def public_bases(app, name, obj, options, bases):
    """autodoc-process-bases: a private or unexported base (``_AlphaFamily``, ``LieIntegrator``)
    is replaced by its first exported ancestor, so a page never names a class without a page."""
    exported = _exported()
    out = []
    for base in bases:
        while (isinstance(base, type) and base is not object and id(base) not in exported
               and base.__module__.startswith("pyint")):
            base = base.__bases__[0]
        if base not in out:
            out.append(base)
    bases[:] = out


def data_comment(obj):
    """The ``#:`` comment of the module-level assignment that binds ``obj`` in a pyint module (a
    registry dict re-exported by a package has no docstring of its own), as lines, or None."""
    import sys
    from sphinx.pycode import ModuleAnalyzer
    for name, mod in sorted(sys.modules.items()):
        if not name.startswith("pyint") or mod is None:
            continue
        for attr, value in list(vars(mod).items()):
            if value is obj:
                try:
                    docs = ModuleAnalyzer.for_module(name).find_attr_docs()
                except Exception:  # noqa: BLE001 - an extension module has no source to analyze
                    continue
                if ("", attr) in docs:
                    return list(docs[("", attr)])
    return None


def document_data(app, what, name, obj, options, lines):
    """autodoc-process-docstring: a public dict (METHODS, BUILTIN_MODELS, ...) gets its defining
    module's ``#:`` comment instead of the docstring of ``dict``."""
    text = "\n".join(lines).strip()
    if what == "data" and not isinstance(obj, (str, int, float)) and \
            (not text or text == (inspect.getdoc(type(obj)) or "").strip()):
        found = data_comment(obj)
        if found:
            lines[:] = found


def setup(app):
    app.connect("autodoc-process-docstring", document_data, priority=400)
    app.connect("autodoc-skip-member", skip_developer_member)
    app.connect("autodoc-process-bases", public_bases)
    return {"parallel_read_safe": True}


def public_names(package):
    """Return ``package.__all__`` as a list (a package without ``__all__`` is an error)."""
    mod = importlib.import_module(package)
    names = getattr(mod, "__all__", None)
    if names is None:
        raise RuntimeError(f"{package} has no __all__: the API reference is generated from it")
    names = list(names)
    missing = [n for n in names if not hasattr(mod, n)]
    if missing:
        raise RuntimeError(f"{package}.__all__ names what {package} does not define: {missing}")
    return names


def available_packages():
    """The packages of `PACKAGES` that this installation has and that define ``__all__``."""
    out = []
    for package in PACKAGES:
        try:
            mod = importlib.import_module(package)
        except ModuleNotFoundError:
            continue
        if hasattr(mod, "__all__"):
            out.append(package)
    return out


def documented_in(package, name, packages):
    """The subpackage of ``package`` among ``packages`` whose ``__all__`` exports the same object
    as ``package.name`` (its page documents it: pyint re-exports the classes of pyint.models), or None."""
    obj = getattr(importlib.import_module(package), name)
    for other in packages:
        if other.startswith(package + "."):
            mod = importlib.import_module(other)
            if name in getattr(mod, "__all__", ()) and getattr(mod, name) is obj:
                return other
    return None


def page_text(package, packages=None):
    """The reST source of one package's API page: a generated page per name of ``__all__``
    (the integrators with the template ``method_class.rst``), except the names re-exported from
    another package of ``packages`` (a link to that page)."""
    packages = available_packages() if packages is None else packages
    mod = importlib.import_module(package)
    names = sorted(public_names(package), key=str.lower)
    elsewhere = {n: documented_in(package, n, packages) for n in names}
    own = [n for n in names if elsewhere[n] is None]
    title = f"``{package}``"
    lines = [title, "=" * len(title), "", f".. automodule:: {package}", "   :no-members:", "",
             f".. currentmodule:: {package}", ""]
    # one section per kind of object, so that every package page has the in-page table of
    # contents (the site test checks it on every page)
    for heading, intro, template, kind_names in _by_kind(mod, own):
        lines += [heading, "-" * len(heading), ""] + ([intro, ""] if intro else [])
        lines += [".. autosummary::", "   :toctree: generated"]
        lines += [f"   :template: {template}"] if template else []
        lines += ["   :nosignatures:", ""] + [f"   {n}" for n in kind_names] + [""]
    again = [n for n in names if elsewhere[n] is not None]
    if again:
        lines += ["", "Re-exported", "-----------", "",
                  f"Also importable from ``{package}`` (documented with their package):", ""]
        lines += [f"- :py:obj:`{package}.{n} <{elsewhere[n]}.{n}>`" for n in again]
    return "\n".join(lines) + "\n"


#: The sections of a package page, in order: (heading, introduction, autosummary template, test).
KINDS = (
    ("Integrators", "Each page lists the method's options (its constructor parameters) and "
     ":meth:`~pyint.Integrator.integrate`.", "autosummary/method_class.rst", is_method_class),
    ("Exceptions", "", None, lambda obj: isinstance(obj, type) and issubclass(obj, BaseException)),
    ("Classes", "", None, lambda obj: isinstance(obj, type)),
    ("Functions", "", None, callable),
    ("Data", "", None, lambda obj: True),
)


def _by_kind(mod, names):
    """``names`` of module ``mod`` grouped by :data:`KINDS` (each name in the first kind it fits),
    as (heading, introduction, template, names) for the kinds that have names."""
    left = list(names)
    out = []
    for heading, intro, template, test in KINDS:
        mine = [n for n in left if test(getattr(mod, n))]
        left = [n for n in left if n not in mine]
        if mine:
            out.append((heading, intro, template, mine))
    return out


def index_text(packages):
    """``api/index.rst``: per package, the table of its objects with their one-line summaries
    (autosummary without pages: the package pages generate them), then the developer page."""
    lines = ["API reference", "=============", "",
             "Every public name of pyint, one page each, generated from each package's ``__all__``.",
             "The hooks for adding a method or a kind of model are on the :doc:`developer` page.", ""]
    for package in packages:
        mod = importlib.import_module(package)
        names = sorted(public_names(package), key=str.lower)
        own = [n for n in names if documented_in(package, n, packages) is None]
        title = f":doc:`{package}`"
        lines += [title, "-" * len(title), "", (inspect.getdoc(mod) or "").split("\n\n")[0].replace("\n", " "), "",
                  f".. currentmodule:: {package}", "", ".. autosummary::", "   :nosignatures:", ""]
        lines += [f"   {n}" for n in own] + [""]
    lines += [".. toctree::", "   :hidden:", "   :maxdepth: 1", ""] + [f"   {p}" for p in packages] + ["   developer"]
    return "\n".join(lines) + "\n"


def developer_text():
    """``api/developer.rst``: the hooks of :data:`DEVELOPER_MEMBERS`, each documented once here."""
    lines = ["Developer API", "=============", "",
             "The hooks a new integrator or a new kind of model implements; the user pages leave them out.",
             "The checklist for adding a method is the docstring of ``pyint/integrator.py`` (the worked",
             "example: ``fortran/explicit_euler.f90`` with ``tests/test_add_method.py``).", "",
             ".. autofunction:: pyint.integrator.register", ""]
    for cls, names in DEVELOPER_MEMBERS.items():
        module, _, clsname = cls.rpartition(".")
        obj = getattr(importlib.import_module(module), clsname)
        title = f"``{cls}``"
        lines += [title, "-" * len(title), "", f".. currentmodule:: {module}", ""]
        for n in names:
            kind = "automethod" if inspect.isfunction(inspect.getattr_static(obj, n)) \
                or isinstance(inspect.getattr_static(obj, n), (classmethod, staticmethod)) else "autoattribute"
            lines += [f".. {kind}:: {clsname}.{n}", ""]
    return "\n".join(lines) + "\n"


def write_api_pages(srcdir):
    """Write ``api/<package>.rst`` for every available package; return the package names.

    Files are rewritten only when their text changes (Sphinx then rebuilds only those).
    """
    api = os.path.join(srcdir, "api")
    os.makedirs(api, exist_ok=True)
    packages = available_packages()
    for old in os.listdir(api):        # the page of a package no longer listed goes
        if old.endswith(".rst") and old not in ("index.rst", "developer.rst") and old[:-4] not in packages:
            os.remove(os.path.join(api, old))
    for package in packages:
        path = os.path.join(api, f"{package}.rst")
        text = page_text(package, packages)
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if old != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    for name, text in (("index", index_text(packages)), ("developer", developer_text())):
        path = os.path.join(api, f"{name}.rst")
        if not os.path.exists(path) or open(path, encoding="utf-8").read() != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    return packages
