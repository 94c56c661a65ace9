// SPDX-License-Identifier: Apache-2.0
//
// bench_gloo.cc - Gloo's ring allreduce on the same tensors as
// bench_allreduce, for a side-by-side comparison.
//
//   bench/bench_gloo -n 2 --sizes 256k,16M --csv
//
// The program starts the N ranks itself (fork, before any thread exists),
// each a process of its own with its own Gloo context: rendezvous through a
// gloo::rendezvous::FileStore in a fresh temporary directory, the TCP
// transport on 127.0.0.1, then gloo::AllreduceRing<float> with SUM (with
// --chunked 1, gloo::AllreduceRingChunked<float>: AllreduceRing passes the
// whole tensor around the ring, N - 1 times the tensor on every link, where
// the chunked ring's reduce-scatter and allgather put 2(N - 1)/N of it). The
// parent waits for them with a deadline (--timeout seconds; on expiry it
// kills them, by PID), removes the directory and exits non-zero if any rank
// failed.
//
// With --rank R the program runs rank R only, in this process: the ranks
// then start one by one (each in its own network namespace, say, as
// bench/fabric.sh does), --host names the address this rank binds and
// advertises, and --store a FileStore directory every rank shares (made
// and removed by the caller).
//
// Gloo's allreduce is in place, so every call first copies the rank's input
// into the buffer it reduces (one memcpy of the tensor, timed with the
// call: it is what a caller who keeps its input does). Inputs, the check
// after timing (float-sum bound), the fixed calls per sample and the
// columns are those of bench_allreduce (ar_data.h, harness.h); rank 0
// reports.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/config.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include "ar_data.h"
#include "harness.h"

namespace {

struct GlooCase {
    gloo::Algorithm *algo = nullptr;
    const float *send = nullptr;
    float *buf = nullptr;
    size_t n = 0;
    int world = 1;
    uint64_t seed = 1;
    std::string error; // first exception of any call
};

} // namespace

static void run_allreduce(void *a)
{
    auto *c = static_cast<GlooCase *>(a);
    if (!c->error.empty())
        return; // the pairs are unusable after a failure
    try {
        std::memcpy(c->buf, c->send, 4 * c->n);
        c->algo->run();
    } catch (const std::exception &e) {
        c->error = e.what();
    }
}

static int verify_allreduce(void *a, char *why, size_t wl)
{
    auto *c = static_cast<GlooCase *>(a);
    if (!c->error.empty()) {
        std::snprintf(why, wl, "gloo: %s", c->error.c_str());
        return 1;
    }
    return sr_ar_check(c->buf, c->n, c->world, c->seed, 0, why, wl) != 0;
}

static float *alloc_floats(size_t n)
{
    void *p = std::aligned_alloc(64, (4 * n + 63) / 64 * 64);
    if (p)
        std::memset(p, 0, 4 * n);
    return static_cast<float *>(p);
}

// Rendezvous through the FileStore in dir and connect the full mesh of
// TCP pairs; nullptr (after a message) on failure.
static std::shared_ptr<gloo::rendezvous::Context> connect_ranks(int rank, int world,
                                                                const std::string &dir,
                                                                const std::string &host,
                                                                long timeout_s)
{
    try {
        gloo::transport::tcp::attr attr(host.c_str());
        auto dev = gloo::transport::tcp::CreateDevice(attr);
        gloo::rendezvous::FileStore store(dir);
        auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, world);
        ctx->setTimeout(std::chrono::milliseconds(timeout_s * 1000));
        ctx->connectFullMesh(store, dev);
        return ctx;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bench_gloo: rank %d: rendezvous failed: %s\n", rank, e.what());
        return nullptr;
    }
}

// One tensor size: fill the input, time AllreduceRing over it, report.
// Returns 0 or 1 (the case failed); *stop is set when the pairs are
// unusable, so no later size can run.
static int run_size(sr_bench &b, const std::shared_ptr<gloo::rendezvous::Context> &ctx, int rank,
                    int world, size_t size, uint64_t seed, float *send, float *buf, bool chunked,
                    bool *stop)
{
    GlooCase c;
    c.n = size / 4;
    c.world = world;
    c.seed = seed;
    c.send = send;
    c.buf = buf;
    sr_ar_fill(send, c.n, rank, c.seed);
    std::unique_ptr<gloo::Algorithm> algo;
    try {
        std::vector<float *> ptrs{buf};
        if (chunked)
            algo.reset(new gloo::AllreduceRingChunked<float>(ctx, ptrs, static_cast<int>(c.n)));
        else
            algo.reset(new gloo::AllreduceRing<float>(ctx, ptrs, static_cast<int>(c.n)));
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bench_gloo: rank %d: allreduce setup: %s\n", rank, e.what());
        *stop = true;
        return 1;
    }
    c.algo = algo.get();
    sr_bench_result r;
    sr_bench_case bc = {"allreduce", chunked ? "gloo-tcp-chunked" : "gloo-tcp", size, run_allreduce,
                        verify_allreduce, &c};
    int failed = sr_bench_run(&b, &bc, &r) ? 1 : 0;
    std::snprintf(r.extra, sizeof r.extra,
                  "workers=%d elems_per_s=%.4g gbps=%.4g best_gbps=%.4g iters=%u", world,
                  static_cast<double>(c.n) / r.median_s, r.median_gbps * 8, r.best_gbps * 8, r.iters);
    sr_bench_report(&b, &r);
    *stop = !c.error.empty();
    return failed;
}

