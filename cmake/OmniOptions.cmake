# Compiler flags for Omni's own targets. Third-party headers come in as SYSTEM includes,
# so -Werror applies to our code only.

add_library(omni_warnings INTERFACE)
target_compile_options(omni_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
  -Woverloaded-virtual -Wconversion
  -Wformat=2 -Wimplicit-fallthrough)
# GCC 12 mistakes Asio's per-coroutine-frame operator new/delete pair for a mismatch once
# frames are inlined into each other (a false positive; clang and newer GCC are quiet).
# GCC 12 at -O3 also reports impossible memcpy overlaps inside std::string (GCC bug 105329).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(omni_warnings INTERFACE -Wno-mismatched-new-delete -Wno-restrict)
endif()
if(OMNI_WERROR)
  target_compile_options(omni_warnings INTERFACE -Werror)
endif()

if(OMNI_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# omni_target(<name>): applies the project's warning set and include layout to a target.
function(omni_target name)
  target_link_libraries(${name} PRIVATE omni_warnings)
endfunction()

# omni_test(<name> SOURCES ... LIBS ... [LABELS ...]): one GoogleTest executable, its tests
# discovered into CTest. Label "unit" for pure tests, "integration" for those that spawn
# processes; CI runs the "unit" label a second time under sanitizers.
function(omni_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gmock GTest::gtest_main omni_warnings)
  # Test-only helpers shared by the suites: #include "support/....hpp".
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  gtest_discover_tests(${name}
    PROPERTIES LABELS "${T_LABELS}"
    DISCOVERY_TIMEOUT 60
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
endfunction()

# omni_add_subdirectories([FIRST dir...]): adds every child folder that has a CMakeLists.txt,
# the FIRST ones first, the rest in name order, so a new component needs no edit here.
function(omni_add_subdirectories)
  cmake_parse_arguments(A "" "" "FIRST" ${ARGN})
  foreach(dir ${A_FIRST})
    add_subdirectory(${dir})
  endforeach()
  file(GLOB children RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/*)
  list(SORT children)
  foreach(dir ${children})
    if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/${dir}
       AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/CMakeLists.txt
       AND NOT dir IN_LIST A_FIRST)
      add_subdirectory(${dir})
    endif()
  endforeach()
endfunction()
