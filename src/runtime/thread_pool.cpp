// The process-wide thread pool: a static partition that idle threads steal from, a
// participating caller, spin-then-sleep workers.
//
// Each participant of a launch (the caller and its workers) owns a range of the iterations, one
// 64-bit word on its own cache line. It takes pieces from the front of its range; one that runs
// out takes the back half of another's, so a thread that the system slows or deschedules (a
// busy neighbour on its CPU, a worker still waking from sleep) delays the launch by at most the
// piece it holds, not by its whole share. Without such a thread each runs its own share, in
// order, as with static chunks. A launch is done when all its iterations ran: the caller does
// not wait for a worker that found nothing to do.
//
// A worker is woken by a ticket in its share; the launching thread touches the worker's mutex
// only when the worker has gone to sleep, so a launch to spinning workers is a few atomic
// stores. Completion is one shared counter of iterations not yet run that the caller spins on
// (then sleeps on) in the same way.
#include "tessera/runtime/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <pthread.h>
#include <sched.h>

namespace tessera::runtime {

namespace {

/// How long an idle thread spins before sleeping: long enough to bridge the gap between
/// back-to-back kernel launches, short enough that an idle pool leaves the CPU quickly.
constexpr std::chrono::microseconds kSpinTime{100};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/// How long a thread that has run its share waits for the others to finish theirs before it
/// takes part of theirs: a healthy thread finishes within it (so small kernels keep the static
/// partition's cost: a thief costs transfers of the shares' cache lines, and stealing at once
/// made a launch of 64 empty iterations on 2 Zen 3 threads take 0.55 us against 0.16 with
/// static chunks), while a descheduled or sleeping one takes 10 us to milliseconds.
constexpr std::chrono::nanoseconds kStealDelay{2000};

/// A thread takes its share in this many pieces: a stalled thread holds up the launch by one
/// of them at most, and each costs an atomic claim (16 empty ones cost a launch of 64 empty
/// iterations on 2 Zen 3 threads 0.2-0.3 us more than one chunk each).
constexpr int64_t kPiecesPerShare = 4;

/// Whether the pool runs more threads than the process has CPUs: then a spinning thread may
/// hold the core that the thread it waits for needs, and spins give the core away.
std::atomic<bool> g_oversubscribed{false};

/// Spins until pred() holds or `limit` passes; returns whether pred() held.
template <typename Pred> bool spin_until(Pred pred, std::chrono::nanoseconds limit = kSpinTime) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        for (int i = 0; i < 128; ++i) {
            if (pred())
                return true;
            cpu_relax();
        }
        if (std::chrono::steady_clock::now() >= deadline)
            return pred();
        // Only when threads outnumber CPUs: otherwise a yield hands the core to whatever else
        // is runnable for a whole time slice, and the launch waits for it (conv_bn_relu at 2
        // threads beside one busy process: 0.36 ms with a yield here, 0.136 without).
        if (g_oversubscribed.load(std::memory_order_relaxed))
            std::this_thread::yield();
    }
}

/// Reads this process's affinity mask into `set`; false when the system does not say.
bool process_affinity(cpu_set_t& set) {
    CPU_ZERO(&set);
    return sched_getaffinity(0, sizeof(set), &set) == 0;
}

/// The machine's hardware threads, at least 1: what a process may use when its mask is unknown.
int hardware_threads() {
    const unsigned hc = std::thread::hardware_concurrency();
    return hc > 0 ? static_cast<int>(hc) : 1;
}

/// The CPUs this process may run on (its affinity mask), at least 1.
int available_cpus() {
    cpu_set_t set;
    return process_affinity(set) ? std::max(1, CPU_COUNT(&set)) : hardware_threads();
}

/// True on a thread that is running a chunk; a launch from there runs serially.
thread_local bool t_in_parallel = false;

const std::vector<int>& core_cpus();
void pin_thread(pthread_t thread, int cpu);
void pin_thread(pthread_t thread, const cpu_set_t& set);

/// A worker's sleeping place.
struct Slot {
    std::mutex mu;
    std::condition_variable cv;
};

