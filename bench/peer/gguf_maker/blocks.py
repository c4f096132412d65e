"""Random quantized blocks with a chosen weight spread, for every weight type the maker writes.

No quantizer runs: each block is random bytes whose scale fields are then set so that the
block's weights have mean about 0 and standard deviation sigma. The layouts are ggml's
(ggml/src/ggml-common.h).
"""
import math

import numpy as np

import gguf
from gguf import GGMLQuantizationType as QT

F = gguf.LlamaFileType

TYPES = {  # the weight types, by ggml's name: (ggml type, general.file_type)
    "q8_0": (QT.Q8_0, F.MOSTLY_Q8_0),
    "q4_0": (QT.Q4_0, F.MOSTLY_Q4_0),
    "q4_1": (QT.Q4_1, F.MOSTLY_Q4_1),
    "q5_0": (QT.Q5_0, F.MOSTLY_Q5_0),
    "q5_1": (QT.Q5_1, F.MOSTLY_Q5_1),
    "q2_K": (QT.Q2_K, F.MOSTLY_Q2_K),
    "q3_K": (QT.Q3_K, F.MOSTLY_Q3_K_M),
    "q4_K": (QT.Q4_K, F.MOSTLY_Q4_K_M),
    "q5_K": (QT.Q5_K, F.MOSTLY_Q5_K_M),
    "q6_K": (QT.Q6_K, F.MOSTLY_Q6_K),
    "iq4_nl": (QT.IQ4_NL, F.MOSTLY_IQ4_NL),
    "iq4_xs": (QT.IQ4_XS, F.MOSTLY_IQ4_XS),
    "mxfp4": (QT.MXFP4, F.MOSTLY_MXFP4_MOE),
}


def mean_square_of_range(lo, hi):
    """E[x^2] for x uniform over the integers lo..hi."""
    values = np.arange(lo, hi + 1, dtype=np.float64)
    return float(np.mean(values * values))


def f16_bytes(values):
    """float16 bit patterns as two uint8 columns (little-endian), one row per value."""
    return np.asarray(values, dtype="<f2").reshape(-1, 1).view(np.uint8)


def f16_round(x):
    return float(np.float16(x))


def uniform_ints(rng, shape, lo, hi):
    return rng.integers(lo, hi + 1, size=shape, dtype=np.int16)


def random_signs(rng, n):
    return rng.integers(0, 2, size=n).astype(np.float64) * 2 - 1


# Each function takes the random blocks of a matrix as an (n_blocks, block_bytes) uint8 array and
# sets the scale fields in place for a weight standard deviation of `sigma`. A block's weights are
# d * s * u (a block scale d, a sub-block scale s, a quant value u), s and u independent, so
# E[w^2] = d^2 E[s^2] E[u^2] and d follows from sigma. Where u's mean is not 0 (q4_0, q5_0,
# iq4_nl, iq4_xs), d takes a random sign per block, so that the matrix's mean is 0.

def fill_q8_0(b, sigma, rng):
    # d (f16) | qs: 32 int8. w = d * q, q uniform over -128..127.
    b[:, 0:2] = f16_bytes(np.full(len(b), sigma / math.sqrt(mean_square_of_range(-128, 127))))


def fill_offset_codes(bits):
    """q4_0 (bits 4), q5_0 (5): d (f16) | [qh: the 5th bits] | qs. w = d * (q - 2^(bits-1)), q in
    0..2^bits - 1: d = +-sigma / sqrt(E[(q - 2^(bits-1))^2])."""
    half = 1 << (bits - 1)

    def fill(b, sigma, rng):
        d = sigma / math.sqrt(mean_square_of_range(-half, half - 1))
        b[:, 0:2] = f16_bytes(d * random_signs(rng, len(b)))
    return fill


