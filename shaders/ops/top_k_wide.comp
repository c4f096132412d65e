#version 460
// top_k over long columns (graph::op::top_k of more than 256 values: a vocabulary's logits), with
// cpu::top_k's picks bit for bit; include/llmrt/vulkan/ops/top_k.hpp records it.
//
// Every number becomes a unique nonzero 64-bit key whose order is the picks' order: the float's
// bits made order-preserving in the high word (-0.0 as +0.0, so the two tie), 0xFFFFFFFF − index
// in the low word (of equal values the lower index ranks first). NaN has no key (0 stands for
// none): a scan never picks it.
//
//   STAGE_SLICES  work-group (s, c): values [s·SLICE, +SLICE) of column c; writes the keys of its
//                 best min(k, numbers) numbers to keys[(c·slices + s)·k, +k) in any order, zeros
//                 after them
//   STAGE_MERGE   work-group c: the best k keys of column c's candidates (the slices' keys, or the
//                 column itself when it is one slice) into shared memory, sorted (bitonic); then
//                 the picks
//
// A work-group finds its best `want` keys by radix selection over candidates it reads from memory
// (select_best): 8 bits a pass from the top, a histogram of the keys still tied with the prefix
// fixes the digit of the want-th largest key, until the keys of that digit are exactly the ones
// still wanted; bits every candidate has alike (the AND and the OR of them all) join the prefix
// without a pass. At most 8 passes and a compaction, whose shared atomic counter orders the keys
// differently from run to run; which keys it keeps does not vary, and the sort fixes the order.
//
// The picks follow cpu::top_k's scans, NaN included: pick 0 is 0 when x[0] is NaN, else the
// largest key; pick j > 0 is the largest key below pick j − 1's key, but j itself ("own") when
// there is none or pick j − 1's value is NaN (and the next scan goes on below x[j]'s key). With
// x[0] a number and k numbers or more that is the k best keys in order. Otherwise the work-group
// walks those rules (walk) over a segment of sorted keys in shared memory that holds every number
// in a known key range: at first the best k, which cover [their least, ∞). Where a scan needs a
// key outside the segment (after x[0] NaN, an own pick ranked k or later, or a run past the
// segment's end) the segment is selected anew from the column (restart): the best k below the
// ceiling C when there are k or more (that run then ends the picks: it needs fewer than k), else
// the k least numbers of the column, which hold every later ceiling with fewer than k numbers
// below it. So a column costs at most two restarts: about 19 passes over it.
//
// Loops: lavapipe ends a shader's loops after 65535 iterations in all (one budget per invocation,
// shared by every loop: LP_MAX_TGSI_LOOP_ITERATIONS). A pass over n values takes n / 256: the
// slices' and the merge's selections ~9 passes over 4096 values and over slices·k keys, the two
// restarts ~19 passes over the column (19456 iterations at n = 262144; lavapipe takes them up to
// n ≈ 800000), the walk k rounds of ~12 at most.
#extension GL_GOOGLE_include_directive : require
#include "ops_common.glsl"

#define WG 256u
#define SLICE 4096u     // values of a slice: 16 an invocation
#define MAX_K 1024u     // the segment's capacity (top_k_wide_max_k)
#define STAGE_SLICES 0u
#define STAGE_MERGE 1u

layout(local_size_x = 256) in;

layout(buffer_reference, std430, buffer_reference_align = 8) buffer llmrt_top_k_keys { uint64_t v[]; };

layout(push_constant) uniform llmrt_top_k_wide_params {
    uint64_t x;     // cols columns of n floats
    uint64_t y;     // cols columns of k int32
    uint64_t keys;  // cols × slices × k keys from the slices (unused when slices is 1)
    uint n;
    uint k;
    uint slices;    // ceil(n / SLICE)
    uint stage;
    uint cols;
    uint unused;
} p;

const uint64_t no_key = uint64_t(0);
const uint64_t all_bits = ~uint64_t(0);

