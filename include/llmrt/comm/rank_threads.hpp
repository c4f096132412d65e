// comm::rank_threads: one thread per rank of a tensor-parallel group, kept for the group's life,
// that runs the ranks' calls in lockstep. Every rank of a group runs the same calls (each one's
// collectives meet the others'), each on a thread of its own so that a rank waiting in a
// collective does not stop the others reaching it; the caller's thread drives them:
//
//   comm::rank_threads threads(n, [&] { group.cancel(); });
//   threads.run([&](int32_t r) { ... });    // fn(r) on rank r's thread, for every r; returns when all have
//
// The same thread runs a rank's every call, so what a backend ties to its creating thread (a
// CUDA device made current by cudaSetDevice) holds for all of them. model/tensor_parallel_llama.hpp
// drives llama models with it; comm::run_ranks (comm/local.hpp) runs one function on each rank.
//
// A rank that throws would leave the others waiting in a collective for it. The first rank to
// throw calls `cancel` (comm::local_group::cancel, or cuda::cancel_nccl_group: what wakes a rank
// waiting in the group's collectives), run waits for every rank's call to end, and rethrows that
// first rank's error on the caller's thread: an llmrt::error as it was, any other exception as an
// llmrt::error naming the rank (std::bad_alloc as out_of_memory). The later errors of the other
// ranks (their collectives cancelled) are dropped. After a failure the group is cancelled for
// good: every later run raises llmrt::error at once, naming the first error; finish() still runs
// (to destroy what each rank made, on its own thread).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "llmrt/core/error.hpp"

namespace llmrt::comm {

class rank_threads {
public:
    // `ranks` threads, started here; cancel (may be empty) is called once, from the thread of the
    // first rank that fails.
    explicit rank_threads(int32_t ranks, std::function<void()> cancel = {}) : cancel_(std::move(cancel)) {
        check(ranks >= 1 && ranks <= 4096, errc::invalid_argument,
              [&] { return "comm::rank_threads: " + std::to_string(ranks) + " ranks; need 1..4096"; });
        threads_.reserve(std::size_t(ranks));
        try {
            for (int32_t r = 0; r < ranks; ++r) threads_.emplace_back([this, r] { serve(r); });
        } catch (...) {
            stop();
            throw;
        }
    }
    rank_threads(const rank_threads&) = delete;
    rank_threads& operator=(const rank_threads&) = delete;
    ~rank_threads() { stop(); }

    int32_t size() const noexcept { return int32_t(threads_.size()); }

    // fn(r) on every rank r's thread; returns once every call has returned, or rethrows the first
    // error (see above). One caller thread at a time.
    void run(const std::function<void(int32_t)>& fn) {
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            check(!failure_, errc::invalid_argument, [&] {
                return "comm::rank_threads: the group was cancelled when rank " + std::to_string(failed_rank_) +
                       " failed (" + failure_text_ + "); its ranks take no more calls";
            });
        }
        dispatch(fn);
        const std::lock_guard<std::mutex> lock(mutex_);
        if (failure_ && failed_in_ == generation_) rethrow_first();
    }

    // fn(r) on every rank's thread even after a failure, its errors dropped: for destroying what
    // the ranks made (a backend, a model) on the threads that made them. Never throws.
    void finish(const std::function<void(int32_t)>& fn) noexcept {
        try {
            dispatch([&](int32_t r) {
                try {
                    fn(r);
                } catch (...) {
                }
            });
        } catch (...) {
        }
    }

    // Whether a rank has failed (the group is cancelled).
    bool failed() const {
        const std::lock_guard<std::mutex> lock(mutex_);
        return bool(failure_);
    }

private:
    // Hands fn to every thread and waits for all of them.
    void dispatch(const std::function<void(int32_t)>& fn) {
        std::unique_lock<std::mutex> lock(mutex_);
        job_ = &fn;
        ++generation_;
        pending_ = size();
        work_.notify_all();
        done_.wait(lock, [&] { return pending_ == 0; });
        job_ = nullptr;
    }

    void serve(int32_t r) {
        uint64_t seen = 0;
        for (;;) {
            const std::function<void(int32_t)>* job = nullptr;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                work_.wait(lock, [&] { return stopping_ || generation_ != seen; });
                if (stopping_) return;
                seen = generation_;
                job = job_;
            }
            try {
                (*job)(r);
            } catch (...) {
                fail(r, std::current_exception());
            }
            const std::lock_guard<std::mutex> lock(mutex_);
            if (--pending_ == 0) done_.notify_all();
        }
    }

    // The first failure is kept, and cancels the group; later ones are its echoes.
    void fail(int32_t r, std::exception_ptr e) {
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            if (failure_) return;
            failure_ = e;
            failed_rank_ = r;
            failed_in_ = generation_;
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                failure_text_ = x.what();
                if (failure_text_.rfind("llmrt: ", 0) == 0) failure_text_.erase(0, 7);  // error's own prefix
            } catch (...) {
                failure_text_ = "an exception that is not a std::exception";
            }
        }
        if (cancel_) {
            try {
                cancel_();
            } catch (...) {  // the first error is the one to report
            }
        }
    }

    [[noreturn]] void rethrow_first() const {
        try {
            std::rethrow_exception(failure_);
        } catch (const error&) {
            throw;
        } catch (const std::bad_alloc&) {
            throw error(errc::out_of_memory, "rank " + std::to_string(failed_rank_) + " of a tensor-parallel group ran out of memory");
        } catch (...) {
            throw error(errc::invalid_argument,
                        "rank " + std::to_string(failed_rank_) + " of a tensor-parallel group failed: " + failure_text_);
        }
    }

    void stop() noexcept {
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
            work_.notify_all();
        }
        for (std::thread& t : threads_)
            if (t.joinable()) t.join();
    }

    std::function<void()> cancel_;
    std::vector<std::thread> threads_;
    mutable std::mutex mutex_;
    std::condition_variable work_, done_;
    const std::function<void(int32_t)>* job_ = nullptr;
    uint64_t generation_ = 0;
    int32_t pending_ = 0;
    bool stopping_ = false;
    std::exception_ptr failure_;
    int32_t failed_rank_ = -1;
    uint64_t failed_in_ = 0;
    std::string failure_text_;
};

}  // namespace llmrt::comm
