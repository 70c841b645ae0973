"""Surface-distance kernels: surface voxels, exact Euclidean distances between two surfaces, and
the Hausdorff / average-surface-distance / normalised-surface-Dice reductions.

Masks arrive as 3-D C-contiguous arrays (2-D and 1-D masks with leading axes of length 1; ``ndim``
says how many trailing axes are real). A voxel of a mask is a *surface* voxel when it is
foreground and one of its face neighbours along a real axis is background or lies outside the
array: ``mask XOR binary_erosion(mask)`` with scipy's cross-shaped structure and
``border_value=0``, the definition of medpy (``connectivity=1``) and MONAI.

The distance from each surface voxel of one mask to the nearest surface voxel of the other is
exact, in the units of ``spacing``. The API layer crops both masks to the bounding box of their
union, which changes no distance: every surface voxel lies in the box, and the exact distance of
a point of the box to a set inside the box is found on the box alone. The transform is separable
(as Felzenszwalb and Huttenlocher's): along axis 0 the distance to the nearest surface voxel of the
same column, along axis 1 the lower envelope of parabolas, and along axis 2, only at the query
voxels, a search outwards that stops as soon as the axis-2 offset alone exceeds the best squared
distance found. Squared distances are summed in scipy's order, ``((d0 s0)^2 + (d1 s1)^2) +
(d2 s2)^2``, and the square root is taken last.
"""
import numpy as np

from ._jit import inline_kernel, kernel


@kernel
def unit_interval(mask):
    """True when every value of a float array lies in [0, 1] (NaN does not); False if empty."""
    flat = mask.ravel()
    if flat.shape[0] == 0:
        return False
    for i in range(flat.shape[0]):
        v = flat[i]
        if not (v >= 0 and v <= 1):
            return False
    return True


@kernel
def foreground_box(mask, low, high, box):
    """Bounding box and count of the voxels with ``low <= v <= high`` of a 3-D C-contiguous array.

    ``box`` (int64, 6) is written with the half-open ranges ``lo0, hi0, lo1, hi1, lo2, hi2``
    (all zero when nothing is foreground). Returns the number of foreground voxels.
    """
    n0, n1, n2 = mask.shape
    lo0, hi0, lo1, hi1, lo2, hi2 = n0, 0, n1, 0, n2, 0
    total = 0
    for i in range(n0):
        for j in range(n1):
            row = mask[i, j]
            hit = False  # a boolean OR vectorises; counting only rows with foreground saves most of the pass
            for k in range(n2):
                hit |= (row[k] >= low) & (row[k] <= high)
            if not hit:
                continue
            count = 0
            for k in range(n2):
                count += (row[k] >= low) & (row[k] <= high)
            total += count
            lo0 = min(lo0, i)
            hi0 = i + 1
            lo1 = min(lo1, j)
            hi1 = max(hi1, j + 1)
            k = 0
            while not ((row[k] >= low) & (row[k] <= high)):
                k += 1
            lo2 = min(lo2, k)
            k = n2 - 1
            while not ((row[k] >= low) & (row[k] <= high)):
                k -= 1
            hi2 = max(hi2, k + 1)
    if total == 0:
        lo0, lo1, lo2 = 0, 0, 0
    box[0], box[1], box[2], box[3], box[4], box[5] = lo0, hi0, lo1, hi1, lo2, hi2
    return total


@kernel
def crop_foreground(mask, low, high, box, out):
    """``out[i, j, k] = low <= mask[box origin + (i, j, k)] <= high`` as uint8 over the box."""
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            row = mask[box[0] + i, box[2] + j, box[4]:box[4] + out.shape[2]]
            line = out[i, j]
            for k in range(out.shape[2]):  # sliced row and explicit uint8: vectorised
                v = row[k]
                line[k] = np.uint8((v >= low) & (v <= high))


@kernel
def both_count(a, b):
    """Voxels that are 1 in both uint8 0/1 arrays of the same shape."""
    fa = a.ravel()
    fb = b.ravel()
    total = 0
    for i in range(fa.shape[0]):
        total += fa[i] & fb[i]
    return total


