# Installed by nighthawk-jupyter under {sys.prefix}/etc/ipython/startup/ so that every IPython shell and
# kernel of this environment lists %%natural and %nighthawk. Nothing is imported here: IPython loads the
# extension the first time one of the magics is used. Set NIGHTHAWK_NO_AUTOLOAD=1 to opt out.


def _nighthawk_register_lazy_magics() -> None:
    import os

    if os.environ.get("NIGHTHAWK_NO_AUTOLOAD"):
        return
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None or not hasattr(shell.magics_manager, "register_lazy"):
        return
    for name, kind in (("natural", "cell"), ("nighthawk", "line")):
        shell.magics_manager.register_lazy(name, "nighthawk", kind)


_nighthawk_register_lazy_magics()
del _nighthawk_register_lazy_magics
