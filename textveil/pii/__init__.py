"""Names, places, organisations and contact details out of a text before any mechanism.

>>> from textveil.pii import EntityOptions
>>> EntityOptions(operator="pseudonym").public()["operator"]
'pseudonym'
"""

from textveil.pii.stage import DEFAULT_TYPES, OPERATORS, EntityOptions, EntityStage, Screening, measured_recall
from textveil.pii.staged import StagedMechanism, with_entity_stage

__all__ = ["DEFAULT_TYPES", "OPERATORS", "EntityOptions", "EntityStage", "Screening", "StagedMechanism",
           "measured_recall", "with_entity_stage"]