/// One participant's part of a launch, on one cache line, so that a worker woken for a launch
/// reads it with one transfer: its range of units [begin, end), packed as begin << 32 | end,
/// and the launch itself. A range is empty (begin >= end) outside launches, since a launch
/// ends only when every unit has run. The launch fields are written before the range is
/// published (release) and read after a claim of it (acquire): a thief reads the launch from
/// the share it took units from.
struct alignas(64) Share {
    std::atomic<uint64_t> range{0};
    std::atomic<uint64_t> ticket{0}; ///< Bumped once per launch the worker joins (and to stop).
    std::atomic<TesseraParallelChunk> fn{nullptr};
    std::atomic<void*> ctx{nullptr};
    std::atomic<int64_t> n{0};
    std::atomic<int64_t> unit{1};   ///< Iterations per unit.
    std::atomic<uint32_t> first{0}; ///< Where the range began (still there: owner not started).
    std::atomic<int32_t> active{0}; ///< Participants of the launch: the shares a thief looks at.
    /// The launch the owner was asked to join: a worker still in an earlier one when a launch
    /// of fewer threads starts must not steal from it.
    std::atomic<uint32_t> launch{0};
    std::atomic<bool> sleeping{false};
    std::atomic<bool> stop{false};

    static uint64_t pack(uint64_t begin, uint64_t end) { return begin << 32 | end; }
    static uint64_t begin_of(uint64_t w) { return w >> 32; }
    static uint64_t end_of(uint64_t w) { return w & 0xffffffffu; }
};
static_assert(sizeof(Share) == 64, "a share is one cache line");

/// Participants that own a share; a launch asks for at most this many threads.
constexpr int kMaxParticipants = 256;

/// Units of a launch fit 31 bits: above that each unit is several iterations.
constexpr int64_t kMaxUnits = int64_t{1} << 31;

class Pool {
  public:
    Pool() : nthreads_(default_num_threads()) {
        // A forked child (the tuner measures candidates in child processes) has none of the
        // parent's workers: it must start its own instead of waiting for ghosts.
        pthread_atfork(&Pool::before_fork, &Pool::after_fork_parent, &Pool::after_fork_child);
    }
    ~Pool() {
        std::lock_guard<std::mutex> lock(launch_mu_);
        stop_workers();
    }

    void set_num_threads(int n) {
        if (t_in_parallel)
            return;
        if (n <= 0)
            n = default_num_threads();
        std::lock_guard<std::mutex> lock(launch_mu_);
        nthreads_.store(n, std::memory_order_relaxed);
        g_oversubscribed.store(n > available_cpus(), std::memory_order_relaxed);
        refused_ = false; // a new count asks the system again
    }

    int num_threads() const { return nthreads_.load(std::memory_order_relaxed); }

    void bind(bool on) {
        if (t_in_parallel)
            return;
        std::lock_guard<std::mutex> lock(launch_mu_);
        if (on == bound_)
            return;
        if (on) {
            core_cpus(); // read (and cached) while the caller still has its whole mask
            if (!process_affinity(free_mask_))
                return;
            pin_thread(pthread_self(), cpu_of(0));
            for (size_t w = 0; w < threads_.size(); ++w)
                pin_thread(threads_[w].native_handle(), cpu_of(w + 1));
        } else {
            pin_thread(pthread_self(), free_mask_);
            for (std::thread& t : threads_)
                pin_thread(t.native_handle(), free_mask_);
        }
        bound_ = on;
    }

    void run(int64_t n, TesseraParallelChunk fn, void* ctx) {
        if (n <= 0)
            return;
        if (t_in_parallel) {
            fn(0, n, ctx);
            return;
        }
        std::lock_guard<std::mutex> lock(launch_mu_);
        const int64_t asked = std::min<int64_t>(
            {nthreads_.load(std::memory_order_relaxed), n, int64_t{kMaxParticipants}});
        if (asked <= 1) {
            run_chunk(fn, 0, n, ctx);
            return;
        }
        // Fewer workers than asked when the system refuses threads (a memory or process limit):
        // the launch runs on those there are.
        const int workers = ensure_workers(static_cast<int>(asked) - 1);
        const int64_t active = std::min<int64_t>(asked, workers + 1);
        if (active <= 1) {
            run_chunk(fn, 0, n, ctx);
            return;
        }
        const int64_t unit = (n + kMaxUnits - 1) / kMaxUnits;
        const int64_t units = (n + unit - 1) / unit;
        const uint32_t id = launch_.fetch_add(1, std::memory_order_relaxed) + 1;
        remaining_.store(units, std::memory_order_relaxed);
        // Balanced static partition: the first units % active shares get one extra unit.
        const int64_t each = units / active, extra = units % active;
        auto share_begin = [&](int64_t p) { return p * each + std::min(p, extra); };
        for (int64_t p = 0; p < active; ++p) {
            Share& sh = shares_[p];
            sh.fn.store(fn, std::memory_order_relaxed);
            sh.ctx.store(ctx, std::memory_order_relaxed);
            sh.n.store(n, std::memory_order_relaxed);
            sh.unit.store(unit, std::memory_order_relaxed);
            sh.active.store(static_cast<int>(active), std::memory_order_relaxed);
            sh.first.store(static_cast<uint32_t>(share_begin(p)), std::memory_order_relaxed);
            sh.launch.store(id, std::memory_order_relaxed);
            sh.range.store(Share::pack(static_cast<uint64_t>(share_begin(p)),
                                       static_cast<uint64_t>(share_begin(p + 1))),
                           std::memory_order_release);
            if (p == 0)
                continue;
            sh.ticket.fetch_add(1, std::memory_order_seq_cst);
            if (sh.sleeping.load(std::memory_order_seq_cst)) {
                // The worker holds its mutex until it waits, so taking it here means the
                // notify below cannot be lost.
                Slot& slot = *slots_[p - 1];
                { std::lock_guard<std::mutex> g(slot.mu); }
                slot.cv.notify_one();
            }
        }
        t_in_parallel = true;
        participate(0);
        t_in_parallel = false;
        wait_done();
    }

