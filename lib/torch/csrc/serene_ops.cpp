// SPDX-License-Identifier: Apache-2.0
/*
 * serene_ops.cpp - torch.ops.serene.*: PyTorch custom operators over
 * libserene's public C API.
 *
 * The module registers the operators with TORCH_LIBRARY (no pybind, no
 * libtorch_python), so torch.ops.load_library() makes them callable from
 * Python and from TorchScript alike:
 *
 *   serene::init(int timeout_ms=-1, int store_frac_bits=-1) -> ()
 *   serene::finalize() -> ()
 *   serene::is_initialized() -> bool
 *   serene::rank() -> int,  serene::world_size() -> int
 *   serene::allreduce_(Tensor(a!) tensor, str op="sum", int wire_bits=0)
 *                   -> Tensor(a!)   (op "sum", or "avg" / "mean"; tensor
 *                                   float32, float16 or bfloat16; wire_bits
 *                                   16 or 32, 0: 16 for the 16-bit dtypes,
 *                                   SERENE_WIRE_BITS for float32)
 *   serene::allreduce_start(Tensor(a!) tensor, str op="sum", int wire_bits=0) -> int
 *   serene::op_wait(int handle) -> ()
 *                                   (the non-blocking form: the handle of
 *                                   serene_allreduce_start, waited once)
 *   serene::op_test(int handle) -> bool
 *                                   (whether that op has finished: its
 *                                   op_wait then returns at once)
 *   serene::stale_start(Tensor(a!) tensor, str op="sum", int wire_bits=0) -> int
 *                                   (the stream mode: serene_stale_start,
 *                                   in place; a handle for op_wait)
 *   serene::stale_bound(int clock) -> int[]   [mode, s] at that clock
 *   serene::push(Tensor tensor, int offset) -> ()
 *   serene::pull(Tensor(a!) out, int offset, bool delta=False) -> Tensor(a!)
 *   serene::clock() -> int
 *   serene::step(Tensor update, Tensor(a!) out, int offset, bool delta=False)
 *                   -> Tensor(a!)   (push, clock and pull as one pipelined
 *                                   op: serene_step; out may be update)
 *   serene::clock_info() -> int[]   [clock, low, high, mode, staleness]
 *                                   (low, high: -1 before any clock finished)
 *   serene::store_capacity() -> int
 *   serene::stats() -> Dict(str, int)
 *
 * Invariants:
 * - One process-wide context, like torch.distributed's default group:
 *   init() creates it from serene_config_from_env() (SERENE_RANK,
 *   SERENE_WORLD_SIZE, SERENE_SWITCH, ...: what serene-run sets), finalize()
 *   or process exit destroys it. A process-wide handle is what lets a
 *   TorchScript function call the operators without carrying a context.
 * - libserene allows one thread per context at a time; a mutex serialises
 *   the operators (DDP calls its comm hook from autograd threads). Called
 *   from Python, torch.ops runs them without the GIL, so other Python
 *   threads go on while one blocks in clock() or allreduce_.
 * - allreduce_start returns at once; the library's data-path thread moves
 *   the op on while the caller goes on (DDP's backward). The caller keeps
 *   the tensor alive, unchanged, until op_wait(handle) returns; op_wait
 *   may run on any thread and does not hold the mutex while it blocks, so
 *   other ops start meanwhile. At most max_ops (16) ops in flight
 *   (SERENE_ERR_BUSY beyond: the caller bounds them).
 * - Tensors are used in place: float32 (allreduce also float16 and
 *   bfloat16), CPU (strided), contiguous, or the call is refused with a
 *   message naming what is wrong. Nothing is copied on this side;
 *   libserene reads and writes the tensor's memory.
 * - Every call ends by the context's deadline (serene_config.timeout_ms);
 *   a libserene error becomes a c10::Error (RuntimeError in Python) with the
 *   code's name and message.
 */
#include <ATen/core/Dict.h>
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "serene/serene.h"

