// Command lines of the example and bench programs: options read in order, every value checked,
// a bad one raising llmrt::error that names the option and the text (never a silent 0 from
// atoi or strtod, never an ignored trailing argument).
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <llmrt/core/error.hpp>

namespace llmrt_examples {

// An exception's message for a program's "program: message" line, without llmrt::error's own
// "llmrt: " prefix (which would say the program's name twice over).
inline const char* message_of(const std::exception& e) {
    const char* what = e.what();
    return std::strncmp(what, "llmrt: ", 7) == 0 ? what + 7 : what;
}

[[noreturn]] inline void bad_argument(const std::string& message) {
    throw llmrt::error(llmrt::errc::invalid_argument, message);
}

// A bound as a person writes it: 0, 1, 1e+06.
inline std::string shortest(double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return text;
}

// An integer in [min, max], in base 10 with nothing after it.
template <class Int = int32_t>
Int to_int(const std::string& option, const std::string& text, Int min = 0,
           Int max = std::numeric_limits<Int>::max()) {
    static_assert(std::is_integral_v<Int> && std::is_signed_v<Int> && sizeof(Int) <= sizeof(long long),
                  "to_int: Int must be a signed integer type of at most 64 bits");
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno == ERANGE || v < static_cast<long long>(min) ||
        v > static_cast<long long>(max))
        bad_argument(option + " needs an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], got '" +
                     text + "'");
    return Int(v);
}

// A number in [min, max] (strtod's syntax; not NaN), with nothing after it.
inline double to_number(const std::string& option, const std::string& text, double min = 0.0, double max = 1e6) {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(v >= min && v <= max))
        bad_argument(option + " needs a number in [" + shortest(min) + ", " + shortest(max) + "], got '" + text + "'");
    return v;
}

// The items of a list separated by `sep`; an empty item is an error.
inline std::vector<std::string> to_list(const std::string& option, const std::string& text, char sep = ',') {
    std::vector<std::string> items;
    for (std::size_t at = 0; at <= text.size();) {
        const std::size_t next = std::min(text.find(sep, at), text.size());
        if (next == at) bad_argument(option + " has an empty item in '" + text + "'");
        items.push_back(text.substr(at, next - at));
        at = next + 1;
    }
    return items;
}

// Token ids separated by commas, as --prompt takes them.
inline std::vector<int32_t> to_ids(const std::string& text) {
    std::vector<int32_t> ids;
    for (const std::string& id : to_list("--prompt", text)) ids.push_back(to_int("--prompt", id));
    return ids;
}

// Matrix shapes ROWSxK separated by commas, each size at least 1.
inline std::vector<std::pair<int64_t, int64_t>> to_shapes(const std::string& option, const std::string& text) {
    std::vector<std::pair<int64_t, int64_t>> shapes;
    for (const std::string& shape : to_list(option, text)) {
        const std::vector<std::string> rk = to_list(option, shape, 'x');
        if (rk.size() != 2) bad_argument(option + ": shape '" + shape + "' is not ROWSxK");
        shapes.emplace_back(to_int<int64_t>(option, rk[0], 1), to_int<int64_t>(option, rk[1], 1));
    }
    return shapes;
}

// The arguments after the program's name, one at a time:
//   for (command_line cl(argc, argv); cl.next();)
//       if (cl.option() == "-n") n = cl.int_value(1);
//       else if (cl.option() == "--out") path = cl.value();
//       else cl.reject();
class command_line {
public:
    command_line(int argc, char** argv) : args_(argv + 1, argv + argc) {}

    // Moves to the next argument; false past the last.
    bool next() { return ++at_ < int64_t(args_.size()); }
    // The current argument.
    const std::string& option() const { return args_[std::size_t(at_)]; }
    // The argument after the current option, as its value (it is not read as an option).
    const std::string& value() {
        if (at_ + 1 >= int64_t(args_.size())) bad_argument(option() + " needs a value");
        return args_[std::size_t(++at_)];
    }
    template <class Int = int32_t>
    Int int_value(Int min = 0, Int max = std::numeric_limits<Int>::max()) {
        const std::string& o = option();
        return to_int<Int>(o, value(), min, max);
    }
    double number_value(double min = 0.0, double max = 1e6) {
        const std::string& o = option();
        return to_number(o, value(), min, max);
    }
    std::vector<std::string> list_value(char sep = ',') {
        const std::string& o = option();
        return to_list(o, value(), sep);
    }
    // A comma-separated list of integers, each in [min, max].
    template <class Int = int32_t>
    std::vector<Int> int_list_value(Int min = 0, Int max = std::numeric_limits<Int>::max()) {
        const std::string& o = option();
        std::vector<Int> values;
        for (const std::string& item : to_list(o, value())) values.push_back(to_int<Int>(o, item, min, max));
        return values;
    }
    // The current argument is none the program knows.
    [[noreturn]] void reject(const std::string& help = "--help") const {
        bad_argument("unknown argument '" + option() + "' (see " + help + ")");
    }

private:
    std::vector<std::string> args_;
    int64_t at_ = -1;
};

}  // namespace llmrt_examples
