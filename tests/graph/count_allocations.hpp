// A count of every global operator new since the program started. Linking count_allocations.cpp
// into a test program replaces the global allocation functions with counting ones.
#pragma once

namespace llmrt::test {
long allocation_count() noexcept;
}
