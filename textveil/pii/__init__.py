"""Names, places, organisations and contact details out of a text before any mechanism.

>>> from textveil.pii import EntityOptions
>>> EntityOptions(operator="pseudonym").public()["operator"]
'pseudonym'
"""

from textveil.pii.stage import DEFAULT_TYPES, OPERATORS, EntityOptions, EntityStage, Screening, measured_recall
from textveil.pii.screened import Screened, screened

__all__ = ["DEFAULT_TYPES", "OPERATORS", "EntityOptions", "EntityStage", "Screened", "Screening", "measured_recall",
           "screened"]
