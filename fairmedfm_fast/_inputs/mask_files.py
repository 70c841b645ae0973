"""Masks as arrays: reading mask files (``.npy``, ``.npz``, images, NIfTI), one mask from a path or
an array, a NIfTI file's voxel size, and which values of a mask are foreground.

The foreground rule is an interval in the dtype the kernels see (see
:mod:`fairmedfm_fast.kernels.segmentation`), or None where only NumPy can say. Counting Dice and
spreading the work over threads is :mod:`fairmedfm_fast._masks`.
"""
from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .arrays import shown, to_numpy

#: File name endings read with Pillow.
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff")
#: Python and NumPy number types a label, threshold or empty score may be.
REAL_TYPES = (bool, int, float, np.bool_, np.integer, np.floating)


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------

def _optional(module: str, purpose: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        package = {"PIL": "pillow"}.get(module.split(".")[0], module.split(".")[0])
        raise ImportError(f"reading {purpose} needs the optional dependency {package!r}: pip install {package} "
                          '(or pip install ".[io]" in a clone of fairmedfm_fast)') from None


class MaskFileError(ValueError):
    """A mask file that exists but cannot be read as a mask (corrupt, truncated, empty, not numbers)."""

    __module__ = "fairmedfm_fast"  # its public place, which pickles and reprs name


def read_mask_file(path: str | os.PathLike, where: str = "mask") -> np.ndarray:
    """The array in a mask file, squeezed; ``.npy`` files are memory-mapped (read-only).

    ``.npz``: the first array. Images (Pillow): the first channel of colour images. NIfTI
    (nibabel): the data with the header's scaling applied. ``where`` names the sample in errors:
    FileNotFoundError for a missing file (as fairmedfm), :class:`MaskFileError` with the reader's
    reason for a file that cannot be read as a mask.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{where}: mask file not found: {path}")
    if path.is_dir():
        raise MaskFileError(f"{where}: {path} is a folder, not a mask file")
    try:
        array = _read_array(path, where)
    except (ImportError, MemoryError, MaskFileError):
        raise
    except Exception as error:  # noqa: BLE001 - whatever the reader says about this file
        reason = " ".join(str(error).split()) or "no details"
        raise MaskFileError(f"{where}: cannot read the mask file {path} ({type(error).__name__}: {reason}); "
                            "check that the file is complete and was written as a mask") from None
    if array.dtype.kind not in "biuf":
        raise MaskFileError(f"{where}: the mask file {path} holds {array.dtype} values, not numbers")
    return array


#: ``np.load`` parses a .npy header with ``ast.literal_eval``, which CPython 3.11 can break off
#: ("AST constructor recursion depth mismatch") when threads parse at the same time.
_NPY_HEADER = threading.Lock()


def _read_array(path: Path, where: str) -> np.ndarray:
    name = path.name.lower()
    if name.endswith(".npy"):
        with _NPY_HEADER:  # memory-mapped: the lock covers the header, not the reading
            try:
                array = np.load(path, mmap_mode="r")
            except ValueError:  # e.g. an object array, which cannot be memory-mapped
                array = np.load(path)
        return np.squeeze(np.asarray(array))
    if name.endswith(".npz"):
        with np.load(path) as data:
            if not data.files:
                raise MaskFileError(f"{where}: {path} holds no arrays; save the mask with numpy.savez")
            return np.squeeze(data[data.files[0]])
    if name.endswith((".nii", ".nii.gz")):
        nibabel = _optional("nibabel", "NIfTI masks")
        array = _gzipped_nifti(nibabel, path) if name.endswith(".gz") else None
        if array is None:
            array = np.asanyarray(nibabel.load(str(path)).dataobj)
        return np.squeeze(array)
    if name.endswith(IMAGE_SUFFIXES):
        image = _optional("PIL.Image", "image masks")
        with image.open(path) as opened:
            array = np.asarray(opened)
        return array if array.ndim == 2 else array[..., 0]
    raise MaskFileError(f"{where}: unsupported mask file {path}; use .npy, .npz, .png, .jpg, .jpeg, .bmp, .gif, "
                     ".tif, .tiff, .nii or .nii.gz")


def _gzipped_nifti(nibabel, path: Path) -> np.ndarray | None:
    """The data of a ``.nii.gz`` image decompressed in one call, or None to let nibabel read it.

    The whole file is inflated in C without the GIL, so threads read files in parallel (nibabel's
    streamed reading takes the GIL back every few kilobytes). The output buffer is allocated once
    at the size the gzip trailer announces: growing it step by step (as ``gzip.decompress`` does)
    costs ~3x the time in page faults, which two threads also contend for. The header is
    nibabel's; unscaled data (the usual case for masks) is a read-only view of the decompressed
    bytes, exactly the array nibabel would return, without its copy. Only the header is parsed
    (with nibabel's checks), not a whole image: building one holds the GIL ~5x as long.
    """
    import gzip
    import zlib

    try:
        raw = path.read_bytes()
        announced = int.from_bytes(raw[-4:], "little") if len(raw) >= 18 else 0
        data = zlib.decompress(raw, 31, max(announced, 1 << 16))
        if len(data) % (1 << 32) != announced:  # several gzip members: let gzip join them
            data = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error):
        return None
    image_class = None
    for byteorder in ("little", "big"):
        image_class = image_class or {348: nibabel.Nifti1Image, 540: nibabel.Nifti2Image}.get(
            int.from_bytes(data[:4], byteorder))
    if image_class is None:
        return None
    plain = plain_nifti1(data)
    if plain is not None:
        shape, dtype, offset, unscaled = plain[:4]
    else:
        try:  # what nibabel's ArrayProxy reads from the header (from_fileobj parses these bytes, checked)
            header = image_class.header_class(data[:image_class.header_class.template_dtype.itemsize])
            shape, dtype, offset = tuple(header.get_data_shape()), np.dtype(header.get_data_dtype()), header.get_data_offset()
            unscaled = header.get_slope_inter() in ((None, None), (1.0, 0.0))
        except Exception:  # noqa: BLE001 - nibabel's own reading below says what is wrong
            unscaled = False
    count = math.prod(shape) if unscaled else 0
    if not count or offset + count * dtype.itemsize > len(data):
        return np.asanyarray(image_class.from_bytes(data).dataobj)
    return np.frombuffer(data, dtype, count, offset).reshape(shape, order="F")  # nibabel's ArrayProxy order


#: NIfTI-1 datatype codes of plain numbers (nibabel.nifti1.data_type_codes) and their NumPy kinds.
_NIFTI1_KINDS = {2: "u1", 4: "i2", 8: "i4", 16: "f4", 64: "f8", 256: "i1", 512: "u2", 768: "u4", 1024: "i8",
                 1280: "u8"}


def plain_nifti1(data: bytes) -> tuple | None:
    """``(shape, dtype, offset, unscaled, zooms)`` of a single-file NIfTI-1 header (the first 348
    bytes of ``data``) in which nibabel's header checks find nothing to fix or report, read with
    :mod:`struct`; None for any other header, which nibabel then reads.

    The values are exactly those of nibabel's header getters (``get_data_shape``,
    ``get_data_dtype``, ``get_data_offset``, ``get_slope_inter`` is (None, None) or (1, 0),
    ``get_zooms``) in ~1/100 of the time, all of it holding the GIL.
    """
    import struct

    if len(data) < 348 or data[344:348] != b"n+1\0":
        return None
    order = "<" if struct.unpack_from("<i", data)[0] == 348 else ">"
    if struct.unpack_from(order + "i", data)[0] != 348:
        return None
    dim = struct.unpack_from(order + "8h", data, 40)
    datatype, bitpix = struct.unpack_from(order + "2h", data, 70)
    pixdim = struct.unpack_from(order + "8f", data, 76)
    vox_offset, slope, inter = struct.unpack_from(order + "3f", data, 108)
    kind = _NIFTI1_KINDS.get(datatype)
    ndim = dim[0]
    if (not 1 <= ndim <= 7 or min(dim[1:ndim + 1]) < 1 or kind is None or bitpix != 8 * int(kind[1])
            or not all(0 < z < math.inf for z in pixdim[1:4]) or pixdim[0] not in (-1.0, 1.0)
            or not (vox_offset >= 352 and vox_offset % 16 == 0)
            or not all(0 <= code <= 4 for code in struct.unpack_from(order + "2h", data, 252))):
        return None
    if slope == 0 or not math.isfinite(slope):
        unscaled = True
    elif math.isfinite(inter):
        unscaled = slope == 1 and inter == 0
    else:  # nibabel raises
        return None
    return dim[1:ndim + 1], np.dtype(order + kind), int(vox_offset), unscaled, pixdim[1:ndim + 1]


def is_path(value: Any) -> bool:
    return isinstance(value, (str, os.PathLike))


def load_mask(value: Any, where: str) -> np.ndarray:
    """One mask from a file path, an array, a tensor or a nested list, squeezed."""
    if is_path(value):
        return read_mask_file(value, where)
    return np.squeeze(to_numpy(value, where))


def nifti_spacing(path: Any) -> tuple[float, ...] | None:
    """Voxel size (header zooms) of the axes longer than 1 of a ``.nii``/``.nii.gz`` file; None for
    anything else. Only the header is read."""
    if not is_path(path) or not str(path).lower().endswith((".nii", ".nii.gz")):
        return None
    nibabel = _optional("nibabel", "NIfTI masks")
    header = None
    try:  # the leading bytes alone (nibabel.load holds the GIL ~10x as long): the header nibabel.load reads
        import zlib

        with open(path, "rb") as file:
            head = file.read(1 << 12)
        if str(path).lower().endswith(".gz"):
            head = zlib.decompressobj(31).decompress(head, 540)
        plain = plain_nifti1(head)
        if plain is not None:
            return tuple(z for size, z in zip(plain[0], plain[4]) if size != 1)
        for header_class in (nibabel.Nifti1Header, nibabel.Nifti2Header):  # nibabel.load's order for .nii
            if header_class.may_contain_header(head):
                header = header_class(head[:header_class.template_dtype.itemsize])
                break
    except Exception:  # noqa: BLE001 - nibabel.load below reads it or says what is wrong
        header = None
    if header is None:
        header = nibabel.load(str(path)).header
    return tuple(float(z) for size, z in zip(header.get_data_shape(), header.get_zooms()) if size != 1)


# ---------------------------------------------------------------------------------------------
# The foreground rule as intervals in the kernel's dtype
# ---------------------------------------------------------------------------------------------

def kernel_array(mask: np.ndarray) -> np.ndarray | None:
    """``mask`` in a dtype the kernels take (a view where possible), or None for the NumPy path."""
    if type(mask) is not np.ndarray:
        mask = np.asarray(mask)  # drops ndarray subclasses such as numpy.memmap (no copy)
    dtype = mask.dtype
    if dtype.kind not in "biuf":
        return None
    if not dtype.isnative:
        mask = mask.astype(dtype.newbyteorder("="))
    if dtype.kind == "b":
        return mask.view(np.uint8)
    if dtype.kind == "f":
        if dtype.itemsize == 2:
            return mask.astype(np.float32)
        if dtype.itemsize not in (4, 8):
            return None
    return mask


def _float_at_least(dtype: np.dtype, value: float):
    """The smallest value of float ``dtype`` that is >= ``value`` (NaN stays NaN)."""
    with np.errstate(over="ignore"):
        x = dtype.type(value)
    if float(x) < value:
        x = np.nextafter(x, dtype.type(np.inf))
    return x


def _float_at_most(dtype: np.dtype, value: float):
    """The largest value of float ``dtype`` that is <= ``value`` (NaN stays NaN)."""
    with np.errstate(over="ignore"):
        x = dtype.type(value)
    if float(x) > value:
        x = np.nextafter(x, dtype.type(-np.inf))
    return x


@dataclass
class Rule:
    """Foreground rule of one mask for the kernels.

    ``kind`` is ``"interval"`` (foreground when ``low <= v <= high``) or ``"probability"`` (a
    float prediction: ``v >= low`` if every value is within [0, 1], else ``v > 0``, ``high``
    being the dtype's smallest positive value).
    """

    kind: str
    low: Any
    high: Any


def _empty(dtype: np.dtype) -> Rule:
    """A rule no value satisfies."""
    return Rule("interval", dtype.type(1), dtype.type(0))


def _compared_as_float(array_dtype: np.dtype, value: Any) -> float | None:
    """``value`` as NumPy compares it with an array of ``array_dtype`` (NEP 50: a Python float
    next to float32 values is a float32), exactly in float64; None when that is not a float."""
    try:
        common = np.result_type(array_dtype, value)
    except (TypeError, ValueError, OverflowError):
        return None
    if common.kind != "f" or common.itemsize > 8:
        return None
    with np.errstate(over="ignore"):
        return float(common.type(value))


def label_rule(array_dtype: np.dtype, kernel_dtype: np.dtype, label: Any) -> Rule | None:
    """``mask == label`` as an interval, or None where only NumPy can say (e.g. a string label)."""
    if not isinstance(label, REAL_TYPES):
        return None
    if kernel_dtype.kind in "iu":
        info = np.iinfo(kernel_dtype)
        if isinstance(label, (bool, int, np.bool_, np.integer)):
            value = int(label)
        else:
            number = float(label)
            if not math.isfinite(number) or not number.is_integer():
                return _empty(kernel_dtype)
            if abs(number) >= 2.0 ** 53 and kernel_dtype.itemsize == 8:
                return None  # float64 rounding of large integers: leave it to NumPy
            value = int(number)
        if info.min <= value <= info.max:
            return Rule("interval", kernel_dtype.type(value), kernel_dtype.type(value))
        return _empty(kernel_dtype)
    number = _compared_as_float(array_dtype, label)
    if number is None:
        return None
    return Rule("interval", _float_at_least(kernel_dtype, number), _float_at_most(kernel_dtype, number))


def foreground_rule(array_dtype: np.dtype, kernel_dtype: np.dtype, label: Any, threshold: Any,
                    prediction: bool) -> Rule | None:
    """The foreground rule of a mask (see the module and SEMANTICS.md), None for the NumPy path."""
    if label is not None:
        return label_rule(array_dtype, kernel_dtype, label)
    if kernel_dtype.kind in "iu":
        if array_dtype.kind == "b":
            return Rule("interval", kernel_dtype.type(1), kernel_dtype.type(1))
        return Rule("interval", kernel_dtype.type(1), kernel_dtype.type(np.iinfo(kernel_dtype).max))
    smallest_positive = np.nextafter(kernel_dtype.type(0), kernel_dtype.type(1))
    if not prediction:
        return Rule("interval", smallest_positive, kernel_dtype.type(np.inf))
    if not isinstance(threshold, REAL_TYPES):
        raise ValueError(f"mask_threshold={shown(threshold)} must be a number: probability masks are foreground "
                         "where they are >= mask_threshold")
    number = _compared_as_float(array_dtype, threshold)
    if number is None:
        return None
    return Rule("probability", _float_at_least(kernel_dtype, number), smallest_positive)


def numpy_foreground(mask: np.ndarray, label: Any, threshold: Any, prediction: bool) -> np.ndarray:
    """The foreground rule written with NumPy, for dtypes and labels the kernels do not take."""
    mask = np.asarray(mask)
    if label is not None:
        return np.asarray(mask == label)
    if mask.dtype == bool:
        return mask
    if (prediction and mask.dtype.kind == "f" and mask.size and mask.min() >= 0 and mask.max() <= 1):
        return mask >= threshold
    return mask > 0
