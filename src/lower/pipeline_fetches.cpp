// pipeline_fetches: register double buffering of the shared-memory copies in `pipeline` loops.
#include "tessera/lower/pipeline_fetches.h"

#include <unordered_set>

#include "tessera/ir/functor.h"
#include "tessera/ir/op.h"
#include "tessera/ir/simplify.h"
#include "tessera/ir/substitute.h"
#include "tessera/support/error.h"

namespace tessera::lower {

using namespace ir;

namespace {

[[noreturn]] void fail(const std::string& what) { throw ScheduleError("pipeline: " + what); }

bool is_thread_binding(ForKind k) {
    return k == ForKind::GpuThreadX || k == ForKind::GpuThreadY || k == ForKind::GpuThreadZ;
}

/// Buffers a statement stores to and loads from.
struct Access {
    std::unordered_set<const BufferNode*> stores, loads;
};
Access access_of(const Stmt& s) {
    struct Finder : IRVisitor {
        Access a;
        using IRVisitor::visit;
        void visit(const Store* op) override {
            a.stores.insert(op->buffer.get());
            IRVisitor::visit(op);
        }
        void visit(const Load* op) override {
            a.loads.insert(op->buffer.get());
            IRVisitor::visit(op);
        }
    } f;
    f.visit(s);
    return f.a;
}

/// One fetch: its nest with the Store replaced. `lin` indexes the register array by the
/// per-thread loops; `count` is their trip count.
class Fetch {
  public:
    Fetch(const Stmt& s, const std::string& where) : stmt_(s) {
        scan(s, where);
        TESSERA_CHECK(store_) << "fetch without a store";
        regs_ = Buffer::make(store_->buffer.name() + "_next", store_->buffer.dtype(), {count_});
    }
    const Buffer& regs() const { return regs_; }
    /// The nest with its Store replaced by `leaf(store, lin)`, its serial loops unrolled with
    /// `unroll`.
    template <typename F> Stmt with_leaf(F&& leaf, bool unroll) const {
        return rebuild(stmt_, leaf, unroll);
    }
    Expr lin() const { return lin_.defined() ? lin_ : Expr(int64_t(0)); }

  private:
    void scan(const Stmt& s, const std::string& where) {
        if (const For* f = s.as<For>()) {
            if (is_thread_binding(f->kind))
                return scan(f->body, where);
            const IntImm* mn = f->min.as<IntImm>();
            const IntImm* ext = f->extent.as<IntImm>();
            if (!mn || mn->value != 0 || !ext ||
                (f->kind != ForKind::Serial && f->kind != ForKind::Unrolled &&
                 f->kind != ForKind::Vectorized))
                fail("a copy in loop " + where + " has loop '" + f->loop_var.name() +
                     "' that is not a constant count from 0");
            loops_.push_back({f->loop_var, ext->value}); // outer first
            return scan(f->body, where);
        }
        if (const LetStmt* l = s.as<LetStmt>())
            return scan(l->body, where);
        if (const IfThenElse* i = s.as<IfThenElse>()) {
            if (i->else_case.defined())
                fail("a copy in loop " + where + " has an if with an else branch");
            return scan(i->then_case, where);
        }
        if (const Store* st = s.as<Store>()) {
            store_ = st;
            // Row-major over the per-thread loops, outer first.
            for (auto it = loops_.rbegin(); it != loops_.rend(); ++it) {
                const Expr term = count_ == 1 ? Expr(it->var) : it->var * Expr(count_);
                lin_ = lin_.defined() ? term + lin_ : term;
                count_ *= it->extent;
            }
            return;
        }
        fail("a copy in loop " + where + " is not a nest of loops around one store");
    }

    /// The nest with its Store replaced by leaf(store, lin); with `unroll`, its serial loops
    /// unrolled (the register array then indexed by constants only: registers, not local
    /// memory).
    template <typename F> Stmt rebuild(const Stmt& s, F& leaf, bool unroll) const {
        if (const For* f = s.as<For>()) {
            const ForKind kind = unroll && f->kind == ForKind::Serial ? ForKind::Unrolled : f->kind;
            return For::make(f->loop_var, f->min, f->extent, kind, rebuild(f->body, leaf, unroll));
        }
        if (const LetStmt* l = s.as<LetStmt>())
            return LetStmt::make(l->var, l->value, rebuild(l->body, leaf, unroll));
        if (const IfThenElse* i = s.as<IfThenElse>())
            return IfThenElse::make(i->condition, rebuild(i->then_case, leaf, unroll));
        const Store* st = s.as<Store>();
        TESSERA_CHECK(st == store_) << "fetch nest changed";
        return leaf(st, lin());
    }

