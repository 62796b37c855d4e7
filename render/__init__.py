"""The renderer: imported as ``ident3d.render`` (the wheel installs no top-level ``render``)."""

if __name__ == "render":  # reached through the checkout's top-level folder: one file, one module
    raise ImportError(f"`import {__name__}` would load a second copy of every module of ident3d.{__name__} "
                      f"(the same files under another name). Fix: import ident3d.{__name__}")
