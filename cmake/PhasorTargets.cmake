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
# stay inside the module). A module's sources compile as a unity build when
# PHASOR_UNITY_BUILD is on, so names in their anonymous namespaces must be
# distinct across the module's files.
function(phasor_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES UNITY_BUILD ${PHASOR_UNITY_BUILD})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  if(ARG_PRIVATE_DEPS)
    target_link_libraries(${name} PRIVATE ${ARG_PRIVATE_DEPS})
  endif()
  phasor_warnings(${name})
endfunction()

# The third-party headers every test reads (GoogleTest and gMock, JSON,
# abseil, protobuf, cppzmq), precompiled once for the whole suite: each test
# executable reuses the header of phasor_test_pch, an object library compiled
# with the tests' flags (-O1; GCC rejects a header precompiled with other
# flags, and -Winvalid-pch with -Werror turns that into an error). Only system
# headers go here: the project's own headers change too often.
set(PHASOR_TEST_PCH_HEADERS
    <gtest/gtest.h> <gmock/gmock.h> <nlohmann/json.hpp>
    <absl/status/status.h> <absl/status/statusor.h> <absl/strings/str_cat.h>
    <absl/strings/str_format.h> <zmq.hpp>
    <google/protobuf/message.h> <google/protobuf/generated_message_reflection.h>
    <google/protobuf/repeated_field.h> <google/protobuf/map.h> <google/protobuf/map_entry.h>
    <google/protobuf/map_field_inl.h> <google/protobuf/util/message_differencer.h>
    <algorithm> <chrono> <filesystem> <fstream> <map> <random> <sstream> <string> <thread>
    <vector>)

# Test code is set-up and assertions (the code under test comes from the
# modules, built as configured): -O1 compiles it a quarter faster than -O2.
function(phasor_test_options target)
  phasor_warnings(${target})
  if(CMAKE_BUILD_TYPE MATCHES "^(RelWithDebInfo|Release)$")
    target_compile_options(${target} PRIVATE -O1)
  endif()
endfunction()

# phasor_test(NAME SOURCES... DEPS ...): a GoogleTest binary registered with
# ctest. Its sources compile as one unity file when PHASOR_UNITY_BUILD is on
# (names in the anonymous namespaces of one test's files are distinct; helpers
# two files need live in tests/testing/), with the suite's precompiled header.
function(phasor_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS" ${ARGN})
  if(NOT TARGET phasor_test_pch)
    file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/phasor_test_pch.cc
         CONTENT "// The precompiled header of the tests.\n" @ONLY)
    add_library(phasor_test_pch OBJECT ${PROJECT_BINARY_DIR}/phasor_test_pch.cc)
    target_link_libraries(phasor_test_pch PRIVATE GTest::gtest GTest::gmock
                          nlohmann_json::nlohmann_json absl::status absl::statusor absl::strings)
    phasor_test_options(phasor_test_pch)
    target_precompile_headers(phasor_test_pch PRIVATE ${PHASOR_TEST_PCH_HEADERS})
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  phasor_test_options(${name})
  target_precompile_headers(${name} REUSE_FROM phasor_test_pch)
  set_target_properties(${name} PROPERTIES UNITY_BUILD ${PHASOR_UNITY_BUILD} UNITY_BUILD_BATCH_SIZE 0)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
                       PROPERTIES TIMEOUT ${ARG_TIMEOUT}
                       WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endfunction()

# phasor_program(TARGET): a program phasor ships (or a benchmark of one)
# links the configured allocator (PHASOR_ALLOCATOR in CMakeLists.txt).
function(phasor_program target)
  if(PHASOR_ALLOCATOR_USED STREQUAL "jemalloc")
    target_link_libraries(${target} PRIVATE PkgConfig::JEMALLOC)
  endif()
endfunction()

# phasor_benchmark(NAME SOURCES... DEPS ...): a Google Benchmark program (not
# run by ctest), with the programs' allocator, so that it measures what ships.
function(phasor_benchmark name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} benchmark::benchmark)
  phasor_warnings(${name})
  phasor_program(${name})
endfunction()

# The package database a configure watches while a program is missing
# (phasor_find_program): installing any package re-configures the tree at its
# next build, so a test whose program arrived later is registered for real.
set(PHASOR_PACKAGE_DB /var/lib/dpkg/status CACHE FILEPATH
    "File whose change re-configures the build while a program a test needs is missing")

