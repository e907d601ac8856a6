// runtime.cpp -- runs emulated MSL kernels on the CPU (README.md).
//
// One OS worker runs one threadgroup at a time. The group's threads are
// fibers on the worker, switched by mtl_fiber_switch (fiber_x86_64.S) only
// at threadgroup_barrier and SIMD-group operations, in forward, reverse or
// shuffled order, so runs are deterministic per schedule. The runtime
// reports, instead of hanging or corrupting memory: divergent barriers and
// SIMD operations, barriers some thread never reaches, deadlocks, reads of
// threadgroup memory never written, races on threadgroup memory (accesses
// of one byte by two threads with no barrier between, tracked per byte),
// and the 32 KiB threadgroup memory limit.
#include "mtl_emu.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

extern "C" void mtl_fiber_switch(void **save_sp, void *to_sp);
extern "C" void mtl_fiber_start(void);

namespace {

enum State : uint8_t { READY, AT_BARRIER, AT_SIMD, DONE };

struct Thread {
    void *sp = nullptr;
    State st = READY;
    uint64_t wait_gen = 0;
    uint32_t line = 0, col = 0; // where it waits
    mtl_emu_ctx ctx;
};

struct SimdGroup {
    uint64_t gen = 0;
    uint32_t lanes = 0, arrived = 0, returned = 0;
    uint32_t line = 0, col = 0;
    unsigned char slots[2][MTL_EMU_SIMD_WIDTH][64]; // by generation parity
};

// Per byte of threadgroup memory: who wrote and read it in which epoch
// (barrier generation), and whether it was ever written.
enum : uint16_t { MANY_READERS = 0xFFFF };
struct Shadow {
    uint32_t wepoch, repoch;
    uint16_t writer, reader;
    uint8_t init;
};

struct Worker {
    std::vector<char *> stacks;
    size_t stack_bytes = 0;
    std::vector<unsigned char> arena;
    std::vector<Shadow> shadow;
    size_t dirty = 0; // bytes of arena/shadow used by the last group
    ~Worker() { release(); }
    void release()
    {
        for (char *s : stacks)
            munmap(s, stack_bytes + 4096);
        stacks.clear();
    }
    // The stack of thread i; a guard page below turns an overflow into a fault.
    char *stack_top(size_t i, size_t bytes)
    {
        if (stack_bytes != bytes) {
            release();
            stack_bytes = bytes;
        }
        while (stacks.size() <= i) {
            void *p = mmap(nullptr, bytes + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                           -1, 0);
            if (p == MAP_FAILED)
                return nullptr;
            mprotect(p, 4096, PROT_NONE);
            stacks.push_back((char *)p);
        }
        return stacks[i] + 4096 + bytes;
    }
};

struct Group {
    Worker *w = nullptr;
    mtl_emu_entry entry = nullptr;
    std::vector<Thread> threads;
    std::vector<SimdGroup> sg;
    Thread *cur = nullptr;
    void *sched_sp = nullptr;
    uint32_t gpos[3] = {0, 0, 0};
    uint32_t returned = 0;
    uint64_t bar_gen = 0;
    uint32_t at_barrier = 0, bline = 0, bcol = 0;
    uint32_t epoch = 1;
    std::vector<size_t> unread; // bytes read uninitialized this epoch: an error unless a race explains them
    std::vector<std::pair<uint32_t, size_t>> allocs;
    size_t used = 0, limit = MTL_EMU_TG_LIMIT;
    std::string err;
};

thread_local Group *g_grp = nullptr;

std::string fmt(const char *f, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

std::string where(const Group *G, const Thread *t)
{
    return fmt("thread %u of threadgroup (%u,%u,%u)", t->ctx.tiitg, G->gpos[0], G->gpos[1], G->gpos[2]);
}

void to_scheduler(Group *G, Thread *t) { mtl_fiber_switch(&t->sp, G->sched_sp); }

// At the end of an epoch, a byte read while uninitialized and not written by
// another thread since (that would have been reported as a race) was read
// before anyone wrote it.
std::string uninitialized_reads(Group *G)
{
    std::string m;
    for (size_t off : G->unread) {
        const Shadow &s = G->w->shadow[off];
        if (!s.init && m.empty())
            m = fmt("%s of threadgroup (%u,%u,%u) read threadgroup byte %zu, which no thread has written "
                    "(uninitialized)",
                    s.reader == MANY_READERS ? "threads" : fmt("thread %u", s.reader).c_str(), G->gpos[0], G->gpos[1],
                    G->gpos[2], off);
    }
    G->unread.clear();
    return m;
}

// Ends the current thread with an error; the scheduler stops the group.
[[noreturn]] void fail_here(const std::string &m)
{
    Group *G = g_grp;
    if (G->err.empty())
        G->err = m;
    G->cur->st = DONE;
    for (;;)
        to_scheduler(G, G->cur);
}

void thread_main(void *arg)
{
    Group *G = (Group *)arg;
    G->entry();
    Thread *t = G->cur;
    if (G->at_barrier)
        fail_here(fmt("%s returned without reaching the threadgroup_barrier at line %u col %u, where %u thread(s) "
                      "wait",
                      where(G, t).c_str(), G->bline, G->bcol, G->at_barrier));
    SimdGroup &S = G->sg[t->ctx.sgitg];
    if (S.arrived)
        fail_here(fmt("%s returned without reaching the SIMD-group operation at line %u col %u, where %u lane(s) wait",
                      where(G, t).c_str(), S.line, S.col, S.arrived));
    S.returned++;
    G->returned++;
    t->st = DONE;
    for (;;)
        to_scheduler(G, t);
}

bool runnable(const Group &G, const Thread &t)
{
    switch (t.st) {
    case READY: return true;
    case AT_BARRIER: return G.bar_gen != t.wait_gen;
    case AT_SIMD: return G.sg[t.ctx.sgitg].gen != t.wait_gen;
    default: return false;
    }
}

std::string deadlock(const Group &G)
{
    std::string m = fmt("deadlock in threadgroup (%u,%u,%u):", G.gpos[0], G.gpos[1], G.gpos[2]);
    int shown = 0;
    for (const Thread &t : G.threads)
        if (t.st != DONE && shown++ < 6)
            m += fmt(" thread %u waits at %s line %u col %u;", t.ctx.tiitg,
                     t.st == AT_BARRIER ? "threadgroup_barrier" : "a SIMD-group op", t.line, t.col);
    return m;
}

void set_ctx(Thread &t, uint32_t i, const mtl_emu_dispatch_desc *d, const uint32_t gpos[3], uint32_t nsg)
{
    mtl_emu_ctx &c = t.ctx;
    memset(&c, 0, sizeof c);
    const uint32_t *n = d->threads;
    c.tpitg[0] = i % n[0];
    c.tpitg[1] = i / n[0] % n[1];
    c.tpitg[2] = i / (n[0] * n[1]);
    for (int k = 0; k < 3; k++) {
        c.tgpig[k] = gpos[k];
        c.tptg[k] = n[k];
        c.tgpg[k] = d->threadgroups[k];
        c.tpg[k] = d->threadgroups[k] * n[k];
        c.tpig[k] = gpos[k] * n[k] + c.tpitg[k];
    }
    c.tiitg = i;
    c.sgitg = i / MTL_EMU_SIMD_WIDTH;
    c.tiisg = i % MTL_EMU_SIMD_WIDTH;
    c.sgptg = nsg;
    memcpy(c.buffers, d->buffers, sizeof c.buffers);
}

void next_order(std::vector<uint32_t> &order, uint32_t schedule, uint64_t &rng)
{
    uint32_t n = (uint32_t)order.size();
    for (uint32_t i = 0; i < n; i++)
        order[i] = schedule == 1 ? n - 1 - i : i;
    if (schedule < 2)
        return;
    for (uint32_t i = n; i > 1; i--) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        std::swap(order[i - 1], order[rng % i]);
    }
}

// Runs threadgroup gpos to completion or to its first error.
std::string run_group(Worker &W, const mtl_emu_dispatch_desc *d, mtl_emu_entry entry, const uint32_t gpos[3])
{
    const uint32_t n = d->threads[0] * d->threads[1] * d->threads[2];
    const uint32_t nsg = (n + MTL_EMU_SIMD_WIDTH - 1) / MTL_EMU_SIMD_WIDTH;
    const size_t ss = d->stack_bytes ? (d->stack_bytes + 15) & ~(size_t)15 : (size_t)128 << 10;
    Group G;
    G.w = &W;
    G.entry = entry;
    G.threads.resize(n);
    G.sg.resize(nsg);
    memcpy(G.gpos, gpos, sizeof G.gpos);
    G.limit = d->tg_limit ? d->tg_limit : MTL_EMU_TG_LIMIT;
    if (W.arena.size() < G.limit) {
        W.arena.resize(G.limit);
        W.shadow.resize(G.limit);
        W.dirty = G.limit;
    }
    memset(W.arena.data(), 0xFF, W.dirty); // poison: never-written bytes read as NaN / all ones
    memset(W.shadow.data(), 0, W.dirty * sizeof(Shadow));
    for (uint32_t i = 0; i < n; i++) {
        Thread &t = G.threads[i];
        set_ctx(t, i, d, gpos, nsg);
        G.sg[t.ctx.sgitg].lanes++;
        char *top = W.stack_top(i, ss);
        if (!top)
            return "cannot map a thread stack";
        void **sp = (void **)((uintptr_t)top & ~(uintptr_t)15) - 10;
        uint32_t fpu[2] = {0x1F80, 0x037F}; // MXCSR, x87 control word: the defaults
        memcpy(&sp[0], fpu, 8);
        sp[1] = sp[2] = nullptr;              // r15, r14
        sp[3] = &G;                           // r13: the argument
        sp[4] = (void *)thread_main;          // r12: the function
        sp[5] = sp[6] = nullptr;              // rbx, rbp
        sp[7] = (void *)mtl_fiber_start;      // return address
        t.sp = sp;
    }
    g_grp = &G;
    std::vector<uint32_t> order(n);
    uint64_t rng = d->schedule * 0x9E3779B97F4A7C15ull + (gpos[0] + 1) * 0xBF58476D1CE4E5B9ull + gpos[1] * 31 + gpos[2];
    while (G.returned < n && G.err.empty()) {
        next_order(order, d->schedule, rng);
        bool ran = false;
        for (uint32_t oi = 0; oi < n && G.err.empty(); oi++) {
            Thread &t = G.threads[order[oi]];
            if (!runnable(G, t))
                continue;
            G.cur = &t;
            ran = true;
            mtl_fiber_switch(&G.sched_sp, t.sp);
        }
        if (!ran && G.err.empty())
            G.err = deadlock(G);
    }
    if (G.err.empty() && G.returned == n)
        G.err = uninitialized_reads(&G);
    W.dirty = G.used > W.dirty ? G.used : W.dirty;
    g_grp = nullptr;
    return G.err;
}

} // namespace

