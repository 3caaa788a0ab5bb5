// Whether this test binary is instrumented by AddressSanitizer (scripts/test.sh --sanitize).
// Tests whose figures the instrumentation changes by design ask it: ASan's quarantine holds
// freed memory back from reuse (resident size grows until it is full) and its shadow memory
// takes address space.
#pragma once

#if defined(__SANITIZE_ADDRESS__) // GCC
#define TESSERA_TEST_ASAN 1
#elif defined(__has_feature) // Clang
#if __has_feature(address_sanitizer)
#define TESSERA_TEST_ASAN 1
#endif
#endif

namespace tessera::testing {

/// The C compiler command a test compiles programs with that link a model library: plain `cc`,
/// or under the sanitizers the compiler of the build with their runtime (the library calls it).
inline const char* c_driver() {
#if defined(TESSERA_TEST_C_DRIVER) && defined(__clang__)
    // Clang links UBSan's C++ part only for C++ programs; the library's runtime is C++.
    return TESSERA_TEST_C_DRIVER " -fsanitize-link-c++-runtime -lstdc++";
#elif defined(TESSERA_TEST_C_DRIVER)
    return TESSERA_TEST_C_DRIVER;
#else
    return "cc";
#endif
}

/// True in a build with AddressSanitizer.
constexpr bool built_with_address_sanitizer() {
#ifdef TESSERA_TEST_ASAN
    return true;
#else
    return false;
#endif
}

/// How a child process that dies of a segmentation fault is described: under AddressSanitizer
/// its handler catches the fault, prints its report and aborts (scripts/test.sh --sanitize sets
/// abort_on_error), so the child dies of signal 6 there and of signal 11 elsewhere.
constexpr const char* segfault_death() {
    return built_with_address_sanitizer() ? "signal 6" : "signal 11";
}

} // namespace tessera::testing
