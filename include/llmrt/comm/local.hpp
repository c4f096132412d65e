// comm::local_group: a tensor-parallel group of N ranks in one process, one thread per rank, for
// tests and for CPU users; comm::run_ranks runs a function on each rank's thread.
//
//   comm::local_group group(4);
//   comm::run_ranks(group, [&](comm::communicator& c) {
//       cpu::backend b({.communicator = &c});
//       ...                                       // rank c.rank()'s executor, run and read
//   });
//
// Each collective meets at a barrier: every rank publishes its buffers, then each rank adds up its
// own share of the elements [r·count/N, (r+1)·count/N) over every rank's buffer in rank order into
// one shared sum, and after a second barrier copies the whole sum back. Every element is thus
// added once, in rank order, and every rank reads the same bits. The shared sum grows to the
// largest count a collective has seen (the first run of a graph allocates, later runs do not).
//
// A rank that fails outside a collective would leave the others waiting: run_ranks aborts the
// group when a rank's function throws, which wakes every waiting rank with an llmrt::error, and
// rethrows the first rank's own error once every thread has ended.
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "llmrt/comm/communicator.hpp"
#include "llmrt/comm/rank_threads.hpp"
#include "llmrt/core/error.hpp"

namespace llmrt::comm {

class local_group {
public:
    explicit local_group(int32_t size) : size_(size) {
        check(size >= 1 && size <= 4096, errc::invalid_argument,
              [&] { return "comm::local_group: size " + std::to_string(size) + " must lie in 1..4096"; });
        slots_.resize(std::size_t(size));
        for (int32_t r = 0; r < size; ++r) ranks_.push_back(std::make_unique<member>(*this, r));
    }
    local_group(const local_group&) = delete;
    local_group& operator=(const local_group&) = delete;

    int32_t size() const noexcept { return size_; }

    // Rank r's communicator; one thread at a time calls its collectives.
    communicator& rank(int32_t r) {
        check(r >= 0 && r < size_, errc::invalid_argument, [&] {
            return "comm::local_group: rank " + std::to_string(r) + " outside 0.." + std::to_string(size_ - 1);
        });
        return *ranks_[std::size_t(r)];
    }

    // Wakes every rank waiting in a collective, and makes every later collective fail, with an
    // llmrt::error: for a rank that failed and will not arrive.
    void cancel() {
        const std::lock_guard<std::mutex> lock(mutex_);
        aborted_ = true;
        wake_.notify_all();
    }
    bool aborted() const {
        const std::lock_guard<std::mutex> lock(mutex_);
        return aborted_;
    }

private:
    struct slot {
        const float* send = nullptr;
        float* data = nullptr;
        std::size_t count = 0, recv_count = 0;
    };

    class member final : public communicator {
    public:
        member(local_group& g, int32_t r) : g_(&g), rank_(r) {}
        int32_t rank() const noexcept override { return rank_; }
        int32_t size() const noexcept override { return g_->size_; }
        void all_reduce(float* data, std::size_t count) override { g_->all_reduce(rank_, data, count); }
        void all_gather(const float* send, std::size_t count, float* recv, std::size_t recv_count) override {
            g_->all_gather(rank_, send, count, recv, recv_count);
        }

    private:
        local_group* g_;
        int32_t rank_;
    };

    // Returns once every rank has arrived; llmrt::error when the group is (or gets) aborted.
    void barrier(const char* what) {
        std::unique_lock<std::mutex> lock(mutex_);
        const uint64_t generation = generation_;
        if (!aborted_ && ++arrived_ == size_) {
            arrived_ = 0;
            ++generation_;
            wake_.notify_all();
            return;
        }
        wake_.wait(lock, [&] { return aborted_ || generation_ != generation; });
        check(generation_ != generation, errc::invalid_argument, [&] {
            return std::string("comm::local_group: ") + what + " aborted: another rank failed and will not take part";
        });
    }

    void all_reduce(int32_t r, float* data, std::size_t count) {
        slots_[std::size_t(r)] = slot{data, data, count, count};
        barrier("all_reduce");
        for (int32_t q = 0; q < size_; ++q)  // every rank compares the same values: all throw or none
            check(slots_[std::size_t(q)].count == slots_[0].count, errc::shape_mismatch, [&] {
                return "comm::local_group: all_reduce of " + std::to_string(slots_[std::size_t(q)].count) +
                       " floats on rank " + std::to_string(q) + " and " + std::to_string(slots_[0].count) +
                       " on rank 0; every rank must reduce the same count";
            });
        if (r == 0 && sum_.size() < count) sum_.resize(count);
        barrier("all_reduce");
        const std::size_t begin = count * std::size_t(r) / std::size_t(size_);
        const std::size_t end = count * std::size_t(r + 1) / std::size_t(size_);
        for (std::size_t i = begin; i < end; ++i) {
            float s = slots_[0].send[i];
            for (int32_t q = 1; q < size_; ++q) s += slots_[std::size_t(q)].send[i];
            sum_[i] = s;
        }
        barrier("all_reduce");
        if (count) std::memcpy(data, sum_.data(), count * sizeof(float));
        // The next collective's first barrier keeps sum_ until every rank has copied it.
    }

    void all_gather(int32_t r, const float* send, std::size_t count, float* recv, std::size_t recv_count) {
        slots_[std::size_t(r)] = slot{send, recv, count, recv_count};
        barrier("all_gather");
        std::size_t total = 0;
        for (const slot& s : slots_) total += s.count;
        for (int32_t q = 0; q < size_; ++q)
            check(slots_[std::size_t(q)].recv_count == total, errc::shape_mismatch, [&] {
                return "comm::local_group: all_gather into " + std::to_string(slots_[std::size_t(q)].recv_count) +
                       " floats on rank " + std::to_string(q) + "; the ranks send " + std::to_string(total) + " in all";
            });
        std::size_t at = 0;
        for (const slot& s : slots_) {
            if (s.count) std::memcpy(recv + at, s.send, s.count * sizeof(float));
            at += s.count;
        }
        barrier("all_gather");  // the send buffers stay untouched until every rank has read them
    }

    int32_t size_;
    std::vector<std::unique_ptr<member>> ranks_;
    std::vector<slot> slots_;
    std::vector<float> sum_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    int32_t arrived_ = 0;
    uint64_t generation_ = 0;
    bool aborted_ = false;
};

// Runs fn(communicator&) for every rank of `group` on a thread of its own (comm/rank_threads.hpp)
// and waits for all of them. When one throws, the group is aborted (see above) and, after every
// thread has ended, the error of the first rank that failed on its own (not from the abort) is
// rethrown.
template <class Fn>
void run_ranks(local_group& group, Fn&& fn) {
    rank_threads threads(group.size(), [&group] { group.cancel(); });
    threads.run([&](int32_t r) { fn(group.rank(r)); });
}

}  // namespace llmrt::comm
