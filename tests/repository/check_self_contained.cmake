# Fails when a source, build or documentation file of the repository refers to the team folder
# that sits beside a developer's checkout and is absent from a user's clone. Anything the
# repository needs (test data, design notes) must live inside it.
#
# cmake -DROOT=<repository root> -P check_self_contained.cmake
#
# A CMake script rather than grep, so that the test runs wherever CMake does.
cmake_minimum_required(VERSION 3.20)

if(NOT DEFINED ROOT OR NOT IS_DIRECTORY "${ROOT}")
  message(FATAL_ERROR "check_self_contained: pass -DROOT=<repository root> (got '${ROOT}')")
endif()
file(REAL_PATH "${ROOT}" ROOT)

# The needles are assembled from pieces, so that this script does not find itself.
set(_up "..")
set(_team "shared")
set(needles "${_up}/${_team}" "/${_team}/testdata")

# The folders holding tracked sources; the top level is scanned without recursion so that build
# folders (build*/), .git and local binaries (devbin/) are never walked.
set(folders include tests examples bench scripts cmake docs shaders .ci)
set(patterns CMakeLists.txt *.cmake *.cmake.in *.md *.hpp *.cpp *.cu *.cuh *.sh *.py *.glsl *.comp)

set(files "")
foreach(pattern IN LISTS patterns)
  file(GLOB top RELATIVE "${ROOT}" "${ROOT}/${pattern}")
  list(APPEND files ${top})
  foreach(folder IN LISTS folders)
    file(GLOB_RECURSE found RELATIVE "${ROOT}" "${ROOT}/${folder}/${pattern}")
    list(APPEND files ${found})
  endforeach()
endforeach()
# .ci holds scripts named without an extension (.ci/run); every file there is a script.
file(GLOB_RECURSE ci_files RELATIVE "${ROOT}" "${ROOT}/.ci/*")
list(APPEND files ${ci_files})
list(REMOVE_DUPLICATES files)
list(SORT files)

# Generated or local folders inside the scanned ones (a build made under tests/, a Python cache).
list(FILTER files EXCLUDE REGEX "(^|/)(build[^/]*|\\.git|devbin|__pycache__)/")

set(offenders "")
foreach(file IN LISTS files)
  file(READ "${ROOT}/${file}" text)
  foreach(needle IN LISTS needles)
    set(rest "${text}")
    set(consumed 0)
    string(FIND "${rest}" "${needle}" at)
    while(at GREATER -1)
      # Line number of the hit: one more than the newlines before it.
      math(EXPR end "${consumed} + ${at}")
      string(SUBSTRING "${text}" 0 ${end} before)
      string(REGEX REPLACE "[^\n]" "" newlines "${before}")
      string(LENGTH "${newlines}" line)
      math(EXPR line "${line} + 1")
      # The line itself, so that the report says what to fix without opening the file.
      string(FIND "${before}" "\n" line_start REVERSE)
      math(EXPR line_start "${line_start} + 1")
      string(SUBSTRING "${before}" ${line_start} -1 head)
      string(SUBSTRING "${rest}" ${at} -1 tail)
      string(FIND "${tail}" "\n" line_end)
      string(SUBSTRING "${tail}" 0 ${line_end} tail)
      string(STRIP "${head}${tail}" content)
      string(SUBSTRING "${content}" 0 160 content)
      # Semicolons would split the list entry.
      string(REPLACE ";" "," content "${content}")
      list(APPEND offenders "${file}:${line}: ${content}")
      string(LENGTH "${needle}" needle_length)
      math(EXPR skip "${at} + ${needle_length}")
      string(SUBSTRING "${rest}" ${skip} -1 rest)
      math(EXPR consumed "${consumed} + ${skip}")
      string(FIND "${rest}" "${needle}" at)
    endwhile()
  endforeach()
endforeach()

list(LENGTH files scanned)
if(offenders)
  # A line holding both needles is one offence.
  list(REMOVE_DUPLICATES offenders)
  list(LENGTH offenders count)
  string(REPLACE ";" "\n  " listing "${offenders}")
  list(JOIN needles "' or '" needle_text)
  message(FATAL_ERROR "${count} line(s) refer to a path outside the repository "
                      "('${needle_text}'); scanned ${scanned} files:\n  ${listing}\n")
endif()
message(STATUS "scanned ${scanned} files: none refers to a path outside the repository")