  private:
    // No launch is in progress across a fork, and no worker holds done_mu_.
    static void before_fork();
    static void after_fork_parent();
    static void after_fork_child();

    static void run_chunk(TesseraParallelChunk fn, int64_t b, int64_t e, void* ctx) {
        t_in_parallel = true;
        fn(b, e, ctx);
        t_in_parallel = false;
    }

    /// Takes up to `want` units from the front (or the back) of sh's range; returns them as
    /// [*begin, *end), or false when it is empty. acq_rel: a successful claim sees the launch
    /// written before the range was published.
    static bool claim(Share& sh, bool front, int64_t want, uint64_t* begin, uint64_t* end) {
        uint64_t w = sh.range.load(std::memory_order_acquire);
        for (;;) {
            const uint64_t b = Share::begin_of(w), e = Share::end_of(w);
            if (b >= e)
                return false;
            const uint64_t take =
                std::min<uint64_t>(e - b, static_cast<uint64_t>(std::max<int64_t>(1, want)));
            const uint64_t next = front ? Share::pack(b + take, e) : Share::pack(b, e - take);
            if (sh.range.compare_exchange_weak(w, next, std::memory_order_acq_rel,
                                               std::memory_order_acquire)) {
                *begin = front ? b : e - take;
                *end = front ? b + take : e;
                return true;
            }
        }
    }

    /// Runs units [b, e), just claimed from sh. The launch that published sh cannot end before
    /// they run, so sh still holds it. Returns how many units ran.
    static int64_t run_units(const Share& sh, uint64_t b, uint64_t e) {
        const int64_t unit = sh.unit.load(std::memory_order_relaxed);
        const int64_t n = sh.n.load(std::memory_order_relaxed);
        const int64_t first = static_cast<int64_t>(b) * unit;
        const int64_t last = std::min(n, static_cast<int64_t>(e) * unit);
        sh.fn.load(std::memory_order_relaxed)(first, last, sh.ctx.load(std::memory_order_relaxed));
        return static_cast<int64_t>(e - b);
    }

    /// Counts units as run; the one that ends the launch wakes a sleeping caller.
    void count_done(int64_t units) {
        if (remaining_.fetch_sub(units, std::memory_order_acq_rel) == units &&
            caller_sleeping_.load(std::memory_order_seq_cst)) {
            { std::lock_guard<std::mutex> g(done_mu_); }
            done_cv_.notify_one();
        }
    }

    /// Participant p's part of the launch: pieces of its own share from the front
    /// (kPiecesPerShare, so a thief finds some left), counted once it is exhausted (a caller
    /// waiting for it does not also wait for the search below); then, when the others have not
    /// finished within kStealDelay, the back half of what they still hold, until every share
    /// is empty (only while the launch it joined is the current one). A thief leaves alone an owner
    /// that is at work on its last piece or so: taking that would cost two transfers of the share's
    /// cache line for a piece's worth of balance (on small kernels, more than it saves).
    void participate(int p) {
        Share& own = shares_[p];
        const uint64_t w = own.range.load(std::memory_order_acquire);
        const int64_t piece = std::max<int64_t>(
            1, (static_cast<int64_t>(Share::end_of(w)) - static_cast<int64_t>(Share::begin_of(w))) /
                   kPiecesPerShare);
        int64_t done = 0;
        uint64_t b = 0, e = 0;
        while (claim(own, true, piece, &b, &e))
            done += run_units(own, b, e);
        if (done > 0)
            count_done(done);
        // A worker must not linger here once the caller has moved on to the next launch: it
        // would join that one late.
        const uint32_t joined = own.launch.load(std::memory_order_relaxed);
        auto over = [&] {
            return remaining_.load(std::memory_order_acquire) == 0 ||
                   launch_.load(std::memory_order_relaxed) != joined;
        };
        if (spin_until(over, kStealDelay) || over())
            return;
        const int active = own.active.load(std::memory_order_relaxed);
        for (bool stole = true; stole;) {
            stole = false;
            for (int k = 1; k < active && !stole; ++k) {
                Share& other = shares_[(p + k) % active];
                const uint64_t ow = other.range.load(std::memory_order_relaxed);
                const uint64_t ob = Share::begin_of(ow), oe = Share::end_of(ow);
                const bool unstarted = ob < oe && ob == other.first.load(std::memory_order_relaxed);
                const int64_t left = oe > ob ? static_cast<int64_t>(oe - ob) : 0;
                if ((left > piece || unstarted) && claim(other, false, (left + 1) / 2, &b, &e)) {
                    count_done(run_units(other, b, e));
                    stole = true;
                }
            }
        }
    }