namespace {

struct Global {
    std::mutex mu;
    serene_ctx *ctx = nullptr;
    serene_config cfg{};
    std::map<int64_t, serene_op *> ops; // started, not yet waited for
    int64_t next_handle = 1;
    ~Global() { serene_ctx_destroy(&ctx); } // process exit: leave the job
};

} // namespace

static Global &global()
{
    static Global g;
    return g;
}

[[noreturn]] static void fail(const char *what, int rc)
{
    C10_THROW_ERROR(Error, std::string("serene: ") + what + " failed: " + serene_err_name(rc) +
                               " (" + serene_strerror(rc) + ")");
}

static serene_ctx *need_ctx(Global &g)
{
    TORCH_CHECK(g.ctx != nullptr,
                "serene: not initialized: call serene_torch.init() (or torch.ops.serene.init())"
                " first");
    return g.ctx;
}

// The tensor's float32 memory, or a clear refusal.
static void check_tensor(const at::Tensor &t, const char *op, const char *arg)
{
    TORCH_CHECK(t.defined(), "serene.", op, ": ", arg, " is an undefined tensor");
    TORCH_CHECK(t.device().is_cpu() && t.layout() == c10::kStrided, "serene.", op, ": ", arg,
                " must be a dense CPU tensor, got device ", t.device(), " layout ",
                t.layout());
    TORCH_CHECK(t.scalar_type() == c10::kFloat, "serene.", op, ": ", arg,
                " must be float32, got ", t.scalar_type());
    TORCH_CHECK(t.is_contiguous(), "serene.", op, ": ", arg,
                " must be contiguous (call .contiguous() and copy the result back)");
}

// An allreduce's tensor: float32, float16 or bfloat16, dense CPU,
// contiguous; its serene_dtype.
static serene_dtype check_ar_tensor(const at::Tensor &t, const char *op)
{
    TORCH_CHECK(t.defined(), "serene.", op, ": tensor is an undefined tensor");
    TORCH_CHECK(t.device().is_cpu() && t.layout() == c10::kStrided, "serene.", op,
                ": tensor must be a dense CPU tensor, got device ", t.device(), " layout ",
                t.layout());
    TORCH_CHECK(t.is_contiguous(), "serene.", op,
                ": tensor must be contiguous (call .contiguous() and copy the result back)");
    switch (t.scalar_type()) {
    case c10::kFloat:
        return SERENE_FLOAT32;
    case c10::kHalf:
        return SERENE_FLOAT16;
    case c10::kBFloat16:
        return SERENE_BFLOAT16;
    default:
        TORCH_CHECK(false, "serene.", op, ": tensor must be float32, float16 or bfloat16, got ",
                    t.scalar_type());
    }
    return SERENE_FLOAT32; // not reached
}

static unsigned wire_flags(int64_t wire_bits, const char *op)
{
    TORCH_CHECK(wire_bits == 0 || wire_bits == 16 || wire_bits == 32, "serene.", op,
                ": wire_bits must be 0 (the default), 16 or 32, got ", wire_bits);
    return wire_bits == 16 ? SERENE_WIRE16 : wire_bits == 32 ? SERENE_WIRE32 : 0u;
}

static size_t check_offset(int64_t offset, const char *op)
{
    TORCH_CHECK(offset >= 0, "serene.", op, ": offset must be >= 0, got ", offset);
    return static_cast<size_t>(offset);
}

static void op_init(int64_t timeout_ms, int64_t store_frac_bits)
{
    Global &g = global();
    std::lock_guard<std::mutex> lock(g.mu);
    TORCH_CHECK(g.ctx == nullptr, "serene: already initialized (call finalize() first)");
    serene_config cfg;
    serene_config_init(&cfg);
    int rc = serene_config_from_env(&cfg);
    if (rc)
        fail("reading the SERENE_* environment", rc);
    if (timeout_ms >= 0) {
        TORCH_CHECK(timeout_ms > 0 && timeout_ms <= INT32_MAX,
                    "serene.init: timeout_ms must be in 1..2^31-1, got ", timeout_ms);
        cfg.timeout_ms = static_cast<int>(timeout_ms);
    }
    if (store_frac_bits >= 0) {
        TORCH_CHECK(store_frac_bits <= 30, "serene.init: store_frac_bits must be in 0..30, got ",
                    store_frac_bits);
        cfg.store_frac_bits = static_cast<int>(store_frac_bits);
    }
    rc = serene_ctx_create(&g.ctx, &cfg);
    if (rc)
        fail("joining the job (serene_ctx_create)", rc);
    serene_ctx_config(g.ctx, &g.cfg);
}

