"""The engine: the only callers of the kernels. Per-slot sums and metrics from clean arrays (one sort
for classification, voxel counts for segmentation), resampling and surface distances. Knows no group
names and never imports the report."""
