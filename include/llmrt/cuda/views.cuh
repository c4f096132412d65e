// Views of device memory that llmrt's CUDA launchers take: plain structs of pointers, sizes and
// strides, owning nothing. Every size is in elements except where a comment says bytes.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstdint>
#include <string>

#include "llmrt/core/qtype.hpp"
#include "llmrt/quant/codec.hpp"

namespace llmrt::cuda {

// A quantized matrix, or a batch of them over two outer dimensions: `rows` rows of `k`
// elements of `type`. Row r of matrix (i2, i3) starts at byte
//   data + r·row_stride + i2·stride2 + i3·stride3.
// A stride of 0 means dense (row_size(type, k), rows·row_stride, batch2·stride2).
struct qmatrix_view {
    qtype type = qtype::q8_0;
    const void* data = nullptr;
    int64_t rows = 0;
    int64_t k = 0;
    int64_t row_stride = 0;  // bytes
    int64_t batch2 = 1;
    int64_t batch3 = 1;
    int64_t stride2 = 0;  // bytes
    int64_t stride3 = 0;  // bytes

    int64_t row_bytes() const { return int64_t(row_size(type, k)); }
    int64_t row_stride_or_dense() const { return row_stride ? row_stride : row_bytes(); }
    int64_t stride2_or_dense() const { return stride2 ? stride2 : rows * row_stride_or_dense(); }
    int64_t stride3_or_dense() const { return stride3 ? stride3 : batch2 * stride2_or_dense(); }
    std::string describe() const {
        return std::string(name(type)) + " [" + std::to_string(batch3) + " x " + std::to_string(batch2) + " x " +
               std::to_string(rows) + " x " + std::to_string(k) + "]";
    }
};

// Float columns, or a batch of them over two outer dimensions: `ncols` columns of `length`
// floats. Column c of batch (i2, i3) starts at element data + c·col_stride + i2·stride2 + i3·stride3.
// A stride of 0 means dense (length, ncols·col_stride, batch2·stride2).
template <class Float>
struct columns_view {
    static_assert(sizeof(Float) == 4, "llmrt::cuda::columns_view holds float or const float");
    Float* data = nullptr;
    int64_t length = 0;
    int64_t ncols = 1;
    int64_t col_stride = 0;
    int64_t batch2 = 1;
    int64_t batch3 = 1;
    int64_t stride2 = 0;
    int64_t stride3 = 0;

    int64_t col_stride_or_dense() const { return col_stride ? col_stride : length; }
    int64_t stride2_or_dense() const { return stride2 ? stride2 : ncols * col_stride_or_dense(); }
    int64_t stride3_or_dense() const { return stride3 ? stride3 : batch2 * stride2_or_dense(); }
    std::string describe() const {
        return "f32 [" + std::to_string(batch3) + " x " + std::to_string(batch2) + " x " + std::to_string(ncols) +
               " x " + std::to_string(length) + "]";
    }
};

using input_columns = columns_view<const float>;
using output_columns = columns_view<float>;

// Expert ids of a mixture-of-experts layer: for each of n_tokens tokens, n_used int32 ids,
// id (token, slot) at data[token·token_stride + slot] (token_stride 0: n_used).
struct expert_ids_view {
    const int32_t* data = nullptr;
    int64_t n_tokens = 0;
    int64_t n_used = 0;
    int64_t token_stride = 0;

    int64_t token_stride_or_dense() const { return token_stride ? token_stride : n_used; }
    std::string describe() const {
        return "i32 [" + std::to_string(n_tokens) + " x " + std::to_string(n_used) + "]";
    }
};

}  // namespace llmrt::cuda