def fill_min_codes(bits):
    """q4_1 (bits 4), q5_1 (5): d, m (f16) | [qh] | qs. w = d * q + m, q in 0..2^bits - 1; with
    m = -(2^bits - 1)/2 d, w = d * (q - (2^bits - 1)/2): d = sigma / sqrt((2^(2 bits) - 1) / 12)."""
    levels = 1 << bits

    def fill(b, sigma, rng):
        d = f16_round(sigma / math.sqrt((levels * levels - 1) / 12))
        b[:, 0:2] = f16_bytes(np.full(len(b), d))
        b[:, 2:4] = f16_bytes(np.full(len(b), -(levels - 1) / 2 * d))
    return fill


fill_q4_0, fill_q5_0 = fill_offset_codes(4), fill_offset_codes(5)
fill_q4_1, fill_q5_1 = fill_min_codes(4), fill_min_codes(5)


def k_quant_min_equals_scale(scales):
    """q4_K/q5_K's 12 scale bytes with every sub-block's min equal to its scale.

    Bytes 0-3 hold scales 0-3 (low 6 bits) and the top bits of scales 4-7; bytes 4-7 the same
    for the mins; bytes 8-11 the low nibbles of scales 4-7 (low) and of mins 4-7 (high)."""
    scales[:, 4:8] = scales[:, 0:4]
    low = scales[:, 8:12] & 0x0F
    scales[:, 8:12] = low | (low << 4)


def fill_q4_K(b, sigma, rng):
    # d, dmin (f16) | 12 bytes of 6-bit scales and mins | 128 bytes of 4-bit quants.
    # w = d * sc * q - dmin * m; with m = sc and dmin = 7.5 d, w = d * sc * (q - 7.5), q in 0..15.
    k_quant_min_equals_scale(b[:, 4:16])
    d = f16_round(sigma / math.sqrt(mean_square_of_range(0, 63) * (16 * 16 - 1) / 12))
    b[:, 0:2] = f16_bytes(np.full(len(b), d))
    b[:, 2:4] = f16_bytes(np.full(len(b), 7.5 * d))


def fill_q5_K(b, sigma, rng):
    # As q4_K with a fifth bit in qh: q in 0..31, dmin = 15.5 d.
    k_quant_min_equals_scale(b[:, 4:16])
    d = f16_round(sigma / math.sqrt(mean_square_of_range(0, 63) * (32 * 32 - 1) / 12))
    b[:, 0:2] = f16_bytes(np.full(len(b), d))
    b[:, 2:4] = f16_bytes(np.full(len(b), 15.5 * d))


def fill_q2_K(b, sigma, rng):
    # 16 bytes: scale (low nibble) and min (high nibble) per 16 weights | 64 bytes of 2-bit quants
    # | d, dmin (f16). With min = scale and dmin = 1.5 d: w = d * sc * (q - 1.5), q in 0..3.
    low = b[:, 0:16] & 0x0F
    b[:, 0:16] = low | (low << 4)
    d = f16_round(sigma / math.sqrt(mean_square_of_range(0, 15) * (4 * 4 - 1) / 12))
    b[:, 80:82] = f16_bytes(np.full(len(b), d))
    b[:, 82:84] = f16_bytes(np.full(len(b), 1.5 * d))


def fill_q3_K(b, sigma, rng):
    # 32 bytes hmask | 64 bytes qs | 12 bytes of 6-bit scales (stored + 32) | d (f16).
    # w = d * (sc - 32) * q, q in -4..3; random scale bytes make sc - 32 uniform over -32..31.
    q_mean_square = mean_square_of_range(-4, 3)
    b[:, 108:110] = f16_bytes(np.full(len(b), sigma / math.sqrt(mean_square_of_range(-32, 31) * q_mean_square)))


def fill_q6_K(b, sigma, rng):
    # 128 bytes ql | 64 bytes qh | 16 int8 scales | d (f16). w = d * sc * (q - 32), q in 0..63.
    # Scales of either sign with magnitude 1..63, so every sub-block's mean is 0 on average.
    magnitude = uniform_ints(rng, (len(b), 16), 1, 63)
    sign = rng.integers(0, 2, size=(len(b), 16), dtype=np.int16) * 2 - 1
    b[:, 192:208] = (magnitude * sign).astype(np.int8).view(np.uint8)
    u_mean_square = mean_square_of_range(-32, 31)
    b[:, 208:210] = f16_bytes(np.full(len(b), sigma / math.sqrt(mean_square_of_range(1, 63) * u_mean_square)))


