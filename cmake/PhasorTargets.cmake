# Helpers that give every phasor target the same compile settings.

# Warnings as errors for the project's own code (third-party headers are
# included as SYSTEM and stay out of it).
function(phasor_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
                                           -Wnon-virtual-dtor -Werror)
endfunction()

# phasor_library(NAME SOURCES... DEPS ... PRIVATE_DEPS ...): one module = one
# library target. DEPS are what the module's public headers include (they
# reach every user); PRIVATE_DEPS only its .cc files (their flags and headers
# stay inside the module).
function(phasor_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  if(ARG_PRIVATE_DEPS)
    target_link_libraries(${name} PRIVATE ${ARG_PRIVATE_DEPS})
  endif()
  phasor_warnings(${name})
endfunction()

# phasor_test(NAME SOURCES... DEPS ...): a GoogleTest binary registered with ctest.
function(phasor_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  phasor_warnings(${name})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
                       PROPERTIES TIMEOUT ${ARG_TIMEOUT}
                       WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endfunction()

# phasor_benchmark(NAME SOURCES... DEPS ...): a Google Benchmark program (not run by ctest).
function(phasor_benchmark name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} benchmark::benchmark)
  phasor_warnings(${name})
endfunction()
