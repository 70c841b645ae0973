"""Inputs: what users have (lists, pandas, Arrow, polars, tensors, mask files) turned into the arrays
and integer group codes the engine takes. Imports nothing of the registry, engine or report."""
