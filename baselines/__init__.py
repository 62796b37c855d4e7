"""The baselines: imported as ``ident3d.baselines`` (the wheel installs no top-level ``baselines``)."""

if __name__ == "baselines":  # reached through the checkout's top-level folder: one file, one module
    raise ImportError(f"`import {__name__}` would load a second copy of every module of ident3d.{__name__} "
                      f"(the same files under another name). Fix: import ident3d.{__name__}")