@kernel
def crop_pair(pred, p_low, p_high, true, t_low, t_high, counts):
    """The foreground of two 3-D C-contiguous masks of one shape over the bounding box of their
    union, as uint8 0/1 arrays (shape (0, 0, 0) when either mask is empty), in one call.

    ``counts`` (int64, 3) is written with the foreground voxels of ``pred``, of ``true`` and of both.
    """
    p_box = np.zeros(6, np.int64)
    t_box = np.zeros(6, np.int64)
    counts[0] = foreground_box(pred, p_low, p_high, p_box)
    counts[1] = foreground_box(true, t_low, t_high, t_box)
    counts[2] = 0
    if counts[0] == 0 or counts[1] == 0:
        return np.zeros((0, 0, 0), np.uint8), np.zeros((0, 0, 0), np.uint8)
    box = np.empty(6, np.int64)
    for axis in range(3):
        box[2 * axis] = min(p_box[2 * axis], t_box[2 * axis])
        box[2 * axis + 1] = max(p_box[2 * axis + 1], t_box[2 * axis + 1])
    shape = (box[1] - box[0], box[3] - box[2], box[5] - box[4])
    a = np.empty(shape, np.uint8)
    b = np.empty(shape, np.uint8)
    crop_foreground(pred, p_low, p_high, box, a)
    crop_foreground(true, t_low, t_high, box, b)
    counts[2] = both_count(a, b)
    return a, b


@inline_kernel
def _surface(mask, ndim):
    """Surface voxels (uint8) of a uint8 0/1 mask: foreground with a background or outside face
    neighbour along one of the last ``ndim`` axes."""
    n0, n1, n2 = mask.shape
    out = np.zeros(mask.shape, np.uint8)
    zeros = np.zeros(n2, np.uint8)
    for i in range(n0):
        for j in range(n1):
            centre = mask[i, j]
            # a neighbour along an axis that is not real is the voxel itself (never an edge)
            if ndim >= 2:
                up = mask[i, j - 1] if j > 0 else zeros
                down = mask[i, j + 1] if j < n1 - 1 else zeros
            else:
                up = centre
                down = centre
            if ndim >= 3:
                front = mask[i - 1, j] if i > 0 else zeros
                back = mask[i + 1, j] if i < n0 - 1 else zeros
            else:
                front = centre
                back = centre
            line = out[i, j]
            line[0] = centre[0]
            line[n2 - 1] = centre[n2 - 1]
            for k in range(1, n2 - 1):
                inner = centre[k - 1] & centre[k + 1] & up[k] & down[k] & front[k] & back[k]
                line[k] = centre[k] & (inner ^ 1)
    return out


@inline_kernel
def _column_pass(feature, s0, field):
    """``field = (s0 * distance along axis 0 to the nearest feature of the column)^2`` (inf: none)."""
    n0, n1, n2 = feature.shape
    carry = np.full((n1, n2), np.inf)
    for i in range(n0):
        for j in range(n1):
            marks = feature[i, j]
            line = field[i, j]
            run = carry[j]
            for k in range(n2):
                d = 0.0 if marks[k] else run[k] + 1.0
                run[k] = d
                line[k] = d
    carry[:] = np.inf
    for i in range(n0 - 1, -1, -1):
        for j in range(n1):
            line = field[i, j]
            run = carry[j]
            for k in range(n2):
                d = min(line[k], run[k] + 1.0)
                run[k] = d
                d = d * s0
                line[k] = d * d


@inline_kernel
def _envelope(f, s, v, z, out):
    """Lower envelope of the parabolas ``f[q] + ((x - q) s)^2`` over the finite ``f[q]``,
    evaluated at every ``x`` into ``out`` (all inf when no ``f[q]`` is finite)."""
    n = f.shape[0]
    s2 = s * s
    m = -1  # index of the last parabola of the envelope
    for q in range(n):
        fq = f[q]
        if fq == np.inf:
            continue
        x = -np.inf
        while m >= 0:
            p = v[m]
            # abscissa where the parabolas of p and q meet
            x = ((fq + s2 * q * q) - (f[p] + s2 * p * p)) / (2.0 * s2 * (q - p))
            if x > z[m]:
                break
            m -= 1
        m += 1
        v[m] = q
        z[m] = x
    if m < 0:
        for at in range(n):
            out[at] = np.inf
        return
    z[m + 1] = np.inf
    r = 0
    for at in range(n):
        while z[r + 1] < at:
            r += 1
        d = (at - v[r]) * s
        out[at] = f[v[r]] + d * d