# phasor_find_program(VAR NAMES name... PACKAGE package): find_program, and
# while the program is missing the build re-configures whenever the package
# database changes. (A NOTFOUND result is searched again at every configure.)
function(phasor_find_program var)
  cmake_parse_arguments(ARG "" "PACKAGE" "NAMES" ${ARGN})
  find_program(${var} NAMES ${ARG_NAMES})
  if(NOT ${var} AND EXISTS ${PHASOR_PACKAGE_DB})
    set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PHASOR_PACKAGE_DB})
  endif()
endfunction()

# phasor_missing_test(NAME PROGRAM what PACKAGE packages): the test NAME
# cannot be built or run because `what` was not found when the tree was
# configured. It is registered all the same, as a test that fails and names
# the Debian packages to install (scripts/install-deps.sh installs them), so a
# missing program never makes the suite smaller without a failure. The
# package database is watched, so once they are installed the next build
# re-configures and the real test replaces this one.
function(phasor_missing_test name)
  cmake_parse_arguments(ARG "" "PROGRAM;PACKAGE" "" ${ARGN})
  set(message "${name}: cannot run: ${ARG_PROGRAM} was not found when this build was configured; install it (apt-get install ${ARG_PACKAGE}, or scripts/install-deps.sh), and the next build registers the real test")
  add_test(NAME ${name} COMMAND sh -c "echo \"$1\" >&2; exit 1" phasor-missing-program "${message}")
  set_tests_properties(${name} PROPERTIES LABELS missing-program)
  if(EXISTS ${PHASOR_PACKAGE_DB})
    set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PHASOR_PACKAGE_DB})
  endif()
endfunction()

# phasor_fuzzer(NAME SOURCES... [UNITY_SOURCES...] LIBS... CORPUS... [DEFINES...]
# [DEPENDS target...] [MAX_LEN n]): a libFuzzer target built by clang++ with
# -fsanitize=fuzzer,address,undefined from the listed sources (the code under
# test is compiled here, instrumented; LIBS are linked as built, by target name
# or file), when clang++ is installed; ctest runs it briefly on its seed
# corpora (CORPUS, read-only) with new inputs going to a scratch corpus in the
# build tree. bench/fuzz.sh runs every such target longer. DEFINES are
# NAME=VALUE macros for the sources; DEPENDS names targets to build first
# (e.g. one that generates a corpus).
#
# Each of SOURCES compiles to its own object with a depfile (so a header
# change rebuilds exactly what includes it); UNITY_SOURCES compile together as
# one object (a generated file that includes them, when PHASOR_UNITY_BUILD is
# on: the headers and templates they share are parsed and instrumented once;
# they follow the modules' unity rule). Fuzzers of one directory that list the
# same source, or the same UNITY_SOURCES, with the same DEFINES share its
# object: the placer's two fuzzers compile the placer once.
# The abseil libraries a fuzzer built from sources links (shared, so listing
# one a target does not need costs nothing).
set(PHASOR_FUZZ_ABSL absl::status absl::statusor absl::strings absl::cord absl::str_format_internal
    absl::raw_logging_internal absl::int128 absl::throw_delegate absl::base absl::time absl::time_zone
    absl::hash absl::raw_hash_set absl::city absl::low_level_hash absl::synchronization
    absl::graphcycles_internal absl::stacktrace absl::symbolize absl::malloc_internal
    absl::debugging_internal absl::demangle_internal absl::spinlock_wait)