// Where select_best and compact read candidates: the slices' keys, the column's numbers
// [begin, begin + count), its numbers below a ceiling, or its numbers in reverse order (~key).
#define SOURCE_KEYS 0u
#define SOURCE_NUMBERS 1u
#define SOURCE_BELOW 2u
#define SOURCE_SMALLEST 3u
uint g_source;
uint64_t g_keys;     // SOURCE_KEYS: the column's candidates
uint64_t g_column;   // the column's values
uint g_begin;        // SOURCE_NUMBERS: the first value
uint64_t g_ceiling;  // SOURCE_BELOW: keys below this

shared uint64_t segment[MAX_K];
shared uint hist[WG], scan[WG];
shared uint s_count, s_and_high, s_and_low, s_or_high, s_or_low, s_digit, s_above, s_in_digit, s_filled;

uint64_t number_key(uint bits, uint i) {
    if ((bits & 0x7fffffffu) > 0x7f800000u) return no_key;  // NaN
    if ((bits & 0x7fffffffu) == 0u) bits = 0u;              // -0.0 ties +0.0
    const uint high = (bits & 0x80000000u) != 0u ? ~bits : (bits | 0x80000000u);
    return (uint64_t(high) << 32) | uint64_t(0xffffffffu - i);
}
int key_index(uint64_t key) { return int(0xffffffffu - uint(key)); }

uint column_bits(uint i) { return llmrt_op_u32(g_column).v[i]; }

uint64_t candidate(uint t) {
    if (g_source == SOURCE_KEYS) return llmrt_top_k_keys(g_keys).v[t];
    const uint i = g_begin + t;
    const uint64_t key = number_key(column_bits(i), i);
    if (g_source == SOURCE_NUMBERS) return key;
    if (g_source == SOURCE_BELOW) return key < g_ceiling ? key : no_key;
    return key != no_key ? ~key : no_key;  // never all_bits: a key's high word is below 0xff800001
}

// Bits 0..b set.
uint64_t bits_to(int b) { return b >= 63 ? all_bits : (uint64_t(1) << uint(b + 1)) - uint64_t(1); }
int msb64(uint64_t v) {
    const uint high = uint(v >> 32);
    return high != 0u ? 32 + findMSB(high) : findMSB(uint(v));
}

// The selection of the last select_best: a key is selected when key != 0 and (key & mask) >= prefix.
uint64_t sel_mask, sel_prefix;
uint sel_total;  // the nonzero candidates

