"""Experiments that sweep a mechanism's parameter, attack each release and measure its utility."""

from textveil.evaluation.corpora import load_evaluation_corpora
from textveil.evaluation.experiment import EvaluationCorpora, ExperimentPlan, run_experiment, validate
from textveil.evaluation.report import write_report

__all__ = ["EvaluationCorpora", "ExperimentPlan", "load_evaluation_corpora", "run_experiment", "validate", "write_report"]
