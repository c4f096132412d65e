// GGUF metadata values: the thirteen value types, arrays (which may nest) and the variant that
// holds any of them.
//
// The index of each alternative of `value` is its GGUF type id, and so is the index of each
// alternative of `array::items`, so a type id and a C++ type convert both ways at compile time:
//
//   gguf::value v = uint32_t(32);                       // GGUF UINT32
//   gguf::value tokens = std::vector<std::string>{"a"};  // GGUF ARRAY of STRING
//   type_of(v) == value_type::uint32;  describe(tokens) == "array of string"
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "llmrt/core/type_list.hpp"

namespace llmrt::gguf {

// GGUF's value type ids.
enum class value_type : uint32_t {
    uint8 = 0,
    int8 = 1,
    uint16 = 2,
    int16 = 3,
    uint32 = 4,
    int32 = 5,
    float32 = 6,
    boolean = 7,
    string = 8,
    array = 9,
    uint64 = 10,
    int64 = 11,
    float64 = 12,
};

struct array;

// The C++ type of each GGUF value type, in type id order.
using value_alternatives = type_list<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                                     std::string, array, uint64_t, int64_t, double>;
inline constexpr uint32_t value_type_count = uint32_t(value_alternatives::size);

namespace detail {
template <class List>
struct vectors_of;
template <class... Ts>
struct vectors_of<type_list<Ts...>> {
    using type = std::variant<std::vector<Ts>...>;
};
template <class List>
struct variant_of;
template <class... Ts>
struct variant_of<type_list<Ts...>> {
    using type = std::variant<Ts...>;
};
template <class T, class List>
struct index_in;
template <class T, class... Ts>
struct index_in<T, type_list<Ts...>> {
    static constexpr uint32_t find() {
        constexpr bool same[] = {std::is_same_v<T, Ts>...};
        for (uint32_t i = 0; i < sizeof...(Ts); ++i)
            if (same[i]) return i;
        return uint32_t(sizeof...(Ts));
    }
    static constexpr uint32_t value = find();
};
template <class T>
struct is_vector : std::false_type {};
template <class E>
struct is_vector<std::vector<E>> : std::true_type {};
}  // namespace detail

// A C++ type that a GGUF value (or an array element) can hold.
template <class T>
concept value_alternative = list_contains_v<T, value_alternatives>;

// std::vector<E> of such a type: how an array of E is read.
template <class T>
concept value_vector = detail::is_vector<T>::value && value_alternative<typename T::value_type>;

// The GGUF type id of T.
template <value_alternative T>
inline constexpr value_type value_type_of = value_type(detail::index_in<T, value_alternatives>::value);

// The elements of an array: one std::vector per element type, its index the element type id.
// An array of arrays holds a std::vector<array>; each inner array has an element type of its own.
using array_items = detail::vectors_of<value_alternatives>::type;

struct array {
    array_items items;

    array() = default;
    template <value_alternative E>
    array(std::vector<E> elements) : items(std::move(elements)) {}

    value_type element_type() const noexcept { return value_type(items.index()); }
    std::size_t size() const noexcept {
        return std::visit([](const auto& v) { return v.size(); }, items);
    }
    // The elements if they are of type E, else nullptr.
    template <value_alternative E>
    const std::vector<E>* get_if() const noexcept {
        return std::get_if<std::vector<E>>(&items);
    }

    bool operator==(const array&) const = default;
};

// Any metadata value.
using value = detail::variant_of<value_alternatives>::type;

static_assert(std::is_same_v<std::variant_alternative_t<uint32_t(value_type::boolean), value>, bool> &&
                  std::is_same_v<std::variant_alternative_t<uint32_t(value_type::array), value>, array> &&
                  std::is_same_v<std::variant_alternative_t<uint32_t(value_type::float64), value>, double>,
              "llmrt::gguf::value must list its alternatives in GGUF type id order");

inline value_type type_of(const value& v) noexcept { return value_type(v.index()); }

// GGUF's name of a value type in lower case ("uint32", "string", "array"), or "unknown".
inline const char* type_name(value_type t) noexcept {
    constexpr const char* names[] = {"uint8", "int8",  "uint16", "int16",  "uint32", "int32",  "float32",
                                     "bool",  "string", "array", "uint64", "int64",  "float64"};
    static_assert(std::size(names) == value_type_count, "one name per GGUF value type");
    const auto i = uint32_t(t);
    return i < value_type_count ? names[i] : "unknown";
}

// A value's type in words, arrays with their element types: "array of array of int32".
inline std::string describe(const array& a);
inline std::string describe(const value& v) {
    if (const auto* a = std::get_if<array>(&v)) return describe(*a);
    return type_name(type_of(v));
}
inline std::string describe(const array& a) {
    if (const auto* inner = a.get_if<array>(); inner && !inner->empty())
        return "array of " + describe((*inner)[0]);
    return std::string("array of ") + type_name(a.element_type());
}

// The same words for a C++ type that a caller asks for (T or std::vector<T>).
template <class T>
struct requested_type {
    static std::string describe() { return type_name(value_type_of<T>); }
};
template <class E>
struct requested_type<std::vector<E>> {
    static std::string describe() { return "array of " + requested_type<E>::describe(); }
};

// Calls f(type_tag<T>{}) with the C++ type T of the GGUF value type t (t must be < value_type_count).
template <class F>
decltype(auto) visit_type(value_type t, F&& f) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) -> decltype(auto) {
        using result = decltype(f(type_tag<uint8_t>{}));
        using table_entry = result (*)(F&);
        constexpr table_entry table[] = {[](F& g) -> result {
            return g(type_tag<std::variant_alternative_t<I, value>>{});
        }...};
        return table[uint32_t(t)](f);
    }(std::make_index_sequence<value_type_count>{});
}

}  // namespace llmrt::gguf
