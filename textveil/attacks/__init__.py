"""Adversaries that try to undo a release: they never import a mechanism."""

from textveil.attacks.base import Attack, AttackResult, evaluate_attack, topk_accuracy

__all__ = ["Attack", "AttackResult", "evaluate_attack", "topk_accuracy"]
