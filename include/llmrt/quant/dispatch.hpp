// From a runtime qtype to the compile-time block type: the one dispatch helper.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <string>

#include "llmrt/core/error.hpp"
#include "llmrt/quant/types.hpp"

namespace llmrt {

namespace detail {

template <class... Ts>
std::string type_names(type_list<Ts...>) {
    std::string names;
    ((names += (names.empty() ? "" : ", "), names += Ts::name), ...);
    return names;
}

template <class FullList, class F, class T, class... Ts>
decltype(auto) dispatch_over(qtype t, const char* operation, F&& f, type_list<T, Ts...>) {
    static_assert(quant_block<T>, "llmrt::dispatch: every entry of a type list must be a quant block");
    if (t == T::id) return f(type_tag<T>{});
    if constexpr (sizeof...(Ts) == 0) {
        throw error(errc::unsupported_type, std::string(operation) + ": qtype " +
                                                std::to_string(static_cast<uint32_t>(t)) +
                                                " is not supported here (supported: " +
                                                type_names(FullList{}) + ")");
    } else {
        return dispatch_over<FullList>(t, operation, std::forward<F>(f), type_list<Ts...>{});
    }
}

}  // namespace detail

// Calls f(type_tag<B>{}) for the block type B of List whose id is t, and returns its result.
// A qtype outside List raises llmrt::error naming `operation`, the value and what List holds.
//
//   dispatch<weight_types>(t, "mmvq", [&](auto tag) { using B = typename decltype(tag)::type; ... });
template <class List = all_types, class F>
decltype(auto) dispatch(qtype t, const char* operation, F&& f) {
    return detail::dispatch_over<List>(t, operation, std::forward<F>(f), List{});
}

// True when t names a type of List.
template <class List = all_types>
bool is_in(qtype t) {
    bool found = false;
    List::for_each([&](auto tag) { found = found || decltype(tag)::type::id == t; });
    return found;
}

// ggml's name of a type ("q4_K"), or "unknown" for a value outside the type list.
inline const char* name(qtype t) {
    const char* result = "unknown";
    all_types::for_each([&](auto tag) {
        if (decltype(tag)::type::id == t) result = decltype(tag)::type::name;
    });
    return result;
}

// The qtype named `type_name` (as name() spells it); llmrt::error for any other string.
inline qtype qtype_from_name(const std::string& type_name) {
    qtype result{};
    bool found = false;
    all_types::for_each([&](auto tag) {
        if (type_name == decltype(tag)::type::name) {
            result = decltype(tag)::type::id;
            found = true;
        }
    });
    check(found, errc::unsupported_type, [&] {
        return "unknown type name '" + type_name + "' (known: " + detail::type_names(all_types{}) + ")";
    });
    return result;
}

}  // namespace llmrt
