// Compile-time lists of types and a tag to carry a type through a generic lambda.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <type_traits>

namespace llmrt {

template <class T>
struct type_tag {
    using type = T;
};

template <class... Ts>
struct type_list {
    static constexpr std::size_t size = sizeof...(Ts);

    // Calls f(type_tag<T>{}) for every T in order.
    template <class F>
    static constexpr void for_each(F&& f) {
        (f(type_tag<Ts>{}), ...);
    }
};

template <class T, class List>
struct list_contains;
template <class T, class... Ts>
struct list_contains<T, type_list<Ts...>> {
    static constexpr bool value = (std::is_same_v<T, Ts> || ...);
};
template <class T, class List>
inline constexpr bool list_contains_v = list_contains<T, List>::value;

}  // namespace llmrt