static void op_finalize()
{
    Global &g = global();
    std::lock_guard<std::mutex> lock(g.mu);
    // Ops nobody waited for end first (by their deadline): their tensors
    // are the caller's, and destroy would refuse a context with ops open.
    for (auto &kv : g.ops)
        serene_op_wait(&kv.second);
    g.ops.clear();
    serene_ctx_destroy(&g.ctx);
}

static bool op_is_initialized()
{
    Global &g = global();
    std::lock_guard<std::mutex> lock(g.mu);
    return g.ctx != nullptr;
}

static int64_t op_rank()
{
    Global &g = global();
    std::lock_guard<std::mutex> lock(g.mu);
    need_ctx(g);
    return g.cfg.rank;
}

static int64_t op_world_size()
{
    Global &g = global();
    std::lock_guard<std::mutex> lock(g.mu);
    need_ctx(g);
    return g.cfg.world_size;
}

static serene_reduce_op reduce_op(c10::string_view op, const char *name)
{
    if (op == "sum")
        return SERENE_SUM;
    if (op == "avg" || op == "mean")
        return SERENE_AVG;
    TORCH_CHECK(false, "serene.", name, ": op must be \"sum\" or \"avg\", got \"",
                std::string(op), "\"");
    return SERENE_SUM; // not reached
}

static at::Tensor op_allreduce_(at::Tensor tensor, c10::string_view op, int64_t wire_bits)
{
    serene_dtype dt = check_ar_tensor(tensor, "allreduce_");
    serene_reduce_op rop = reduce_op(op, "allreduce_");
    unsigned flags = wire_flags(wire_bits, "allreduce_");
    Global &g = global();
    std::lock_guard<std::mutex> lock(g.mu);
    serene_ctx *ctx = need_ctx(g);
    void *p = tensor.data_ptr();
    int rc = serene_allreduce_typed(ctx, p, p, static_cast<size_t>(tensor.numel()), dt, rop, flags);
    if (rc)
        fail("allreduce_", rc);
    return tensor;
}

// Start a non-blocking call (serene_allreduce_typed_start or
// serene_stale_start: the same arguments) on tensor in place; its handle.
using start_fn = int (*)(serene_ctx *, const void *, void *, size_t, serene_dtype,
                         serene_reduce_op, unsigned, serene_op **);

static int64_t start_op(at::Tensor &tensor, c10::string_view op, int64_t wire_bits,
                        const char *name, start_fn start)
{
    serene_dtype dt = check_ar_tensor(tensor, name);
    serene_reduce_op rop = reduce_op(op, name);
    unsigned flags = wire_flags(wire_bits, name);
    Global &g = global();
    std::lock_guard<std::mutex> lock(g.mu);
    serene_ctx *ctx = need_ctx(g);
    void *p = tensor.data_ptr();
    serene_op *sop = nullptr;
    int rc = start(ctx, p, p, static_cast<size_t>(tensor.numel()), dt, rop, flags, &sop);
    if (rc)
        fail(name, rc);
    int64_t h = g.next_handle++;
    g.ops.emplace(h, sop);
    return h;
}

static int64_t op_allreduce_start(at::Tensor tensor, c10::string_view op, int64_t wire_bits)
{
    return start_op(tensor, op, wire_bits, "allreduce_start", serene_allreduce_typed_start);
}

static int64_t op_stale_start(at::Tensor tensor, c10::string_view op, int64_t wire_bits)
{
    return start_op(tensor, op, wire_bits, "stale_start", serene_stale_start);
}

