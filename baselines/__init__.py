"""The baselines: imported as ``ident3d.baselines`` (the wheel installs no top-level ``baselines``)."""

if __name__ == "baselines":  # a source checkout reached through the old top-level name
    import warnings

    warnings.warn("`import baselines` is deprecated and works only in a source checkout: import "
                  "ident3d.baselines instead", DeprecationWarning, stacklevel=2)
