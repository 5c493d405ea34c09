"""acpc-lbr compute core: hand evaluation, equities, ranges, LBR, estimators."""

__version__ = "0.1.0"
