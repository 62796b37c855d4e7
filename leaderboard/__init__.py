"""The leaderboard: imported as ``ident3d.leaderboard`` (the wheel installs no top-level ``leaderboard``)."""

if __name__ == "leaderboard":  # reached through the checkout's top-level folder: one file, one module
    raise ImportError(f"`import {__name__}` would load a second copy of every module of ident3d.{__name__} "
                      f"(the same files under another name). Fix: import ident3d.{__name__}")