static std::vector<int64_t> op_stale_bound(int64_t clock)
{
    TORCH_CHECK(clock >= 0 && clock <= UINT32_MAX, "serene.stale_bound: clock must be in 0..2^32-1, got ",
                clock);
    serene_ctx *ctx;
    {
        Global &g = global();
        std::lock_guard<std::mutex> lock(g.mu);
        ctx = need_ctx(g);
    }
    // Unlocked, as op_wait: it blocks until the switch answers.
    serene_sync_mode mode = SERENE_SYNC_BSP;
    uint32_t s = 0;
    int rc = serene_stale_bound(ctx, static_cast<uint32_t>(clock), &mode, &s);
    if (rc)
        fail("stale_bound", rc);
    return {static_cast<int64_t>(mode), static_cast<int64_t>(s)};
}

static bool op_test(int64_t handle)
{
    Global &g = global();
    std::lock_guard<std::mutex> lock(g.mu);
    auto it = g.ops.find(handle);
    TORCH_CHECK(it != g.ops.end(), "serene.op_test: no op with handle ", handle,
                " (never started, or already waited for)");
    return serene_op_test(it->second) == 0;
}

static void op_wait(int64_t handle)
{
    Global &g = global();
    serene_op *sop = nullptr;
    {
        std::lock_guard<std::mutex> lock(g.mu);
        auto it = g.ops.find(handle);
        TORCH_CHECK(it != g.ops.end(), "serene.op_wait: no op with handle ", handle,
                    " (never started, or already waited for)");
        sop = it->second;
        g.ops.erase(it);
    }
    // Unlocked: the data path completes it while other ops start.
    int rc = serene_op_wait(&sop);
    if (rc)
        fail("allreduce (op_wait)", rc);
}

static void op_push(const at::Tensor &tensor, int64_t offset)
{
    check_tensor(tensor, "push", "tensor");
    size_t off = check_offset(offset, "push");
    Global &g = global();
    std::lock_guard<std::mutex> lock(g.mu);
    int rc = serene_push(need_ctx(g), off, tensor.data_ptr<float>(),
                         static_cast<size_t>(tensor.numel()));
    if (rc)
        fail("push", rc);
}

static at::Tensor op_pull(at::Tensor out, int64_t offset, bool delta)
{
    check_tensor(out, "pull", "out");
    size_t off = check_offset(offset, "pull");
    Global &g = global();
    std::lock_guard<std::mutex> lock(g.mu);
    int rc = serene_pull(need_ctx(g), off, out.data_ptr<float>(),
                         static_cast<size_t>(out.numel()), delta ? SERENE_PULL_DELTA : 0u);
    if (rc)
        fail("pull", rc);
    return out;
}

static at::Tensor op_step(const at::Tensor &update, at::Tensor out, int64_t offset, bool delta)
{
    check_tensor(update, "step", "update");
    check_tensor(out, "step", "out");
    TORCH_CHECK(update.numel() == out.numel(), "serene.step: update has ", update.numel(),
                " elements, out ", out.numel());
    size_t off = check_offset(offset, "step");
    Global &g = global();
    std::lock_guard<std::mutex> lock(g.mu);
    int rc = serene_step(need_ctx(g), off, update.data_ptr<float>(), out.data_ptr<float>(),
                         static_cast<size_t>(out.numel()), delta ? SERENE_PULL_DELTA : 0u);
    if (rc)
        fail("step", rc);
    return out;
}

static int64_t op_clock()
{
    Global &g = global();
    std::lock_guard<std::mutex> lock(g.mu);
    serene_ctx *ctx = need_ctx(g);
    int rc = serene_clock(ctx);
    if (rc)
        fail("clock", rc);
    serene_clock_info ci;
    rc = serene_get_clock_info(ctx, &ci);
    if (rc)
        fail("clock_info", rc);
    return ci.clock;
}

