"""The struct reading of plain NIfTI-1 headers (``_mask_files.plain_nifti1``) against nibabel's header
class: whenever it answers, its shape, dtype, offset, scaling and zooms are nibabel's, and nibabel's
checks would have fixed or reported nothing; headers it declines go to nibabel."""
import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairmedfm_fast._inputs import mask_files as _mask_files

nibabel = pytest.importorskip("nibabel")


def _saved(order: str = "<", dtype=np.uint8, volume=None) -> bytes:
    header = nibabel.Nifti1Header(endianness=order)
    volume = np.zeros((5, 4, 3), dtype) if volume is None else volume
    image = nibabel.Nifti1Image(volume, np.diag([0.8, 1.5, 2.5, 1.0]), header=header)
    return image.to_bytes()


def _nibabel_values(block: bytes):
    """nibabel's values, or None where nibabel's checks change, report or refuse the header."""
    block = block[:348]
    try:
        with np.errstate(all="ignore"):
            checked = nibabel.Nifti1Header(block)
            unchecked = nibabel.Nifti1Header(block, check=False)
            problems = [check for check in nibabel.Nifti1Header._get_checks()
                        if check(unchecked.copy(), fix=False)[1].problem_level]
            slope_inter = checked.get_slope_inter()
            shape = checked.get_data_shape()
    except Exception:  # noqa: BLE001 - nibabel refuses it
        return None
    if problems or checked.binaryblock != unchecked.binaryblock:
        return None
    return (shape, checked.get_data_dtype(), checked.get_data_offset(), slope_inter,
            tuple(float(z) for z in checked.get_zooms()))


def _check(block: bytes) -> None:
    plain = _mask_files.plain_nifti1(block)
    if plain is None:
        return
    expected = _nibabel_values(block)
    assert expected is not None, "plain_nifti1 read a header that nibabel's checks would change or refuse"
    shape, dtype, offset, slope_inter, zooms = expected
    assert plain[0] == shape
    assert plain[1] == dtype and plain[1].str == dtype.str
    assert plain[2] == offset
    assert plain[3] == (slope_inter in ((None, None), (1.0, 0.0)))
    assert plain[4] == zooms


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64, np.int8, np.uint16, np.int64])
def test_headers_nibabel_writes_are_plain_and_read_alike(order, dtype):
    block = _saved(order, dtype)
    assert _mask_files.plain_nifti1(block) is not None
    _check(block)


# (offset, struct format) of the fields plain_nifti1 reads; the other bytes are left as written
FIELDS = {"sizeof_hdr": (0, "i"), "dim0": (40, "h"), "dim1": (42, "h"), "dim2": (44, "h"), "dim3": (46, "h"),
          "datatype": (70, "h"), "bitpix": (72, "h"), "qfac": (76, "f"), "pixdim1": (80, "f"), "pixdim2": (84, "f"),
          "pixdim3": (88, "f"), "pixdim4": (92, "f"), "vox_offset": (108, "f"), "scl_slope": (112, "f"),
          "scl_inter": (116, "f"), "qform_code": (252, "h"), "sform_code": (254, "h")}
VALUES = {"i": st.sampled_from([348, 540, 0, -1]),
          "h": st.sampled_from([-1, 0, 1, 2, 3, 4, 5, 7, 8, 16, 64, 128, 256, 512, 768, 1024, 1280, 1536, 2304]),
          "f": st.sampled_from([0.0, 1.0, -1.0, 0.5, 2.5, -0.8, 352.0, 360.0, 368.0, 1e30, math.nan, math.inf,
                                -math.inf])}


def test_field_offsets_are_nibabels():
    names = {"sizeof_hdr": 0, "dim": 40, "datatype": 70, "bitpix": 72, "pixdim": 76, "vox_offset": 108,
             "scl_slope": 112, "scl_inter": 116, "qform_code": 252, "sform_code": 254, "magic": 344}
    fields = nibabel.nifti1.header_dtype.fields
    assert {name: fields[name][1] for name in names} == names
    assert nibabel.nifti1.header_dtype.itemsize == 348
    for code, kind in _mask_files._NIFTI1_KINDS.items():
        assert nibabel.nifti1.data_type_codes.dtype[code] == np.dtype(kind)
    assert set(range(5)) <= set(nibabel.nifti1.xform_codes.value_set())


@settings(max_examples=500, deadline=None)
@given(order=st.sampled_from("<>"), dtype=st.sampled_from([np.uint8, np.int16, np.float32]),
       magic=st.sampled_from([b"n+1\0", b"ni1\0", b"n+2\0"]),
       changes=st.dictionaries(st.sampled_from(sorted(FIELDS)), st.data(), max_size=2))
def test_mutated_headers_are_read_as_nibabel_reads_them_or_declined(order, dtype, magic, changes):
    block = bytearray(_saved(order, dtype)[:348])
    block[344:348] = magic
    for name, data in changes.items():
        offset, kind = FIELDS[name]
        struct.pack_into(order + kind, block, offset, data.draw(VALUES[kind]))
    _check(bytes(block))


def test_declined_headers_still_read_through_nibabel(tmp_path):
    import gzip

    volume = np.arange(60, dtype=np.int16).reshape(5, 4, 3)
    raw = bytearray(_saved("<", volume=volume))
    raw[80:84] = struct.pack("<f", -0.8)  # nibabel fixes a negative pixdim to its absolute value
    path = tmp_path / "negative.nii.gz"
    path.write_bytes(gzip.compress(bytes(raw)))
    assert _mask_files.plain_nifti1(bytes(raw)) is None
    assert _mask_files.nifti_spacing(path) == (pytest.approx(0.8), 1.5, 2.5)
    np.testing.assert_array_equal(_mask_files.read_mask_file(path), np.asanyarray(nibabel.load(str(path)).dataobj))


def test_surface_spacing_comes_from_the_header_already_read(tmp_path, monkeypatch):
    from fairmedfm_fast._engine import surface as _surface

    volume = np.zeros((6, 5, 1, 4), np.uint8)
    volume[1:4, 1:3, 0, 1:3] = 1
    image = nibabel.Nifti1Image(volume, np.diag([0.7, 1.25, 3.0, 1.0]))
    path = tmp_path / "true.nii.gz"
    nibabel.save(image, str(path))
    expected = _mask_files.nifti_spacing(path)
    array = _mask_files.read_mask_file(path)
    calls = []
    monkeypatch.setattr(_mask_files, "nifti_spacing", lambda item: calls.append(item))
    assert _surface._file_spacing(array, str(path)) == expected and not calls  # no second read of the file
    assert _surface._file_spacing(np.array(array), str(path)) is None and calls  # a copy: the file is read
    scaled = nibabel.Nifti1Image(volume.astype(np.float32), np.eye(4))
    scaled.header.set_slope_inter(2.0, 0.0)
    nibabel.save(scaled, str(tmp_path / "scaled.nii.gz"))
    calls.clear()
    _surface._file_spacing(_mask_files.read_mask_file(tmp_path / "scaled.nii.gz"), tmp_path / "scaled.nii.gz")
    assert calls  # scaled data is a new array: the header is read from the file
