# A C++17 translation unit that includes llmrt gets one sentence saying llmrt needs C++20, and the
# compiler stops there (include/llmrt/core/cxx20.hpp): at most that error and the stop, never the
# hundreds of errors of the first concept. Run with -DCXX=<compiler> -DINCLUDE=<include dir>
# -DWORK=<scratch dir>.
file(WRITE ${WORK}/cxx17.cpp "#include <llmrt/llmrt.hpp>\nint main() {}\n")
execute_process(COMMAND ${CXX} -std=c++17 -fsyntax-only -I${INCLUDE} ${WORK}/cxx17.cpp
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "a C++17 translation unit that includes <llmrt/llmrt.hpp> compiled")
endif()
string(FIND "${err}" "llmrt needs C++20" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the compiler's messages do not say that llmrt needs C++20:\n${err}")
endif()
string(REGEX MATCHALL "error:" errors "${err}")
list(LENGTH errors count)
if(count GREATER 2)
  message(FATAL_ERROR "${count} errors instead of the one sentence and the stop:\n${err}")
endif()
message(STATUS "one sentence: llmrt needs C++20 (${count} error lines)")
