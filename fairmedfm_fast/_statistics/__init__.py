"""Statistics over the engine's numbers: analytic intervals, simultaneous gap intervals, pairwise
comparisons and what a report concludes about its gaps."""