set(PHASOR_FUZZ_SANITIZE -fsanitize=address,undefined -fno-sanitize-recover=undefined)
function(phasor_fuzzer name)
  cmake_parse_arguments(ARG "" "MAX_LEN" "SOURCES;UNITY_SOURCES;LIBS;CORPUS;DEFINES;DEPENDS" ${ARGN})
  phasor_find_program(PHASOR_CLANGXX NAMES clang++ clang++-14 PACKAGE clang)
  if(NOT PHASOR_CLANGXX)
    phasor_missing_test(${name} PROGRAM clang++ PACKAGE "clang libclang-rt-14-dev")
    return()
  endif()
  set(link)
  foreach(lib ${ARG_LIBS})
    if(TARGET ${lib})
      list(APPEND link $<TARGET_FILE:${lib}>)
    elseif(lib MATCHES "^[-/]")
      list(APPEND link ${lib})
    else()
      list(APPEND link -l${lib})
    endif()
  endforeach()
  set(defines)
  foreach(d ${ARG_DEFINES})
    list(APPEND defines -D${d})
  endforeach()
  # The objects: one per (source, DEFINES), named by a hash of both, defined
  # once per directory (a directory property remembers which exist). The
  # unity group is one more such source: a generated file including its list.
  string(SHA1 flavour "${ARG_DEFINES}")
  string(SUBSTRING ${flavour} 0 8 flavour)
  get_directory_property(defined PHASOR_FUZZ_OBJECTS)
  set(sources ${ARG_SOURCES})
  if(ARG_UNITY_SOURCES AND PHASOR_UNITY_BUILD)
    string(SHA1 key "${ARG_UNITY_SOURCES}")
    string(SUBSTRING ${key} 0 8 key)
    set(unity ${CMAKE_CURRENT_BINARY_DIR}/fuzz_objects/unity-${key}.cc)
    set(text "// Generated by phasor_fuzzer: one instrumented object for these sources.\n")
    foreach(src ${ARG_UNITY_SOURCES})
      string(APPEND text "#include \"${src}\"\n")
    endforeach()
    file(CONFIGURE OUTPUT ${unity} CONTENT "${text}" @ONLY)
    list(APPEND sources ${unity})
  else()
    list(APPEND sources ${ARG_UNITY_SOURCES})
  endif()
  set(objects)
  foreach(src ${sources})
    get_filename_component(stem ${src} NAME_WE)
    string(SHA1 key "${src}")
    string(SUBSTRING ${key} 0 8 key)
    set(obj fuzz_objects/${stem}-${key}-${flavour}.o)
    list(APPEND objects ${CMAKE_CURRENT_BINARY_DIR}/${obj})
    if(NOT obj IN_LIST defined)
      add_custom_command(
        OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/${obj}
        COMMAND ${PHASOR_CLANGXX} -std=c++20 -O1 -g1 -fsanitize=fuzzer-no-link ${PHASOR_FUZZ_SANITIZE}
                -I${PROJECT_SOURCE_DIR} -isystem ${PROJECT_BINARY_DIR}/generated ${defines}
                -MD -MF ${CMAKE_CURRENT_BINARY_DIR}/${obj}.d -c ${src} -o ${CMAKE_CURRENT_BINARY_DIR}/${obj}
        DEPENDS ${src}
        DEPFILE ${CMAKE_CURRENT_BINARY_DIR}/${obj}.d
        COMMENT "clang++ (libFuzzer, ASan+UBSan) ${obj}"
        VERBATIM)
      list(APPEND defined ${obj})
    endif()
  endforeach()
  set_directory_properties(PROPERTIES PHASOR_FUZZ_OBJECTS "${defined}")
  add_custom_command(
    OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/${name}
    COMMAND ${PHASOR_CLANGXX} -fsanitize=fuzzer ${PHASOR_FUZZ_SANITIZE} ${objects} ${link}
            -o ${CMAKE_CURRENT_BINARY_DIR}/${name}
    DEPENDS ${objects}
    COMMENT "clang++ libFuzzer target ${name}"
    VERBATIM)
  add_custom_target(${name}_fuzzer ALL DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/${name})
  foreach(t ${ARG_DEPENDS})
    add_dependencies(${name}_fuzzer ${t})
  endforeach()
  foreach(lib ${ARG_LIBS})
    if(TARGET ${lib})
      get_target_property(type ${lib} TYPE)
      if(NOT type STREQUAL "INTERFACE_LIBRARY" AND NOT type STREQUAL "UNKNOWN_LIBRARY"
         AND NOT type STREQUAL "SHARED_LIBRARY")
        add_dependencies(${name}_fuzzer ${lib})
      endif()
    endif()
  endforeach()
  set(scratch ${CMAKE_CURRENT_BINARY_DIR}/corpus_${name})
  file(MAKE_DIRECTORY ${scratch})
  set(max_len)
  if(ARG_MAX_LEN)
    set(max_len -max_len=${ARG_MAX_LEN})
  endif()
  add_test(NAME ${name}
           COMMAND ${CMAKE_CURRENT_BINARY_DIR}/${name} -runs=20000 -max_total_time=20 -seed=1 -rss_limit_mb=4096 ${max_len}
                   ${scratch} ${ARG_CORPUS})
  set_tests_properties(${name} PROPERTIES TIMEOUT 120)
endfunction()