static std::vector<int64_t> op_clock_info()
{
    Global &g = global();
    std::lock_guard<std::mutex> lock(g.mu);
    serene_clock_info ci;
    int rc = serene_get_clock_info(need_ctx(g), &ci);
    if (rc)
        fail("clock_info", rc);
    // low and high are UINT32_MAX until some clock finished: -1 here.
    auto none = [](uint32_t v) { return v == UINT32_MAX ? int64_t{-1} : int64_t{v}; };
    return {ci.clock, none(ci.low), none(ci.high), static_cast<int64_t>(ci.mode), ci.staleness};
}

static int64_t op_store_capacity()
{
    Global &g = global();
    std::lock_guard<std::mutex> lock(g.mu);
    return static_cast<int64_t>(serene_store_capacity(need_ctx(g)));
}

static c10::Dict<std::string, int64_t> op_stats()
{
    Global &g = global();
    std::lock_guard<std::mutex> lock(g.mu);
    serene_stats s;
    int rc = serene_get_stats(need_ctx(g), &s);
    if (rc)
        fail("stats", rc);
    c10::Dict<std::string, int64_t> d;
    auto put = [&d](const char *k, uint64_t v) { d.insert(k, static_cast<int64_t>(v)); };
    put("pkts_sent", s.pkts_sent);
    put("pkts_recv", s.pkts_recv);
    put("bytes_sent", s.bytes_sent);
    put("bytes_recv", s.bytes_recv);
    put("retransmissions", s.retransmissions);
    put("timeouts", s.timeouts);
    put("saturations", s.saturations);
    put("duplicates", s.duplicates);
    put("rejected", s.rejected);
    put("ops_completed", s.ops_completed);
    put("clock_wait_ns", s.clock_wait_ns);
    put("holds", s.holds);
    put("releases", s.releases);
    put("probes", s.probes);
    put("held", s.held);
    put("window_cuts", s.window_cuts);
    return d;
}

// The operators without a Tensor(a!) argument talk to the switch or read
// state that changes with each call: CONSERVATIVE alias analysis marks them
// as having side effects, so TorchScript never drops a call whose result is
// unused (push, clock), nor merges or reorders two calls. allreduce_ and
// pull keep their schema's alias annotation (FROM_SCHEMA, required with
// one): TorchScript sees them write their tensor, which orders them.
static c10::FunctionSchema side_effect(const char *schema)
{
    return torch::schema(schema, c10::AliasAnalysisKind::CONSERVATIVE);
}

TORCH_LIBRARY(serene, m)
{
    m.def(side_effect("init(int timeout_ms=-1, int store_frac_bits=-1) -> ()"), op_init);
    m.def(side_effect("finalize() -> ()"), op_finalize);
    m.def(side_effect("is_initialized() -> bool"), op_is_initialized);
    m.def(side_effect("rank() -> int"), op_rank);
    m.def(side_effect("world_size() -> int"), op_world_size);
    m.def("allreduce_(Tensor(a!) tensor, str op=\"sum\", int wire_bits=0) -> Tensor(a!)",
          op_allreduce_);
    m.def("allreduce_start(Tensor(a!) tensor, str op=\"sum\", int wire_bits=0) -> int",
          op_allreduce_start);
    m.def(side_effect("op_wait(int handle) -> ()"), op_wait);
    m.def(side_effect("op_test(int handle) -> bool"), op_test);
    m.def("stale_start(Tensor(a!) tensor, str op=\"sum\", int wire_bits=0) -> int",
          op_stale_start);
    m.def(side_effect("stale_bound(int clock) -> int[]"), op_stale_bound);
    m.def(side_effect("push(Tensor tensor, int offset) -> ()"), op_push);
    m.def("pull(Tensor(a!) out, int offset, bool delta=False) -> Tensor(a!)", op_pull);
    m.def(side_effect("clock() -> int"), op_clock);
    m.def("step(Tensor update, Tensor(a!) out, int offset, bool delta=False) -> Tensor(a!)",
          op_step);
    m.def(side_effect("clock_info() -> int[]"), op_clock_info);
    m.def(side_effect("store_capacity() -> int"), op_store_capacity);
    m.def(side_effect("stats() -> Dict(str, int)"), op_stats);
}