# ggml's kvalues_iq4nl: the 16 values an iq4_nl or iq4_xs nibble stands for (mean -5.875).
IQ4NL_VALUES = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113],
                        dtype=np.float64)


def fill_iq4_nl(b, sigma, rng):
    # d (f16) | qs: 16 bytes of nibbles. w = d * v[q], v = kvalues_iq4nl:
    # d = +-sigma / sqrt(E[v^2]) (E[v^2] = 4548).
    d = sigma / math.sqrt(float(np.mean(IQ4NL_VALUES ** 2)))
    b[:, 0:2] = f16_bytes(d * random_signs(rng, len(b)))


def fill_iq4_xs(b, sigma, rng):
    # d (f16) | scales_h (u16: 2 high bits per sub-block of 32) | scales_l (4 bytes: a low nibble
    # per sub-block) | qs: 128 bytes of nibbles. w = d * (ls - 32) * v[q], ls the 6-bit scale.
    # The scales are set so that ls - 32 is uniform over -8..7 (the full -32..31 would put d deep
    # in float16's subnormals at large k): d = +-sigma / sqrt(E[(ls-32)^2] E[v^2]), the sign
    # random per block (ls - 32 has mean -0.5 and v -5.875, which would leave +0.009 sigma).
    ls = uniform_ints(rng, (len(b), 8), 24, 39).astype(np.uint16)
    low, high = ls & 0x0F, ls >> 4
    b[:, 4:8] = (low[:, 0::2] | (low[:, 1::2] << 4)).astype(np.uint8)
    scales_h = np.zeros(len(b), dtype=np.uint16)
    for ib in range(8):
        scales_h |= high[:, ib] << (2 * ib)
    b[:, 2:4] = scales_h.astype("<u2").reshape(-1, 1).view(np.uint8)
    d = sigma / math.sqrt(mean_square_of_range(-8, 7) * float(np.mean(IQ4NL_VALUES ** 2)))
    b[:, 0:2] = f16_bytes(d * random_signs(rng, len(b)))


# ggml's e2m1 values, doubled (kvalues_mxfp4); the block scale 2^(e - 128) halves them back.
MXFP4_VALUES = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], dtype=np.float64)


def fill_mxfp4(b, sigma, rng):
    # e (E8M0) | 16 bytes of e2m1 pairs. w = value * 2^(e - 128). A power of two rarely gives
    # sigma, so blocks take the exponent below or above it in the mix whose mean square does.
    variance = (sigma / math.sqrt(float(np.mean(MXFP4_VALUES ** 2)))) ** 2
    lower = math.floor(math.log2(variance) / 2)
    above = (variance - 4.0 ** lower) / (4.0 ** (lower + 1) - 4.0 ** lower)
    e = 128 + lower + (rng.random(len(b)) < above)
    b[:, 0] = np.clip(e, 2, 254).astype(np.uint8)


FILL = {QT.Q8_0: fill_q8_0, QT.Q4_0: fill_q4_0, QT.Q4_1: fill_q4_1, QT.Q5_0: fill_q5_0,
        QT.Q5_1: fill_q5_1, QT.Q2_K: fill_q2_K, QT.Q3_K: fill_q3_K, QT.Q4_K: fill_q4_K,
        QT.Q5_K: fill_q5_K, QT.Q6_K: fill_q6_K, QT.IQ4_NL: fill_iq4_nl, QT.IQ4_XS: fill_iq4_xs,
        QT.MXFP4: fill_mxfp4}


def random_blocks(qtype, n_blocks, sigma, rng):
    """n_blocks random blocks of qtype, as an (n_blocks, block_bytes) uint8 array."""
    block_bytes = gguf.GGML_QUANT_SIZES[qtype][1]
    blocks = np.frombuffer(bytearray(rng.bytes(n_blocks * block_bytes)), dtype=np.uint8)
    blocks = blocks.reshape(n_blocks, block_bytes)
    FILL[qtype](blocks, sigma, rng)
    return blocks
