"""The metric registry: each metric described once, as an object that the engine, the summary, the
resampling, the plots, the page and the command line read."""
