// GGUF metadata: key/value pairs in file order, looked up by key, read through typed accessors.
//
//   const auto layers = meta.get<uint32_t>("llama.block_count");
//   const auto& tokens = meta.get<std::vector<std::string>>("tokenizer.ggml.tokens");
//   const float eps = meta.get_or<float>("llama.attention.layer_norm_rms_epsilon", 1e-5f);
//
// A missing key or a value of another type raises llmrt::error (errc::invalid_argument) naming
// the key, the type asked for and the type the value has.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llmrt/core/error.hpp"
#include "llmrt/gguf/value.hpp"

namespace llmrt::gguf {

class metadata {
public:
    using entry = std::pair<std::string, value>;

    // Sets key to v; a new key goes last, an existing one keeps its place.
    void set(std::string key, value v) {
        if (auto it = index_.find(key); it != index_.end()) {
            entries_[it->second].second = std::move(v);
            return;
        }
        index_.emplace(key, entries_.size());
        entries_.emplace_back(std::move(key), std::move(v));
    }

    // Adds a key that must not be present yet; returns false (and changes nothing) when it is.
    bool insert(std::string key, value v) {
        if (contains(key)) return false;
        set(std::move(key), std::move(v));
        return true;
    }

    // Removes key if present; returns whether it was.
    bool erase(std::string_view key) {
        const auto it = index_.find(key);
        if (it == index_.end()) return false;
        const std::size_t at = it->second;
        index_.erase(it);
        entries_.erase(entries_.begin() + std::ptrdiff_t(at));
        for (auto& [k, i] : index_)
            if (i > at) --i;
        return true;
    }

    bool contains(std::string_view key) const { return index_.find(key) != index_.end(); }

    // The value of key, or nullptr.
    const value* find(std::string_view key) const {
        const auto it = index_.find(key);
        return it == index_.end() ? nullptr : &entries_[it->second].second;
    }

    // The value of key; llmrt::error when it is missing.
    const value& at(std::string_view key) const {
        const value* v = find(key);
        check(v != nullptr, errc::invalid_argument,
              [&] { return "gguf metadata: key '" + std::string(key) + "' is missing"; });
        return *v;
    }

    // The value of key as T: a scalar type, std::string, gguf::array (any array) or std::vector<E>
    // (an array whose elements are E). llmrt::error when the key is missing or holds another type.
    template <class T>
    const T& get(std::string_view key) const {
        static_assert(value_alternative<T> || value_vector<T>,
                      "llmrt::gguf::metadata::get<T>: T must be a GGUF value type (uint8_t ... double, bool, "
                      "std::string, gguf::array) or a std::vector of one of them");
        const value& v = at(key);
        if (const T* p = get_if<T>(v)) return *p;
        throw error(errc::invalid_argument, "gguf metadata: key '" + std::string(key) + "' holds " + describe(v) +
                                                ", not " + requested_type<T>::describe());
    }

    // The value of key as T, or `fallback` when the key is missing; llmrt::error when it holds
    // another type.
    template <class T>
    T get_or(std::string_view key, T fallback) const {
        return contains(key) ? get<T>(key) : std::move(fallback);
    }

    std::size_t size() const noexcept { return entries_.size(); }
    bool empty() const noexcept { return entries_.empty(); }
    auto begin() const noexcept { return entries_.begin(); }
    auto end() const noexcept { return entries_.end(); }
    const entry& operator[](std::size_t i) const { return entries_.at(i); }

    // Equal when both hold the same keys in the same order with equal values.
    bool operator==(const metadata& other) const { return entries_ == other.entries_; }

private:
    template <class T>
    static const T* get_if(const value& v) {
        if constexpr (value_alternative<T>) {
            return std::get_if<T>(&v);
        } else {
            const auto* a = std::get_if<array>(&v);
            return a ? a->get_if<typename T::value_type>() : nullptr;
        }
    }

    std::vector<entry> entries_;
    std::map<std::string, std::size_t, std::less<>> index_;
};

}  // namespace llmrt::gguf