// The best min(at_most, nonzero candidates) of candidates [0, count) of g_source: returns how many,
// sets sel_* (the same in every invocation). Every invocation calls it alike.
uint select_best(uint count, uint at_most) {
    const uint lane = gl_LocalInvocationID.x;
    barrier();  // the shared values of a previous selection, compaction or sort are read
    if (lane == 0u) {
        s_count = 0u;
        s_and_high = 0xffffffffu;
        s_and_low = 0xffffffffu;
        s_or_high = 0u;
        s_or_low = 0u;
        s_filled = 0u;
    }
    barrier();
    uint nonzero = 0u;
    uint64_t all_and = all_bits, all_or = no_key;
    for (uint t = lane; t < count; t += WG) {
        const uint64_t key = candidate(t);
        if (key == no_key) continue;
        ++nonzero;
        all_and &= key;
        all_or |= key;
    }
    if (nonzero > 0u) {
        atomicAdd(s_count, nonzero);
        atomicAnd(s_and_high, uint(all_and >> 32));
        atomicAnd(s_and_low, uint(all_and));
        atomicOr(s_or_high, uint(all_or >> 32));
        atomicOr(s_or_low, uint(all_or));
    }
    barrier();
    sel_total = s_count;
    all_and = (uint64_t(s_and_high) << 32) | uint64_t(s_and_low);
    all_or = (uint64_t(s_or_high) << 32) | uint64_t(s_or_low);
    sel_mask = no_key;
    sel_prefix = no_key;
    const uint want = min(sel_total, at_most);
    if (want == sel_total) return want;  // every key (mask 0)
    const uint64_t varied = all_and ^ all_or;  // the bits some keys have and others not
    uint rest = want;                          // how many of the keys tied with the prefix are wanted
    int top = 63;
    for (uint pass = 0u; pass < 9u; ++pass) {  // 8 bits or more a pass: 8 passes at most
        const uint64_t below = bits_to(top);
        if ((varied & below) == no_key) {  // (never: the keys are unique, more than rest are tied)
            sel_mask |= below;
            sel_prefix |= all_and & below;
            break;
        }
        const int high = msb64(varied & below);
        const uint64_t alike = below & ~bits_to(high);  // bits every key has alike join the prefix
        sel_mask |= alike;
        sel_prefix |= all_and & alike;
        const uint width = uint(min(high + 1, 8)), shift = uint(high + 1) - width;
        const uint64_t digits = (uint64_t(1) << width) - uint64_t(1);
        hist[lane] = 0u;
        barrier();
        for (uint t = lane; t < count; t += WG) {
            const uint64_t key = candidate(t);
            if (key != no_key && (key & sel_mask) == sel_prefix) atomicAdd(hist[uint((key >> shift) & digits)], 1u);
        }
        barrier();
        // scan[d] = the tied keys of digit d or above (a suffix sum, Hillis-Steele); the digit is
        // the one where that count reaches rest.
        const uint own = hist[lane];
        scan[lane] = own;
        barrier();
        for (uint offset = 1u; offset < WG; offset <<= 1u) {
            const uint add = lane + offset < WG ? scan[lane + offset] : 0u;
            barrier();
            scan[lane] += add;
            barrier();
        }
        if (own > 0u && scan[lane] >= rest && scan[lane] - own < rest) {
            s_digit = lane;
            s_above = scan[lane] - own;
            s_in_digit = own;
        }
        barrier();
        rest -= s_above;
        sel_prefix |= uint64_t(s_digit) << shift;
        sel_mask |= digits << shift;
        if (s_in_digit == rest || shift == 0u) break;
        top = int(shift) - 1;
    }
    return want;
}

// The `want` keys select_best selected, into segment[0, want) (un-reversed for SOURCE_SMALLEST) or
// into the scratch at `destination`, in any order.
void compact(uint count, uint want, bool to_scratch, uint64_t destination) {
    for (uint t = gl_LocalInvocationID.x; t < count; t += WG) {
        const uint64_t key = candidate(t);
        if (key == no_key || (key & sel_mask) < sel_prefix) continue;
        const uint at = atomicAdd(s_filled, 1u);
        if (at >= want) continue;  // (never: the keys are unique)
        if (to_scratch) llmrt_top_k_keys(destination).v[at] = key;
        else segment[at] = g_source == SOURCE_SMALLEST ? ~key : key;
    }
}

// segment[0, size) sorted, largest first (bitonic over a power of two, zeros after the keys).
void sort_segment(uint size) {
    const uint lane = gl_LocalInvocationID.x;
    uint width = 1u;
    while (width < size) width <<= 1u;
    barrier();  // the compaction's writes
    for (uint t = size + lane; t < width; t += WG) segment[t] = no_key;
    barrier();
    for (uint run = 2u; run <= width; run <<= 1u)
        for (uint stride = run >> 1u; stride > 0u; stride >>= 1u) {
            for (uint t = lane; t < width / 2u; t += WG) {
                const uint i = 2u * t - (t & (stride - 1u)), j = i + stride;
                const uint64_t a = segment[i], b = segment[j];
                if ((i & run) == 0u ? a < b : a > b) {  // descending where bit `run` of i is 0: all in the last
                    segment[i] = b;
                    segment[j] = a;
                }
            }
            barrier();
        }
}

// The segment and what it holds: every number with a key in [segment's least, cover), and with
// `complete` every number below cover.
uint g_size;
uint64_t g_cover;
bool g_complete;

// The first position of the segment holding a key below c (g_size: none).
uint first_below(uint64_t c) {
    uint lo = 0u, hi = g_size;
    while (lo < hi) {
        const uint mid = (lo + hi) / 2u;
        if (segment[mid] < c) hi = mid;
        else lo = mid + 1u;
    }
    return lo;
}