extern "C" {

const mtl_emu_ctx *mtl_rt_ctx(void) { return &g_grp->cur->ctx; }

void mtl_rt_fail(const char *msg) { fail_here(fmt("kernel failure: %s", msg)); }

void mtl_rt_barrier(uint32_t line, uint32_t col)
{
    Group *G = g_grp;
    Thread *t = G->cur;
    if (G->returned)
        fail_here(fmt("threadgroup_barrier at line %u col %u: %u thread(s) have returned and never reach it "
                      "(every thread of a threadgroup must)",
                      line, col, G->returned));
    if (G->at_barrier == 0) {
        G->bline = line;
        G->bcol = col;
    } else if (G->bline != line || G->bcol != col) {
        fail_here(fmt("divergent threadgroup_barrier: %s is at line %u col %u while %u thread(s) wait at line %u col "
                      "%u",
                      where(G, t).c_str(), line, col, G->at_barrier, G->bline, G->bcol));
    }
    uint64_t gen = G->bar_gen;
    if (++G->at_barrier == G->threads.size()) {
        std::string m = uninitialized_reads(G);
        if (!m.empty())
            fail_here(m);
        G->at_barrier = 0;
        G->bar_gen++;
        G->epoch++;
        return;
    }
    t->st = AT_BARRIER;
    t->wait_gen = gen;
    t->line = line;
    t->col = col;
    while (G->bar_gen == gen)
        to_scheduler(G, t);
    t->st = READY;
}

uint32_t mtl_rt_simd_exchange(const void *in, size_t size, void *out, uint32_t line, uint32_t col)
{
    Group *G = g_grp;
    Thread *t = G->cur;
    SimdGroup &S = G->sg[t->ctx.sgitg];
    uint32_t lane = t->ctx.tiisg;
    if (size > 64)
        fail_here("a SIMD-group operation on more than 64 bytes");
    if (S.returned)
        fail_here(fmt("SIMD-group operation at line %u col %u: %u lane(s) of SIMD group %u have returned (operations "
                      "must be reached by every lane)",
                      line, col, S.returned, t->ctx.sgitg));
    if (S.arrived == 0) {
        S.line = line;
        S.col = col;
    } else if (S.line != line || S.col != col) {
        fail_here(fmt("divergent SIMD-group operation: %s (lane %u) is at line %u col %u while %u lane(s) wait at line "
                      "%u col %u",
                      where(G, t).c_str(), lane, line, col, S.arrived, S.line, S.col));
    }
    uint64_t gen = S.gen;
    memcpy(S.slots[gen & 1][lane], in, size);
    if (++S.arrived == S.lanes) {
        S.arrived = 0;
        S.gen++;
    } else {
        t->st = AT_SIMD;
        t->wait_gen = gen;
        t->line = line;
        t->col = col;
        while (S.gen == gen)
            to_scheduler(G, t);
        t->st = READY;
    }
    for (uint32_t l = 0; l < S.lanes; l++)
        memcpy((char *)out + l * size, S.slots[gen & 1][l], size);
    return S.lanes == 32 ? 0xFFFFFFFFu : (1u << S.lanes) - 1;
}

void *mtl_rt_tg_alloc(uint32_t decl, size_t size, size_t align)
{
    Group *G = g_grp;
    for (auto &a : G->allocs)
        if (a.first == decl)
            return G->w->arena.data() + a.second;
    size_t off = (G->used + align - 1) / align * align;
    if (off + size > G->limit)
        fail_here(fmt("threadgroup memory: %zu bytes needed, the limit is %zu", off + size, G->limit));
    G->used = off + size;
    G->allocs.push_back({decl, off});
    return G->w->arena.data() + off;
}

void mtl_rt_tg_access(const void *p, size_t n, const void *value)
{
    Group *G = g_grp;
    Thread *t = G->cur;
    unsigned char *base = G->w->arena.data();
    size_t off = (size_t)((const unsigned char *)p - base);
    if ((const unsigned char *)p < base || off + n > G->used)
        fail_here(fmt("%s accesses threadgroup memory out of bounds (bytes %zd..%zd of %zu)", where(G, t).c_str(),
                      (ssize_t)off, (ssize_t)(off + n), G->used));
    uint16_t me = (uint16_t)t->ctx.tiitg;
    const unsigned char *v = (const unsigned char *)value;
    for (size_t i = 0; i < n; i++) {
        Shadow &s = G->w->shadow[off + i];
        if (!v) {
            if (!s.init) {
                if (G->unread.size() < 65536)
                    G->unread.push_back(off + i);
            } else if (s.wepoch == G->epoch && s.writer != me) {
                fail_here(fmt("missing barrier: %s reads threadgroup byte %zu, written by thread %u since the last "
                              "barrier",
                              where(G, t).c_str(), off + i, s.writer));
            }
            s.reader = s.repoch == G->epoch && s.reader != me ? MANY_READERS : me;
            s.repoch = G->epoch;
            continue;
        }
        if (!s.init && s.repoch == G->epoch && s.reader == me)
            fail_here(fmt("%s reads threadgroup byte %zu before writing it, and no thread wrote it before "
                          "(uninitialized)",
                          where(G, t).c_str(), off + i));
        if (s.repoch == G->epoch && s.reader != me)
            fail_here(fmt("missing barrier: %s writes threadgroup byte %zu, read by %s since the last barrier",
                          where(G, t).c_str(), off + i,
                          s.reader == MANY_READERS ? "other threads" : fmt("thread %u", s.reader).c_str()));
        if (s.wepoch == G->epoch && s.writer != me && base[off + i] != v[i])
            fail_here(fmt("race: %s and thread %u write different values to threadgroup byte %zu with no barrier "
                          "between",
                          where(G, t).c_str(), s.writer, off + i));
        s.writer = me;
        s.wepoch = G->epoch;
        s.init = 1;
    }
}

int mtl_emu_dispatch(mtl_emu_entry entry, const mtl_emu_dispatch_desc *d, char *err, size_t errlen)
{
    const uint64_t ng = (uint64_t)d->threadgroups[0] * d->threadgroups[1] * d->threadgroups[2];
    const uint64_t nt = (uint64_t)d->threads[0] * d->threads[1] * d->threads[2];
    if (!entry || nt == 0 || nt > 1024) {
        snprintf(err, errlen, "%s", !entry ? "no kernel entry" : "threads per threadgroup must be 1 to 1024");
        return 1;
    }
    int nw = d->workers > 0 ? d->workers : 1;
    std::atomic<uint64_t> next{0};
    std::atomic<bool> failed{false};
    std::mutex mu;
    std::string first;
    auto work = [&] {
        Worker W;
        for (uint64_t g; !failed && (g = next.fetch_add(1)) < ng;) {
            uint32_t gpos[3] = {(uint32_t)(g % d->threadgroups[0]),
                                (uint32_t)(g / d->threadgroups[0] % d->threadgroups[1]),
                                (uint32_t)(g / ((uint64_t)d->threadgroups[0] * d->threadgroups[1]))};
            std::string e = run_group(W, d, entry, gpos);
            if (!e.empty()) {
                std::lock_guard<std::mutex> l(mu);
                if (first.empty())
                    first = e;
                failed = true;
            }
        }
    };
    std::vector<std::thread> ts;
    for (int i = 1; i < nw; i++)
        ts.emplace_back(work);
    work();
    for (auto &t : ts)
        t.join();
    if (!first.empty()) {
        snprintf(err, errlen, "%s", first.c_str());
        return 1;
    }
    return 0;
}

} // extern "C"
