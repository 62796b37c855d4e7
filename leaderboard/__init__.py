"""The leaderboard: imported as ``ident3d.leaderboard`` (the wheel installs no top-level ``leaderboard``)."""

if __name__ == "leaderboard":  # a source checkout reached through the old top-level name
    import warnings

    warnings.warn("`import leaderboard` is deprecated and works only in a source checkout: import "
                  "ident3d.leaderboard instead", DeprecationWarning, stacklevel=2)
