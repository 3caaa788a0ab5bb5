// tessera_enable_cpu_tiles: the arch_prctl request for the AMX tile data state.
#include "tessera/runtime/cpu_tiles.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

extern "C" void tessera_enable_cpu_tiles(void) {
#if defined(__linux__) && defined(__x86_64__)
    static std::atomic<bool> granted{false};
    if (granted.load(std::memory_order_acquire))
        return;
    // Linux's ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA (asm/prctl.h; not in every libc's
    // headers). Granting twice is harmless, so racing first calls need no lock.
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
        std::fprintf(stderr, "tessera: the operating system refuses the AMX tile state that this "
                             "code was compiled for (arch_prctl ARCH_REQ_XCOMP_PERM failed)\n");
        std::abort();
    }
    granted.store(true, std::memory_order_release);
#endif
}
