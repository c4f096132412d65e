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

// The types of A, then those of B that A does not hold, in order: list_union_t<type_list<a, b>,
// type_list<b, c>> is type_list<a, b, c>.
template <class A, class B>
struct list_union;
template <class... As>
struct list_union<type_list<As...>, type_list<>> {
    using type = type_list<As...>;
};
template <class... As, class B, class... Bs>
struct list_union<type_list<As...>, type_list<B, Bs...>> {
    using type = typename list_union<
        std::conditional_t<(std::is_same_v<B, As> || ...), type_list<As...>, type_list<As..., B>>,
        type_list<Bs...>>::type;
};
template <class A, class B>
using list_union_t = typename list_union<A, B>::type;

static_assert(std::is_same_v<list_union_t<type_list<int, char>, type_list<char, long>>, type_list<int, char, long>>);

}  // namespace llmrt
