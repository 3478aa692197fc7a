"""Experiments that sweep a mechanism's parameter, attack each release and measure its utility.

The names below are imported on first use (PEP 562): a command that needs one module of the
package (``sanitize --calibrate``'s curve, :mod:`textveil.evaluation.calibration`; ``attack
--release-known-with``'s cached release, :mod:`textveil.evaluation.releasing`) imports it without
paying for the experiment's plotting (matplotlib alone takes seconds to import). A mechanism is
built from its name and options by :mod:`textveil.building`, not here.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "EvaluationCorpora": "textveil.evaluation.experiment_plan",
    "ExperimentPlan": "textveil.evaluation.experiment_plan",
    "run_experiment": "textveil.evaluation.experiment",
    "validate": "textveil.evaluation.experiment_plan",
    "load_evaluation_corpora": "textveil.evaluation.corpora",
    "write_report": "textveil.evaluation.report",
    "ComparisonPlan": "textveil.evaluation.comparison",
    "ComparedMechanism": "textveil.evaluation.comparison",
    "run_comparison": "textveil.evaluation.comparison",
    "write_comparison_report": "textveil.evaluation.comparison_report",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'textveil.evaluation' has no attribute '{name}'")
    return getattr(import_module(_EXPORTS[name]), name)