@inline_kernel
def _directed(query, feature, spacing, field, plane_used, search_budget):
    """Distances from every query voxel (C order) to the nearest feature voxel."""
    n0, n1, n2 = query.shape
    s0, s1, s2 = spacing[0], spacing[1], spacing[2]
    _column_pass(feature, s0, field)
    n_query = 0
    for i in range(n0):
        count = 0
        for j in range(n1):
            for k in range(n2):
                count += query[i, j, k]
        plane_used[i] = count > 0
        n_query += count
    line = np.empty(n1)
    envelope = np.empty(n1)
    v = np.empty(n1, np.int64)
    z = np.empty(n1 + 1)
    out = np.empty(n_query)
    at = 0
    budget = search_budget * n1 * n2
    # distance and row of the latest query of each column, for an upper bound by the triangle inequality
    column_distance = np.empty(n2)
    column_row = np.empty(n2, np.int64)
    for i in range(n0):
        if not plane_used[i]:
            continue
        plane = field[i]
        work = 0
        lines_done = False
        column_distance[:] = np.inf
        column_row[:] = 0
        for j in range(n1):
            marks = query[i, j]
            previous = np.inf
            previous_k = 0
            for k in range(n2):
                if not marks[k]:
                    continue
                if lines_done:
                    out[at] = np.sqrt(_search_row(plane[j], k, s2, 0.0, np.inf)[0])
                else:
                    # a neighbour's distance plus the way to it bounds this one (inflated far beyond
                    # rounding, so that the exact minimum always lies strictly below the bound)
                    bound = min(previous + (k - previous_k) * s2, column_distance[k] + (j - column_row[k]) * s1)
                    bound = bound * bound * (1 + 1e-9)
                    best, steps = _search_plane(plane, j, k, s1, s2, bound)
                    out[at] = np.sqrt(best)
                    previous, previous_k = out[at], k
                    column_distance[k], column_row[k] = out[at], j
                    work += steps
                    if work > budget:
                        # far surfaces in this plane: the envelope along axis 1 costs less
                        _plane_envelopes(plane, s1, line, envelope, v, z)
                        lines_done = True
                at += 1
    return out


@inline_kernel
def _search_plane(plane, j, k, s1, s2, bound):
    """Smallest ``(plane[j2, k2] + ((j2 - j) s1)^2) + ((k2 - k) s2)^2`` over the plane, searched
    outwards from ``(j, k)`` (rows outer, contiguous runs inner) and stopped where the offsets
    alone reach the best so far (at first ``bound``, which must exceed the minimum); with the
    number of values read."""
    n1 = plane.shape[0]
    best = bound
    steps = 0
    u = 0
    while True:
        du = u * s1
        du = du * du
        if du >= best or (j - u < 0 and j + u >= n1):
            break
        if j - u >= 0:
            best, read = _search_row(plane[j - u], k, s2, du, best)
            steps += read
        if u > 0 and j + u < n1:
            best, read = _search_row(plane[j + u], k, s2, du, best)
            steps += read
        u += 1
    return best, steps


@inline_kernel
def _search_row(row, k, s2, du, best):
    """Smallest of ``best`` and ``(row[k2] + du) + ((k2 - k) s2)^2``, searched outwards from ``k``
    and stopped where the offsets alone reach it; with the number of values read."""
    n2 = row.shape[0]
    t = 0
    while True:
        dt = t * s2
        dt = dt * dt
        if du + dt >= best or (k - t < 0 and k + t >= n2):
            break
        if k - t >= 0:
            best = min(best, (row[k - t] + du) + dt)
        if t > 0 and k + t < n2:
            best = min(best, (row[k + t] + du) + dt)
        t += 1
    return best, t + 1


