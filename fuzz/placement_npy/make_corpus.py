#!/usr/bin/env python3
"""Writes the hand-made seeds of fuzz/placement_npy/corpus (no NumPy needed).

valid_* must parse as loads, reject_* must be refused (tests/placement/io_npy_test.cpp)."""
import os
import struct

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def npy(descr, shape, data, version=1, fortran=False):
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, "True" if fortran else "False", shape)
    prefix = 10 if version == 1 else 12
    pad = (64 - (prefix + len(header) + 1) % 64) % 64
    header = (header + " " * pad + "\n").encode()
    size = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + size + header + data


SEEDS = {
    "valid_f8_2x4": npy("<f8", "(2, 4)", struct.pack("<8d", 1, 2, 3, 4, 5, 6, 7, 8)),
    "valid_f4_1d": npy("<f4", "(3,)", struct.pack("<3f", 0.5, 1.5, 2.5)),
    "valid_i4_v2": npy("<i4", "(2, 2)", struct.pack("<4i", 1, 0, 3, 9), version=2),
    "valid_u2_v3": npy("<u2", "(1, 3)", struct.pack("<3H", 1, 2, 3), version=3),
    "valid_be_i8": npy(">i8", "(1, 2)", struct.pack(">2q", 10, 20)),
    "valid_b1": npy("|b1", "(2,)", bytes([1, 0])),
    "valid_u1": npy("|u1", "(2, 1)", bytes([7, 255])),
    "reject_fortran": npy("<f8", "(1, 2)", struct.pack("<2d", 1, 2), fortran=True),
    "reject_negative": npy("<i4", "(2,)", struct.pack("<2i", 5, -5)),
    "reject_truncated": npy("<f8", "(2, 2)", struct.pack("<3d", 1, 2, 3)),
    "reject_complex": npy("<c16", "(1,)", bytes(16)),
    "reject_3d": npy("<f8", "(1, 1, 1)", struct.pack("<d", 1)),
    "reject_huge_shape": npy("<f8", "(4294967296, 4294967296)", b""),
    "reject_bad_magic": b"\x93NUMPZ\x01\x00\x00\x00",
    "reject_nan": npy("<f8", "(1,)", struct.pack("<d", float("nan"))),
}

if __name__ == "__main__":
    os.makedirs(HERE, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(data)
