"""The backends: in memory, resampled, accumulated batch by batch, Dask, voxels, segmentation and
many tasks. Each prepares its inputs, calls the engine (never a kernel) and hands its per-group
results to the report's assembly."""