@inline_kernel
def _plane_envelopes(plane, s1, line, envelope, v, z):
    """Replace every line of ``plane`` along axis 1 by its lower envelope (squared distance in
    the plane of axes 0 and 1)."""
    n1, n2 = plane.shape
    for k in range(n2):
        finite = False
        for j in range(n1):
            line[j] = plane[j, k]
            finite |= line[j] != np.inf
        if not finite:
            continue
        _envelope(line, s1, v, z, envelope)
        for j in range(n1):
            plane[j, k] = envelope[j]


@kernel
def surface_distances(a, b, spacing, ndim, search_budget=8):
    """Directed surface distances between two masks.

    Parameters
    ----------
    a, b : uint8 arrays of shape (n0, n1, n2), C-contiguous, 1 where foreground; both non-empty
    spacing : float64 array of shape (3,), the voxel size along each axis
    ndim : int, 1 to 3; only the last ``ndim`` axes have neighbours
    search_budget : int
        Per plane of axis 0, values read by the outward search (times the plane's size) before
        the plane switches to the lower envelope along axis 1 (0: envelope from the first query).

    Returns
    -------
    d_ab, d_ba : float64 arrays
        For each surface voxel of ``a`` (C order), the distance to the nearest surface voxel of
        ``b``; and the reverse.
    """
    sa = _surface(a, ndim)
    sb = _surface(b, ndim)
    field = np.empty(a.shape)
    plane_used = np.zeros(a.shape[0], np.bool_)
    d_ab = _directed(sa, sb, spacing, field, plane_used, search_budget)
    d_ba = _directed(sb, sa, spacing, field, plane_used, search_budget)
    return d_ab, d_ba


@kernel
def surface_measures(a, b, spacing, ndim, q, tolerance, directed, out):
    """:func:`surface_summary` of :func:`surface_distances` (two non-empty masks) in one call, so
    that no distance array goes back to Python between them."""
    d_ab, d_ba = surface_distances(a, b, spacing, ndim)
    surface_summary(d_ab, d_ba, q, tolerance, directed, out)


@inline_kernel
def _quantile(values, q):
    """NumPy's default (linear) percentile of a non-empty array at quantile ``q`` in [0, 1],
    with NumPy's index and interpolation arithmetic."""
    n = values.shape[0]
    virtual = (n - 1) * q
    if virtual >= n - 1:
        return values.max()
    below = int(np.floor(virtual))
    gamma = virtual - below
    part = np.partition(values, below)
    a = part[below]
    b = part[below + 1:].min()
    diff = b - a
    if gamma >= 0.5:
        return b - diff * (1 - gamma)
    return a + diff * gamma


@inline_kernel
def _sum(values):
    """Neumaier-compensated sum."""
    total = 0.0
    compensation = 0.0
    for i in range(values.shape[0]):
        x = values[i]
        t = total + x
        if abs(total) >= abs(x):
            compensation += (total - t) + x
        else:
            compensation += (x - t) + total
        total = t
    return total + compensation


@kernel
def surface_summary(d_ab, d_ba, q, tolerance, directed, out):
    """HD at quantile ``q``, HD, ASSD and NSD at ``tolerance`` from the two directed distance sets
    (both non-empty), written to ``out`` (float64, 4).

    ``directed=False``: the quantile of both sets pooled (medpy ``hd95``); ``True``: the larger of
    the two sets' quantiles (MONAI ``compute_hausdorff_distance``). ASSD is the mean of both sets
    pooled; NSD the fraction of both sets within ``tolerance`` (``<=``).
    """
    if directed:
        out[0] = max(_quantile(d_ab, q), _quantile(d_ba, q))
    else:
        out[0] = _quantile(np.concatenate((d_ab, d_ba)), q)
    out[1] = max(d_ab.max(), d_ba.max())
    n = d_ab.shape[0] + d_ba.shape[0]
    out[2] = (_sum(d_ab) + _sum(d_ba)) / n
    within = 0
    for x in d_ab:
        within += x <= tolerance
    for x in d_ba:
        within += x <= tolerance
    out[3] = within / n