// The segment selected anew from the column for a scan below c (see the top).
void restart(uint64_t c) {
    g_source = SOURCE_BELOW;
    g_begin = 0u;
    g_ceiling = c;
    uint size = select_best(p.n, p.k);
    if (sel_total >= p.k) {
        compact(p.n, size, false, no_key);
        sort_segment(size);
        g_size = size;
        g_cover = c;
        g_complete = sel_total == p.k;
        return;
    }
    g_source = SOURCE_SMALLEST;
    size = select_best(p.n, p.k);
    compact(p.n, size, false, no_key);
    sort_segment(size);
    g_size = size;
    g_complete = true;
    g_cover = sel_total <= p.k ? all_bits : segment[0] + uint64_t(1);
}

// Where the scan below key c starts in the segment (restarting it when it does not hold that
// key), or -1 when no number lies below c.
int locate(uint64_t c) {
    if (c <= g_cover) {
        const uint at = first_below(c);
        if (at < g_size) return int(at);
        if (g_complete) return -1;
    }
    restart(c);
    const uint at = first_below(c);
    return at < g_size ? int(at) : -1;
}

// cpu::top_k's picks into y, from the segment of the column's best keys (see the top). Each round
// takes one own pick or a run of picks from the segment: k rounds at most.
void walk(llmrt_op_i32 y) {
    const uint lane = gl_LocalInvocationID.x;
    uint j = 0u, start = 0u;
    bool own = (column_bits(0u) & 0x7fffffffu) > 0x7f800000u;  // x[0] NaN
    while (j < p.k) {
        if (own) {
            if (lane == 0u) y.v[j] = int(j);
            const uint bits = column_bits(j);
            ++j;
            const uint64_t c = number_key(bits, j - 1u);
            if (j == p.k || c == no_key) continue;  // done, or NaN: the next pick is its own too
            const int at = locate(c);
            if (at < 0) continue;
            start = uint(at);
            own = false;
        }
        const uint len = min(p.k - j, g_size - start);
        for (uint t = lane; t < len; t += WG) y.v[j + t] = key_index(segment[start + t]);
        j += len;
        if (j == p.k) break;
        if (g_complete) {  // no number below the run's last key
            own = true;
            continue;
        }
        const int at = locate(segment[g_size - 1u]);  // past the segment's end
        if (at < 0) own = true;
        else start = uint(at);
    }
}

void main() {
    const uint lane = gl_LocalInvocationID.x;
    if (p.stage == STAGE_SLICES) {
        const uint slice = llmrt_group_index(), c = gl_WorkGroupID.y;
        if (slice >= p.slices) return;
        g_source = SOURCE_NUMBERS;
        g_column = p.x + uint64_t(c) * p.n * 4u;
        g_begin = slice * SLICE;
        const uint count = min(SLICE, p.n - g_begin);
        const uint want = select_best(count, p.k);
        const uint64_t slice_keys = p.keys + (uint64_t(c) * p.slices + slice) * p.k * 8u;
        compact(count, want, true, slice_keys);
        for (uint t = want + lane; t < p.k; t += WG) llmrt_top_k_keys(slice_keys).v[t] = no_key;
        return;
    }
    const uint c = llmrt_group_index();
    if (c >= p.cols) return;
    g_column = p.x + uint64_t(c) * p.n * 4u;
    g_begin = 0u;
    uint count = p.n;
    g_source = SOURCE_NUMBERS;
    if (p.slices > 1u) {
        g_source = SOURCE_KEYS;
        g_keys = p.keys + uint64_t(c) * p.slices * p.k * 8u;
        count = p.slices * p.k;
    }
    const uint size = select_best(count, p.k);
    compact(count, size, false, no_key);
    sort_segment(size);
    g_size = size;
    g_cover = all_bits;
    g_complete = sel_total < p.k;
    llmrt_op_i32 y = llmrt_op_i32(p.y + uint64_t(c) * p.k * 4u);
    if (size == p.k && (column_bits(0u) & 0x7fffffffu) <= 0x7f800000u) {  // k numbers, x[0] not NaN
        for (uint t = lane; t < p.k; t += WG) y.v[t] = key_index(segment[t]);
        return;
    }
    walk(y);
}
