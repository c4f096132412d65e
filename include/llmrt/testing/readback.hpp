// A device result brought back to the host and compared with its CPU reference in one step:
// the error measures, the elements the kernel never wrote (still poison), and the host copy
// itself, so a failure message can name the worst elements. The backend helpers
// (llmrt/testing/cuda.hpp, the Vulkan one) copy the buffer back and hand it to compare_readback.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/testing/measures.hpp"
#include "llmrt/testing/poison.hpp"

namespace llmrt::testing {

struct readback_report : error_report {
    std::vector<float> out;          // the device buffer as read back
    std::vector<int64_t> unwritten;  // indices still holding poison_bits, ascending

    // True when every element was written and none is a NaN or a mismatched inf.
    bool complete() const { return unwritten.empty() && all_finite_match(); }

    // The measures, the unwritten indices when there are any, and the worst elements.
    std::string describe(const float* ref, int worst = 5) const {
        std::string text;
        if (!unwritten.empty()) text = "unwritten " + describe_unwritten(unwritten) + "\n";
        return text + error_report::describe(out.data(), ref, worst);
    }
};

// Compares the host copy `out` of a device result with ref (n elements each).
inline readback_report compare_readback(std::vector<float> out, const float* ref, int64_t n) {
    check(n >= 0 && int64_t(out.size()) == n, errc::shape_mismatch, [&] {
        return "testing::compare_readback: read back " + std::to_string(out.size()) + " elements, expected " +
               std::to_string(n);
    });
    readback_report r;
    static_cast<error_report&>(r) = compare(out.data(), ref, n);
    r.unwritten = unwritten(out.data(), n);
    r.out = std::move(out);
    return r;
}

}  // namespace llmrt::testing
