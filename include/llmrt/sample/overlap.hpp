// One background thread that runs a single task at a time while the caller does other work: the
// generator's verification of a round runs on it while the draft model drafts the next round.
// Each model keeps to one thread at a time (the target on the worker, the draft on the caller), so
// neither needs to be thread-safe; both must be free of state shared between them (two models on
// their own CUDA streams, or two CPU models).
#pragma once

#include "llmrt/core/cxx20.hpp"

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "llmrt/core/error.hpp"

namespace llmrt::sample {

class overlap_worker {
public:
    overlap_worker() : thread_([this] { loop(); }) {}
    overlap_worker(const overlap_worker&) = delete;
    overlap_worker& operator=(const overlap_worker&) = delete;

    ~overlap_worker() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }

    // Starts task on the worker; one task at a time (wait() for the last one first).
    void start(std::function<void()> task) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            check(!started_, errc::invalid_argument, "overlap_worker: start() again before wait() for the last task");
            task_ = std::move(task);
            started_ = running_ = true;
            failure_ = nullptr;
        }
        wake_.notify_all();
    }

    // Waits for the task start() began; rethrows what it threw.
    void wait() {
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait(lock, [this] { return !running_; });
        started_ = false;
        if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
    }

private:
    void loop() {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            wake_.wait(lock, [this] { return stopping_ || bool(task_); });
            if (!task_) return;  // stopping, nothing left to run
            std::function<void()> task = std::exchange(task_, nullptr);
            lock.unlock();
            std::exception_ptr failure;
            try {
                task();
            } catch (...) {
                failure = std::current_exception();
            }
            lock.lock();
            failure_ = failure;
            running_ = false;
            done_.notify_all();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_, done_;
    std::function<void()> task_;
    std::exception_ptr failure_;
    bool started_ = false;  // from start() until wait()
    bool running_ = false, stopping_ = false;
    std::thread thread_;  // last: it starts once the members it reads exist
};

}  // namespace llmrt::sample