// One rank's whole run (in a child process): connect, then every size.
static int run_rank(sr_bench &b, int rank, int world, const std::string &dir, const std::string &host,
                    size_t sample_bytes, uint64_t seed, long timeout_s, bool chunked)
{
    b.quiet = rank != 0;
    std::shared_ptr<gloo::rendezvous::Context> ctx = connect_ranks(rank, world, dir, host, timeout_s);
    if (!ctx)
        return 1;

    size_t maxn = 0;
    for (unsigned i = 0; i < b.nsizes; i++)
        maxn = b.sizes[i] / 4 > maxn ? b.sizes[i] / 4 : maxn;
    float *send = alloc_floats(maxn), *buf = alloc_floats(maxn);
    if (!send || !buf) {
        std::fprintf(stderr, "bench_gloo: rank %d: out of memory\n", rank);
        return 1;
    }
    char config[384];
    std::snprintf(config, sizeof config,
                  "gloo %d.%d.%d, ranks %d, transport tcp on %s, FileStore rendezvous; "
                  "%s<float> SUM in place, memcpy of the input timed with each call; "
                  "calls per sample %s%zu%s",
                  GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, GLOO_VERSION_PATCH, world, host.c_str(),
                  chunked ? "AllreduceRingChunked" : "AllreduceRing",
                  b.iters ? "" : "max(1, ",
                  b.iters ? static_cast<size_t>(b.iters) : sample_bytes, b.iters ? " (fixed)" : " B / size)");
    sr_bench_begin(&b, config);

    const unsigned user_iters = b.iters;
    int failed = 0;
    bool stop = false;
    for (unsigned s = 0; s < b.nsizes; s++) {
        if (!user_iters) {
            size_t it = sample_bytes / b.sizes[s];
            b.iters = it == 0 ? 1 : it > 4096 ? 4096 : static_cast<unsigned>(it);
        }
        if (run_size(b, ctx, rank, world, b.sizes[s], seed + s, send, buf, chunked, &stop))
            failed = 1;
        if (stop)
            break;
    }
    // No rank closes its pairs while another is still inside a call: on
    // slow links a rank that left early reset the connections its peers
    // were finishing on. (After a failure the pairs are unusable.)
    // Nor does it close them before every peer is out of the barrier: a
    // rank that got all the barrier's messages and closed its pairs made a
    // peer still receiving its own fail ("Connection closed by peer", the
    // stress mode at load 7). So each rank marks its exit in the FileStore
    // (outside the pairs) and waits for every mark before closing.
    try {
        if (!stop) {
            gloo::BarrierAllToAll(ctx).run();
            gloo::rendezvous::FileStore store(dir);
            std::vector<std::string> keys;
            for (int r = 0; r < world; r++)
                keys.push_back("bench_gloo_done_" + std::to_string(r));
            store.set(keys[static_cast<size_t>(rank)], std::vector<char>{'1'});
            store.wait(keys, std::chrono::milliseconds(timeout_s * 1000));
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "bench_gloo: rank %d: closing barrier: %s\n", rank, e.what());
        failed = 1;
    }
    std::free(send);
    std::free(buf);
    int end = sr_bench_end(&b);
    return end ? end : failed;
}

static void remove_dir(const std::string &dir)
{
    if (DIR *d = opendir(dir.c_str())) {
        while (struct dirent *e = readdir(d)) {
            if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, ".."))
                unlink((dir + "/" + e->d_name).c_str());
        }
        closedir(d);
    }
    rmdir(dir.c_str());
}

// A fresh directory for the FileStore, under $TMPDIR or /tmp.
static int make_tmpdir(std::string *dir)
{
    const char *tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/bench_gloo.XXXXXX";
    std::vector<char> path(tmpl.begin(), tmpl.end());
    path.push_back('\0');
    if (!mkdtemp(path.data())) {
        std::perror("bench_gloo: mkdtemp");
        return 1;
    }
    *dir = path.data();
    return 0;
}

// Fork one process per rank (before any thread exists). On a failed fork
// the ranks already started are killed; the caller sees fewer PIDs.
static std::vector<pid_t> spawn_ranks(sr_bench &b, int workers, const std::string &dir,
                                      size_t sample_bytes, uint64_t seed, long timeout_s, bool chunked)
{
    std::fflush(stdout);
    std::fflush(stderr);
    std::vector<pid_t> pids;
    for (int r = 0; r < workers; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            std::perror("bench_gloo: fork");
            for (pid_t p : pids)
                kill(p, SIGKILL);
            break;
        }
        if (pid == 0) {
            int st = run_rank(b, r, workers, dir, "127.0.0.1", sample_bytes, seed, timeout_s, chunked);
            std::fflush(stdout);
            std::fflush(stderr);
            _exit(st);
        }
        pids.push_back(pid);
    }
    return pids;
}