    void wait_done() {
        auto done = [&] { return remaining_.load(std::memory_order_acquire) == 0; };
        if (spin_until(done))
            return;
        std::unique_lock<std::mutex> lock(done_mu_);
        caller_sleeping_.store(true, std::memory_order_seq_cst);
        while (remaining_.load(std::memory_order_seq_cst) != 0)
            done_cv_.wait(lock);
        caller_sleeping_.store(false, std::memory_order_relaxed);
    }

    void worker_loop(Slot* slot, int p, uint64_t seen) {
        t_in_parallel = true; // anything a worker launches runs serially
        Share& sh = shares_[p];
        for (;;) {
            auto posted = [&] { return sh.ticket.load(std::memory_order_acquire) != seen; };
            if (!spin_until(posted)) {
                std::unique_lock<std::mutex> lock(slot->mu);
                sh.sleeping.store(true, std::memory_order_seq_cst);
                while (sh.ticket.load(std::memory_order_seq_cst) == seen)
                    slot->cv.wait(lock);
                sh.sleeping.store(false, std::memory_order_relaxed);
            }
            seen = sh.ticket.load(std::memory_order_acquire);
            if (sh.stop.load(std::memory_order_acquire))
                return;
            participate(p);
        }
    }

    /// Starts workers until there are at least `count`, or until the system refuses one (its
    /// std::system_error is not an error of the launch). After a refusal, later launches run on
    /// the workers there are without asking again (one failing pthread_create per launch would
    /// cost a syscall and a stack mapping each time) until set_num_threads. Returns the
    /// workers there are. Pre: launch_mu_ held.
    int ensure_workers(int count) {
        while (!refused_ && static_cast<int>(threads_.size()) < count) {
            slots_.push_back(std::make_unique<Slot>());
            Slot* s = slots_.back().get();
            const int p = static_cast<int>(threads_.size()) + 1; // its share
            // A share outlives its workers (a forked child starts new ones): the new one
            // waits for the next ticket.
            shares_[p].stop.store(false, std::memory_order_relaxed);
            const uint64_t seen = shares_[p].ticket.load(std::memory_order_relaxed);
            try {
                threads_.emplace_back([this, s, p, seen] { worker_loop(s, p, seen); });
            } catch (const std::system_error&) {
                slots_.pop_back();
                refused_ = true;
                break;
            }
            if (bound_)
                pin_thread(threads_.back().native_handle(), cpu_of(threads_.size()));
        }
        return static_cast<int>(threads_.size());
    }

    /// Pre: launch_mu_ held.
    void stop_workers() {
        for (size_t w = 0; w < slots_.size(); ++w) {
            Share& sh = shares_[w + 1];
            sh.stop.store(true, std::memory_order_release);
            {
                std::lock_guard<std::mutex> g(slots_[w]->mu);
                sh.ticket.fetch_add(1, std::memory_order_seq_cst);
            }
            slots_[w]->cv.notify_one();
        }
        for (auto& t : threads_)
            t.join();
        threads_.clear();
        slots_.clear();
    }

    /// The CPU of thread t (0: the caller, w + 1: worker w) when bound: the cores in turn.
    static int cpu_of(size_t t) {
        const std::vector<int>& cpus = core_cpus();
        return cpus[t % cpus.size()];
    }

