"""fairmedfm_fast: the FairMedFM fairness metrics, exact and fast."""