// Wait for every rank, with a deadline; kill the rest on expiry. Returns
// 0, 1 (a rank failed) or 124 (the deadline passed).
static int wait_ranks(const std::vector<pid_t> &pids, size_t timeout_s)
{
    int status = 0;
    size_t left = pids.size();
    const time_t deadline = time(nullptr) + static_cast<time_t>(timeout_s);
    std::vector<bool> done(pids.size(), false);
    bool killed = false;
    while (left > 0) {
        int st = 0;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p > 0) {
            for (size_t i = 0; i < pids.size(); i++)
                if (pids[i] == p && !done[i]) {
                    done[i] = true;
                    left--;
                    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                        std::fprintf(stderr, "bench_gloo: rank %zu %s %d\n", i,
                                     WIFEXITED(st) ? "exited with status" : "killed by signal",
                                     WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
                        status = 1;
                    }
                }
            continue;
        }
        if (!killed && time(nullptr) > deadline) {
            std::fprintf(stderr, "bench_gloo: deadline of %zu s passed: killing the ranks\n", timeout_s);
            for (size_t i = 0; i < pids.size(); i++)
                if (!done[i])
                    kill(pids[i], SIGKILL);
            status = 124;
            killed = true; // then reap them
            continue;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, nullptr);
    }
    return status;
}

// Takes the string options --host ADDR and --store DIR out of argv (the
// harness parses numeric options only); false on one without a value.
static bool take_string_opts(int *argc, char **argv, std::string *host, std::string *store)
{
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        std::string a = argv[i];
        std::string *dst = a.rfind("--host", 0) == 0 ? host : a.rfind("--store", 0) == 0 ? store : nullptr;
        size_t nlen = dst == host ? 6 : 7;
        if (!dst || (a.size() > nlen && a[nlen] != '=')) {
            argv[out++] = argv[i];
            continue;
        }
        if (a.size() > nlen)
            *dst = a.substr(nlen + 1);
        else if (i + 1 < *argc)
            *dst = argv[++i];
        else
            return false;
        if (dst->empty())
            return false;
    }
    *argc = out;
    return true;
}

int main(int argc, char **argv)
{
    sr_bench b;
    size_t workers = 2, sample_bytes = static_cast<size_t>(32) << 20, seed = 1, timeout_s = 900;
    size_t one_rank = SIZE_MAX, chunked = 0;
    std::string host = "127.0.0.1", store;
    if (!take_string_opts(&argc, argv, &host, &store)) {
        std::fprintf(stderr, "bench_gloo: --host and --store need a value\n");
        return 2;
    }
    const sr_bench_opt opts[] = {
        {"-n", "ranks to start (2..64)", &workers},
        {"--rank", "run this rank only, in this process (with --store DIR, shared by every rank, "
                   "and --host ADDR, this rank's address; default: all ranks on 127.0.0.1)",
         &one_rank},
        {"--chunked", "1: AllreduceRingChunked (reduce-scatter + allgather) instead of AllreduceRing",
         &chunked},
        {"--sample-bytes", "tensor bytes per timed sample when --iters is 0", &sample_bytes},
        {"--seed", "input seed", &seed},
        {"--timeout", "seconds before the ranks are killed", &timeout_s},
    };
    sr_bench_init(&b, "bench_gloo", static_cast<size_t>(16) << 20);
    b.sweeps = 1;
    b.reps = 5;
    int rc = sr_bench_parse(&b, argc, argv, opts, sizeof opts / sizeof opts[0]);
    if (rc)
        return rc > 0 ? 0 : 2;
    if (workers < 2 || workers > 64 || timeout_s == 0) {
        std::fprintf(stderr, "bench_gloo: need 2 <= -n <= 64 and --timeout >= 1\n");
        return 2;
    }
    for (unsigned i = 0; i < b.nsizes; i++)
        if (b.sizes[i] % 4 || b.sizes[i] / 4 > INT32_MAX) {
            std::fprintf(stderr, "bench_gloo: size %zu is not a whole number of floats below 2^31\n",
                         b.sizes[i]);
            return 2;
        }
    if (one_rank != SIZE_MAX) {
        if (one_rank >= workers || store.empty()) {
            std::fprintf(stderr, "bench_gloo: --rank needs --store DIR and a rank below -n\n");
            return 2;
        }
        return run_rank(b, static_cast<int>(one_rank), static_cast<int>(workers), store, host, sample_bytes,
                        seed, static_cast<long>(timeout_s), chunked != 0);
    }

    std::string dir;
    if (make_tmpdir(&dir))
        return 1;
    std::vector<pid_t> pids = spawn_ranks(b, static_cast<int>(workers), dir, sample_bytes, seed,
                                          static_cast<long>(timeout_s), chunked != 0);
    int status = wait_ranks(pids, timeout_s);
    if (pids.size() != workers)
        status = status ? status : 1;
    remove_dir(dir);
    return status;
}
