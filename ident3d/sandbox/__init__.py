"""Submitted models run here: read as data, rebuilt from checked bytes, run in a locked-down process.

Layers (docs/submissions.md, "What the sandbox contains"): ``pt2_reader`` (the strict reader, pure
Python: members, names, operators from ``operators``, shape expressions from ``shapes``, tensor
bounds), ``host`` (the evaluator's side: start, feed, time-limit and probe the child), ``spawn`` and
``forkserver`` (one server per evaluator imports torch once and forks a fresh child per model), ``child`` and
``loading`` (the child: lock down with ``lockdown``, rebuild the model, encode batches), ``wire``
(the messages between them), ``limits`` (what a model may use).
"""

from ident3d.sandbox.limits import Limits, SandboxLimits

__all__ = ["Limits", "SandboxLimits"]
