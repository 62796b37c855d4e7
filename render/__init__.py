"""The renderer: imported as ``ident3d.render`` (the wheel installs no top-level ``render``)."""

if __name__ == "render":  # a source checkout reached through the old top-level name
    import warnings

    warnings.warn("`import render` is deprecated and works only in a source checkout: import "
                  "ident3d.render instead", DeprecationWarning, stacklevel=2)