    std::mutex launch_mu_; ///< One launch at a time.
    bool bound_ = false;   ///< bind_threads(true); guarded by launch_mu_.
    cpu_set_t free_mask_;  ///< The caller's mask before binding, given back by bind(false).
    std::atomic<int> nthreads_;
    bool refused_ = false; ///< The system refused a worker; guarded by launch_mu_.
    std::vector<std::unique_ptr<Slot>> slots_; ///< Worker w sleeps in slot w.
    std::vector<std::thread> threads_;
    /// Participant p's share: the caller 0, worker w w + 1. Fixed storage: a worker that
    /// wakes late may read them while a later launch adds workers.
    Share shares_[kMaxParticipants];
    alignas(64) std::atomic<int64_t> remaining_{0}; ///< Units of this launch not yet run.
    std::atomic<uint32_t> launch_{0};               ///< Launches so far (wrapping).
    std::atomic<bool> caller_sleeping_{false};
    std::mutex done_mu_;
    std::condition_variable done_cv_;
};

Pool& pool() {
    static Pool p;
    return p;
}

void Pool::before_fork() {
    Pool& p = pool();
    p.launch_mu_.lock();
    p.done_mu_.lock();
}

void Pool::after_fork_parent() {
    Pool& p = pool();
    p.done_mu_.unlock();
    p.launch_mu_.unlock();
}

void Pool::after_fork_child() {
    Pool& p = pool();
    // The worker threads do not exist here; their handles and slots are kept for good, never
    // destroyed (joining or destroying them would wait for threads that will never run), and
    // reachable from these statics, so a leak checker does not count them.
    static auto* orphan_threads = new std::vector<std::thread>();
    static auto* orphan_slots = new std::vector<std::unique_ptr<Slot>>();
    for (auto& t : p.threads_)
        orphan_threads->push_back(std::move(t));
    for (auto& s : p.slots_)
        orphan_slots->push_back(std::move(s));
    p.threads_.clear();
    p.slots_.clear();
    p.remaining_.store(0, std::memory_order_relaxed);
    p.caller_sleeping_.store(false, std::memory_order_relaxed);
    p.refused_ = false; // a new process: its limits may differ
    p.done_mu_.unlock();
    p.launch_mu_.unlock();
}

/// Reads one integer from a sysfs file; -1 when unreadable.
long read_long(const std::string& path) {
    std::ifstream in(path);
    long v = -1;
    if (!(in >> v))
        return -1;
    return v;
}

/// One CPU per physical core of this process's affinity mask (the lowest-numbered of its SMT
/// siblings), in CPU order; at least one entry (-1 when the system does not say: no binding).
const std::vector<int>& core_cpus() {
    static const std::vector<int> cached = [] {
        cpu_set_t set;
        if (!process_affinity(set))
            return std::vector<int>(static_cast<size_t>(hardware_threads()), -1);
        std::set<std::pair<long, long>> cores;
        std::vector<int> cpus, firsts;
        bool topology_ok = true;
        for (int c = 0; c < CPU_SETSIZE; ++c) {
            if (!CPU_ISSET(c, &set))
                continue;
            cpus.push_back(c);
            std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
            long pkg = read_long(dir + "physical_package_id");
            long core = read_long(dir + "core_id");
            if (pkg < 0 || core < 0)
                topology_ok = false;
            if (cores.insert({pkg, core}).second)
                firsts.push_back(c);
        }
        std::vector<int> out = topology_ok ? firsts : cpus;
        if (out.empty())
            out.push_back(-1);
        return out;
    }();
    return cached;
}

/// Pins `thread` to the CPUs of `set`. Best effort: a refusal (a container's cgroup, say)
/// leaves the thread where it was.
void pin_thread(pthread_t thread, const cpu_set_t& set) {
    pthread_setaffinity_np(thread, sizeof(set), &set);
}

/// Pins `thread` to `cpu`; nothing when cpu < 0 (the system did not say which CPUs exist).
void pin_thread(pthread_t thread, int cpu) {
    if (cpu < 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pin_thread(thread, set);
}

} // namespace

int default_num_threads() { return static_cast<int>(core_cpus().size()); }

void set_num_threads(int n) { pool().set_num_threads(n); }

void bind_threads(bool on) { pool().bind(on); }

int num_threads() { return pool().num_threads(); }

void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
    using Fn = std::function<void(int64_t, int64_t)>;
    pool().run(
        n, [](int64_t b, int64_t e, void* ctx) { (*static_cast<const Fn*>(ctx))(b, e); },
        const_cast<Fn*>(&fn));
}

} // namespace tessera::runtime

extern "C" int tessera_parallel_for(int64_t n, TesseraParallelChunk chunk, void* ctx) {
    tessera::runtime::pool().run(n, chunk, ctx);
    return 0;
}