    struct Loop {
        Var var;
        int64_t extent;
    };
    Stmt stmt_;
    std::vector<Loop> loops_;
    const Store* store_ = nullptr;
    Expr lin_;
    int64_t count_ = 1;
    Buffer regs_;
};

Stmt substitute_stmt(const Stmt& s, const Variable* v, const Expr& value) {
    Substituter sub;
    sub.values[v] = value;
    return sub.mutate(s);
}

Stmt pipeline(const For* loop) {
    const std::string where = "'" + loop->loop_var.name() + "'";
    const IntImm* ext = loop->extent.as<IntImm>();
    const IntImm* mn = loop->min.as<IntImm>();
    if (!ext || !mn || mn->value != 0)
        fail("loop " + where + " does not run a constant count from 0");
    // The shared buffers allocated in the body, then its statements.
    std::vector<const Allocate*> allocs;
    Stmt body = loop->body;
    while (const Allocate* a = body.as<Allocate>()) {
        if (a->scope != MemoryScope::Shared)
            break;
        allocs.push_back(a);
        body = a->body;
    }
    std::unordered_set<const BufferNode*> shared;
    for (const Allocate* a : allocs)
        shared.insert(a->buffer.get());
    const Seq* seq = body.as<Seq>();
    std::vector<Stmt> stmts = seq ? seq->stmts : std::vector<Stmt>{body};
    std::vector<Fetch> fetches;
    std::vector<Stmt> rest;
    for (const Stmt& s : stmts) {
        const Access a = access_of(s);
        bool stores_shared = false, loads_shared = false;
        for (const BufferNode* b : a.stores)
            stores_shared = stores_shared || shared.count(b);
        for (const BufferNode* b : a.loads)
            loads_shared = loads_shared || shared.count(b);
        if (stores_shared && !loads_shared && rest.empty())
            fetches.emplace_back(s, where);
        else
            rest.push_back(s);
    }
    const Var& k = loop->loop_var;
    if (fetches.empty())
        return For::make(k, loop->min, loop->extent, ForKind::Serial, loop->body);

    const Expr next = k + Expr(int64_t(1));
    const Expr has_next = next < Expr(ext->value);
    std::vector<Stmt> prologue, load_next, store_next;
    for (const Fetch& f : fetches) {
        prologue.push_back(substitute_stmt(
            f.with_leaf([](const Store* st, const Expr&) { return Stmt(st); }, false), k.get(),
            Expr(int64_t(0))));
        load_next.push_back(substitute_stmt(
            f.with_leaf([&](const Store* st,
                            const Expr& lin) { return Store::make(f.regs(), st->value, lin); },
                        true),
            k.get(), next));
        store_next.push_back(substitute_stmt(
            f.with_leaf(
                [&](const Store* st, const Expr& lin) {
                    return Store::make(st->buffer, Load::make(f.regs(), lin), st->index);
                },
                true),
            k.get(), next));
    }
    std::vector<Stmt> iteration;
    iteration.push_back(IfThenElse::make(has_next, Seq::make(load_next)));
    iteration.insert(iteration.end(), rest.begin(), rest.end());
    iteration.push_back(IfThenElse::make(has_next, Seq::make(store_next)));
    std::vector<Stmt> whole = prologue;
    whole.push_back(For::make(k, loop->min, loop->extent, ForKind::Serial, Seq::make(iteration)));
    Stmt out = Seq::make(whole);
    for (auto it = fetches.rbegin(); it != fetches.rend(); ++it)
        out = Allocate::make(it->regs(), MemoryScope::Local, out);
    for (auto it = allocs.rbegin(); it != allocs.rend(); ++it)
        out = Allocate::make((*it)->buffer, MemoryScope::Shared, out);
    return out;
}

class PipelineLowering : public IRMutator {
  public:
    using IRMutator::visit;
    Stmt visit(const For* op) override {
        if (op->kind != ForKind::Pipelined)
            return IRMutator::visit(op);
        const Stmt inner = mutate(op->body);
        const Stmt loop = inner.get() == op->body.get()
                              ? Stmt(op)
                              : For::make(op->loop_var, op->min, op->extent, op->kind, inner);
        return pipeline(loop.as<For>());
    }
};

} // namespace

Stmt pipeline_fetches(const Stmt& s) { return PipelineLowering().mutate(s); }

} // namespace tessera::lower
