/* SPDX-License-Identifier: Apache-2.0 */
/*
 * serene.h - the public C API of libserene.
 *
 * Serene aggregates gradients of data-parallel training in the network: each
 * worker's float32 (or float16, bfloat16) tensor is turned into 32- or
 * 16-bit fixed-point packets, the switch (a
 * programmable switch running p4/, or serene-switch on a host) sums them, and
 * every worker gets the sum back.
 *
 * Setup, in this order:
 *
 *     serene_config cfg;
 *     serene_config_init(&cfg);            // documented defaults
 *     serene_config_from_env(&cfg);        // optional: SERENE_* variables
 *     cfg.timeout_ms = 5000;               // optional: explicit overrides
 *     serene_ctx *ctx;
 *     int rc = serene_ctx_create(&ctx, &cfg);
 *     ...
 *     serene_ctx_destroy(&ctx);
 *
 * The essential calls:
 *   serene_config_init, serene_config_from_env  defaults, SERENE_* vars
 *   serene_ctx_create, serene_ctx_destroy       join the job, leave it
 *   serene_allreduce, serene_allreduce_typed    sum or average over workers
 *   serene_allreduce_start, serene_op_wait      the same without blocking
 *   serene_push, serene_pull, serene_clock      the SSP store and barrier
 *   serene_step                                 push, clock and pull in one
 *   serene_stale_start, serene_stale_bound      SSP for a model of any size
 *   serene_strerror, serene_get_stats           what failed; the counters
 *
 * Each function's comment opens with "name - summary." and says what it
 * returns ("Returns:", 0 and each error code on a line of its own),
 * whether and until when it blocks ("Blocks:") and which threads may call
 * it ("Threads:"); tests/docs/check_docs.py holds every function to that.
 *
 * Conventions:
 * - A function that returns int returns 0 (SERENE_OK) or a negative error
 *   code (serene_config_dump: or a length); see serene_strerror().
 *   Negative values above SERENE_ERR_BASE_ are -errno.
 * - No call blocks forever: a communication call ends by its deadline,
 *   serene_config.timeout_ms after the call, at the latest (an op queued
 *   behind earlier ones of its context waits within its own deadline;
 *   serene_ctx_create counts from the moment its transport is open).
 * - Starting calls (every allreduce, push, pull, clock, step and
 *   stale_start form) run on one thread at a time per context: one made
 *   while another thread is inside such a call on the same context (a
 *   blocking form is inside until it returns) returns
 *   SERENE_ERR_CONCURRENT and does nothing (the order of a context's calls
 *   pairs them with the other workers' calls, so two threads at once would
 *   mix their data). The other calls may run on any thread, during a
 *   starting call too; serene_op_test and serene_op_wait once per op.
 * - Ops: a _start form returns at once; its op runs after the ops started
 *   before it on the context and holds one of the context's max_ops
 *   descriptors until serene_op_wait releases it. Every starting call,
 *   blocking or not, returns SERENE_ERR_BUSY while all max_ops are held.
 * - Refusals: where the switch answers a request with ERROR, the call
 *   returns its status as SERENE_ERR_NOJOB, SERENE_ERR_NOTMEMBER,
 *   SERENE_ERR_STALE, SERENE_ERR_MISMATCH, SERENE_ERR_UNSUPPORTED,
 *   SERENE_ERR_RANGE, SERENE_ERR_JOB_IN_USE or SERENE_ERR_DENIED, or as
 *   SERENE_ERR_PROTO for any other status (the log names it). A Returns
 *   list names the refusals its call meets; "other refusals" the rest.
 * - Several contexts may live in one process; the library has no global
 *   state except DPDK's EAL, which is per process (see dpdk_eal_args).
 * - Stale handles fail cleanly: a call through a destroyed context (a copy
 *   of its pointer) returns SERENE_ERR_INVAL, and destroying it again does
 *   nothing; so does waiting for or testing an op that was already waited
 *   for. To make this safe, a destroyed context leaves a few KiB of
 *   reserved address space behind (no memory), never reused.
 * - The library never exits, aborts, or prints on the data path; it logs
 *   through serene_config.log_fn.
 */
#ifndef SERENE_SERENE_H
#define SERENE_SERENE_H

#include <stddef.h>
#include <stdint.h>

#include "serene/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define SERENE_API
#elif defined(__GNUC__) || defined(__clang__)
#define SERENE_API __attribute__((visibility("default")))
#else
#define SERENE_API
#endif

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

/*
 * Library-specific error codes live in their own block below
 * SERENE_ERR_BASE_; any other negative value is a negated errno from the
 * system. One list generates the enum, serene_strerror and serene_err_name.
 */
#define SERENE_ERR_BASE_ (-1000)

#define SERENE_ERRNO_MAP(X)                                                    \
    X(INVAL, 1, "invalid argument")                                            \
    X(NOMEM, 2, "out of memory")                                               \
    X(TIMEOUT, 3, "deadline passed before the operation completed")            \
    X(NONFINITE, 4, "input holds NaN or Inf")                                  \
    X(CONFIG, 5, "invalid configuration")                                      \
    X(TRANSPORT, 6, "transport failure")                                       \
    X(UNSUPPORTED, 7, "not supported by this build or by the switch")         \
    X(NOJOB, 8, "the switch does not know this job")                           \
    X(NOTMEMBER, 9, "worker id outside the job or bound to another address")   \
    X(PROTO, 10, "protocol error: the switch refused a message with a status this library does not know, or announced invalid job parameters (see the log)") \
    X(MISMATCH, 11, "workers disagree on the operation (size or order)")       \
    X(BROKEN, 12, "context unusable after an earlier failure")                 \
    X(BUSY, 13, "too many operations in flight")                               \
    X(AGAIN, 14, "operation still in progress")                                \
    X(STALE, 15, "worker rejoined the same job incarnation")                   \
    X(RANGE, 16, "access beyond the store's capacity")                         \
    X(SHUTDOWN, 17, "context is shutting down")                                \
    X(JOB_IN_USE, 18, "the job's previous run still has workers bound at the switch")     \
    X(CONCURRENT, 19, "another thread is inside a call on this context")            \
    X(DENIED, 20, "the switch refused the job's admission token (SERENE_JOB_TOKEN)")     \
    X(NODEV, 21, "the transport's device was not found (no RDMA device, or none of that name)")

typedef enum serene_err {
    SERENE_OK = 0,
#define SERENE_ERR_ENUM_(name, n, msg) SERENE_ERR_##name = SERENE_ERR_BASE_ - (n),
    SERENE_ERRNO_MAP(SERENE_ERR_ENUM_)
#undef SERENE_ERR_ENUM_
} serene_err;

/* serene_strerror - a human-readable message for any return code.
 * Returns: static text, never NULL: for a -errno code the C library's
 *   strerror(), for a code of neither kind "unknown error".
 * Blocks: no.
 * Threads: any (as the C library's strerror for -errno codes). */
SERENE_API const char *serene_strerror(int code);
/* serene_err_name - the symbolic name of any return code.
 * Returns: static text, never NULL: "SERENE_ERR_TIMEOUT", "ENOMEM",
 *   "SERENE_OK"; "SERENE_ERR_UNKNOWN" for a code of neither kind.
 * Blocks: no.
 * Threads: any. */
SERENE_API const char *serene_err_name(int code);

/* ------------------------------------------------------------------------ */
/* Version                                                                   */
/* ------------------------------------------------------------------------ */

/* serene_version - the version string of the library actually loaded.
 * Returns: e.g. "0.1.0", in static storage.
 * Blocks: no.
 * Threads: any. */
SERENE_API const char *serene_version(void);
/* serene_version_int - the version of the library actually loaded, as a number.
 * Returns: (major << 16) | (minor << 8) | patch.
 * Blocks: no.
 * Threads: any. */
SERENE_API unsigned serene_version_int(void);

/* ------------------------------------------------------------------------ */
/* Configuration                                                             */
/* ------------------------------------------------------------------------ */

typedef enum serene_log_level {
    SERENE_LOG_ERROR = 0,
    SERENE_LOG_WARN = 1,
    SERENE_LOG_INFO = 2,
    SERENE_LOG_DEBUG = 3,
} serene_log_level;

/* Log sink. Called from the API thread or the context's data-path thread;
 * msg is valid only during the call and has no trailing newline. */
typedef void (*serene_log_fn)(void *cookie, serene_log_level level, const char *msg);

#define SERENE_ADDR_MAX 64
#define SERENE_NAME_MAX 16
#define SERENE_PATH_MAX 96

typedef struct serene_config {
    /* This worker's rank, 0..world_size-1. Default 0. Env SERENE_RANK. */
    int rank;
    /* Number of workers in the job, 1..64. Default 1. Env SERENE_WORLD_SIZE. */
    int world_size;
    /* Job id known to the switch, 0..65535. Default 0. Env SERENE_JOB. */
    int job_id;
    /* Job incarnation: a JOIN carrying a new nonce resets the job's state
     * in the switch. serene-run sets a fresh one per launch. Default 0.
     * Env SERENE_JOB_NONCE. */
    uint32_t job_nonce;
    /* The switch, "host:port" (IPv4 or name). Default "127.0.0.1:48200".
     * Env SERENE_SWITCH. */
    char switch_addr[SERENE_ADDR_MAX];
    /* Local address to bind, "host[:port]"; empty = any, ephemeral port
     * (dpdk: see below). Default "". Env SERENE_BIND. */
    char bind_addr[SERENE_ADDR_MAX];
    /* Transport name: "udp" (built in), "dpdk", "rdma" when built;
     * "rdma:DEVICE" names the RDMA device (e.g. "rdma:mlx5_0"; "rdma" takes
     * the first; lib/transport/rdma/README.md). Default "udp".
     * Env SERENE_TRANSPORT. */
    char transport[SERENE_NAME_MAX];
    /* Deadline of every call, in milliseconds from its start (create, each
     * allreduce). Default 30000. Env SERENE_TIMEOUT_MS. */
    int timeout_ms;
    /* First retransmission timeout in microseconds; doubles on every retry
     * of the same packet up to rto_max_us. Default 2000 / 100000.
     * Env SERENE_RTO_US, SERENE_RTO_MAX_US. */
    int rto_us;
    int rto_max_us;
    /* Retries of one packet before its operation fails with
     * SERENE_ERR_TIMEOUT; 0 = bounded by the deadline only. Default 0.
     * Env SERENE_RETRY_LIMIT. */
    int retry_limit;
    /* Switch slots an allreduce uses, and so its packets in flight per
     * worker at most; 0 = the job's pool size announced by the switch. Must
     * be the same on every worker of the job (packets map to slots by it;
     * a difference is reported as SERENE_ERR_MISMATCH). Below it, the
     * number in flight adapts to congestion (halved on a loss while the
     * path queues, never below a quarter of it; stats.window_cuts); the
     * pieces of a step and the requests of a push or pull adapt the same
     * way. On a switch with no slots (pool 0) push, pull and step use
     * this, or 128 when it is 0.
     * Default 0. Env SERENE_WINDOW. */
    int window;
    /* Operations that may be started and not yet waited for. Default 16. */
    int max_ops;
    /* CPU features the quantization kernels may use, ANDed with what the CPU
     * has: bit 0 AVX2, bit 1 AVX-512. Default ~0u. Env SERENE_CPU_MASK
     * (decimal, e.g. 3 for both). */
    unsigned cpu_mask;
    /* Fractional bits of the SSP store's fixed point for the float forms of
     * push and pull: a value x is stored as rne(x * 2^store_frac_bits) in an
     * int32 accumulator. 0..30; must agree across the job's workers.
     * Default 16 (resolution 1.5e-5, accumulators wrap at +-32768).
     * Env SERENE_STORE_FRAC_BITS. */
    int store_frac_bits;
    /* Log threshold. Default SERENE_LOG_WARN. Env SERENE_LOG_LEVEL
     * (error|warn|info|debug or 0..3). */
    serene_log_level log_level;
    /* Log sink; NULL = stderr. Default NULL. */
    serene_log_fn log_fn;
    void *log_cookie;
    /* Packet trace: when not empty, every packet the context sends, and
     * every one it receives, is appended to this pcap file (Ethernet frames,
     * nanosecond timestamps; the IPv4 addresses and UDP ports are the
     * socket's own, so the flows look real in Wireshark; read it with
     * serene-dump). "%r" in the path is replaced by the rank (ranks started
     * by serene-run share the environment), "%%" by "%". The file is
     * created or truncated by serene_ctx_create, which fails with
     * SERENE_ERR_CONFIG if it cannot be opened, or SERENE_ERR_UNSUPPORTED
     * in a build without libpcap. Tracing costs a copy, two checksums and a
     * write per packet: for debugging, not for speed. Default "" (off).
     * Env SERENE_PCAP. */
    char pcap_path[SERENE_PATH_MAX];
    /* DPDK transport (transport "dpdk"; the other transports ignore these).
     * Its IPv4 and UDP addresses are switch_addr and bind_addr (no kernel
     * picks a port: an empty bind_addr, or port 0, means port
     * 48201 + rank and source address 0.0.0.0).
     *
     * EAL arguments, split at blanks (no quoting), e.g. "--no-huge -m 256
     * --no-pci --file-prefix=w%r --vdev=net_memif0,role=client,socket=S%r"
     * ("%r" is replaced by the rank, "%%" by "%"). The first dpdk context of
     * the process starts EAL with them, unless the application has started
     * EAL already: then they are ignored and the library never cleans EAL up.
     * NULL or "" with EAL not running: serene_ctx_create fails with
     * SERENE_ERR_CONFIG. serene_ctx_create copies the string (and
     * serene_ctx_config returns the context's copy, valid while it lives).
     * Default NULL. Env SERENE_DPDK_EAL_ARGS (the pointer then refers to
     * the environment). */
    const char *dpdk_eal_args;
    /* The port: an ethdev port id ("0"), the name of a device EAL has
     * (e.g. "net_memif0" from --vdev, or a PCI address), or a virtual
     * device with arguments ("net_tap0,iface=sr0"), then created by the
     * context and removed when it ends. "%r" as above. A port serves one
     * context of the process at a time (its queue pair and mempool are the
     * context's). Copied like dpdk_eal_args. Default NULL ("0").
     * Env SERENE_DPDK_PORT. */
    const char *dpdk_port;
    /* Ethernet source address; all zero = the port's own. A different one
     * puts the port in promiscuous mode. Default zero.
     * Env SERENE_DPDK_MAC ("aa:bb:cc:dd:ee:ff"). */
    uint8_t dpdk_mac[6];
    /* Ethernet address of the switch (or next hop); all zero = broadcast
     * ff:ff:ff:ff:ff:ff, which suits point-to-point links (memif, a veth
     * pair, a cable). Default zero. Env SERENE_DPDK_PEER_MAC. */
    uint8_t dpdk_peer_mac[6];
    /* The inverse of SERENE_UDP_GSO: udp_gso_off 1 is SERENE_UDP_GSO=0.
     * 1: the udp transport sends one datagram per send call, never a UDP
     * GSO train. 0 (the default): trains where the kernel has GSO, once
     * the path has passed one: after the join, before the first burst
     * that could go as a train, the library sends a test train and then a
     * single datagram; trains go on if the train is answered, stay off
     * with one warning if only the single is (a path that drops them
     * whole, such as a veth pair into BMv2's packet socket), and stay off
     * while neither is (the test is sent again, a few times in all).
     * Env SERENE_UDP_GSO (0: off, 1: on). */
    uint8_t udp_gso_off;
    /* Bits per value on the wire for float32 allreduces that name no
     * width (serene_allreduce, or serene_allreduce_typed without
     * SERENE_WIRE16 / SERENE_WIRE32): 32, or 16 (half the bytes per
     * link, with the coarser bound of serene_allreduce_typed); 0 means
     * 32. Must agree across the job's workers (a disagreement is
     * SERENE_ERR_MISMATCH). Default 0. Env SERENE_WIRE_BITS (16 or 32). */
    uint8_t wire_bits;
    /* Reserved for future fields; must stay zero. */
    uint8_t reserved_[18 - 2 * sizeof(void *)];
} serene_config;

/* serene_config_init - fill cfg with the documented defaults.
 * Every field gets the default its comment states, the reserved bytes
 * zero; the environment is not read. NULL does nothing.
 * Returns: nothing.
 * Blocks: no.
 * Threads: any. */
SERENE_API void serene_config_init(serene_config *cfg);

/*
 * serene_config_from_env - overwrite fields from the SERENE_* variables set.
 *
 * Numbers, ports included, are decimal digits only: no sign, blank or 0x,
 * and a leading zero is not octal ("010" is ten). SERENE_SWITCH is
 * "host:port" (port 1..65535); SERENE_BIND is "", "host", "host:port" or
 * ":port" (port 0..65535); host is an IPv4 address or a name.
 * rank and world_size come from SERENE_RANK and SERENE_WORLD_SIZE; when
 * neither is set, from the first launcher that sets its pair: torchrun
 * (RANK, WORLD_SIZE), then Open MPI (OMPI_COMM_WORLD_RANK,
 * OMPI_COMM_WORLD_SIZE), then Slurm (SLURM_PROCID, SLURM_NTASKS). A
 * launcher that sets only one of its pair is an error (never mixed with
 * another's). SERENE_JOB_TOKEN is read by serene_ctx_create instead.
 * Returns:
 *   0                      every variable set was valid
 *   SERENE_ERR_INVAL       cfg is NULL
 *   SERENE_ERR_CONFIG      a value does not parse or is out of range; each
 *                          is logged (cfg's log sink), the valid ones applied
 * Blocks: no.
 * Threads: any, while no thread changes the environment (setenv, putenv).
 */
SERENE_API int serene_config_from_env(serene_config *cfg);

/* serene_config_dump - write cfg as "key = value" lines, one per field, to buf.
 * NUL-terminated and truncated to len, like snprintf; with buf NULL only
 * the length is computed. Dump serene_ctx_config's output for the
 * effective configuration.
 * Returns:
 *   >= 0                   the length it needed, excluding the NUL
 *   SERENE_ERR_INVAL       cfg is NULL
 * Blocks: no.
 * Threads: any. */
SERENE_API int serene_config_dump(const serene_config *cfg, char *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* Context                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct serene_ctx serene_ctx;

/*
 * serene_ctx_create - validate cfg, open the transport and join the job.
 *
 * Starts the context's data-path thread and joins the job at the switch
 * (lib/README.md, "Jobs and joining"). cfg is copied; it need not outlive
 * the call. *ctx is the new context, or NULL after an error.
 * The admission token is read here from the environment, SERENE_JOB_TOKEN
 * (1 to 16 hex digits; unset: none, which only a job without a token
 * admits; serene-run sets a fresh one per launch); this struct has no room
 * left for it.
 * Returns:
 *   0                      joined
 *   SERENE_ERR_INVAL       ctx or cfg is NULL
 *   SERENE_ERR_CONFIG      a bad field (logged), a malformed SERENE_JOB_TOKEN,
 *                          an unknown transport, an address that does not
 *                          resolve, a pcap_path that cannot be opened, or a
 *                          job the switch describes otherwise (its world
 *                          size; a window above its pool)
 *   SERENE_ERR_UNSUPPORTED the transport, or pcap_path, not in this build
 *   SERENE_ERR_NODEV       transport rdma: no RDMA device on this host, or
 *                          none of the name given (the log says which)
 *   SERENE_ERR_TRANSPORT   the socket, the device or its port cannot be set up
 *   SERENE_ERR_NOMEM       out of memory
 *   SERENE_ERR_TIMEOUT     the switch stayed silent (also one of another wire
 *                          version, which drops the JOIN)
 *   SERENE_ERR_NOJOB       the switch does not know job_id
 *   SERENE_ERR_NOTMEMBER   rank outside the job, or bound to another address
 *   SERENE_ERR_STALE       rank already joined this run (job_nonce) from
 *                          another context
 *   SERENE_ERR_JOB_IN_USE  a new job_nonce while workers of the job's previous
 *                          run are still bound: they leave when their
 *                          contexts are destroyed, or the operator resets the
 *                          job on the switch
 *   SERENE_ERR_DENIED      the JOIN did not carry the job's admission token
 *   SERENE_ERR_PROTO       invalid job parameters announced; or a refusal
 *                          of another status (Conventions)
 *   -errno                 a system call failed (eventfd, pthread_create)
 * Blocks: until the switch answers the JOIN, by cfg->timeout_ms after the
 *   transport is open; opening it (resolving host names, starting DPDK's
 *   EAL, opening an RDMA device) comes first, outside that bound.
 * Threads: any; several contexts may be created at once.
 */
SERENE_API int serene_ctx_create(serene_ctx **ctx, const serene_config *cfg);

/*
 * serene_ctx_destroy - leave the job, free the context and set *ctx to NULL.
 *
 * Stops the data-path thread, tells the switch this worker leaves (LEAVE,
 * best effort: no answer awaited), closes the transport and frees
 * everything. Operations not yet waited for are abandoned; once it has
 * returned the library no longer touches their buffers. Accepts NULL, a
 * pointer to NULL, and a copy of an already destroyed context (then only
 * sets *ctx to NULL).
 * Returns: nothing. Refused, with an error logged and nothing changed,
 *   while another thread is inside a starting call on the context or waits
 *   for it in serene_op_wait or serene_stale_bound.
 * Blocks: until the data-path thread has stopped; never for the network.
 * Threads: any; starting calls made meanwhile return SERENE_ERR_CONCURRENT,
 *   and the calls that only read the context (serene_ctx_config,
 *   serene_get_stats, serene_get_clock_info, serene_store_capacity,
 *   serene_op_test) must not overlap it.
 */
SERENE_API void serene_ctx_destroy(serene_ctx **ctx);

/* serene_ctx_config - the context's effective configuration.
 * *out is cfg as the context copied it, with the window in force (when
 * cfg.window was 0: the switch's pool, or 128 if it has none) and
 * dpdk_eal_args and dpdk_port pointing at the context's copies (valid
 * while it lives).
 * Returns:
 *   0                      *out filled
 *   SERENE_ERR_INVAL       ctx NULL or destroyed, or out NULL
 * Blocks: no.
 * Threads: any. */
SERENE_API int serene_ctx_config(const serene_ctx *ctx, serene_config *out);

/* ------------------------------------------------------------------------ */
/* Allreduce                                                                 */
/* ------------------------------------------------------------------------ */

typedef enum serene_reduce_op {
    SERENE_SUM = 0,
    SERENE_AVG = 1,
} serene_reduce_op;

typedef struct serene_op serene_op;

/*
 * serene_allreduce - sum or average count floats over all workers of the job.
 *
 * On return recvbuf[i] = the sum (SERENE_SUM) or mean (SERENE_AVG) over
 * the N = world_size workers w of their sendbuf x_w[i], within this bound
 * (lib/README.md, "Fixed point with no possible overflow"). For element i
 * of packet k (elements [k*P, (k+1)*P), P the job's values per packet, 256
 * by default) let E = max over w of
 * clamp(floor(log2(max_{j in k} |x_w[j]|)), -96, 126) (-96 when all are
 * 0), B = 30 - ceil(log2 N), and ulp(r) the spacing of floats at |r|:
 * 2^(e-23) for |r| in [2^e, 2^(e+1)), 2^-149 below 2^-126. Then
 *     SUM: |r_i - sum_w x_w[i]|       <= N * 2^(E-B) + ulp(r_i)/2
 *     AVG: |r_i - (sum_w x_w[i]) / N| <=     2^(E-B) + ulp(r_i)/2
 * whenever r_i is finite, in the default floating point environment (round
 * to nearest, no flush-to-zero); an average is rounded once. E never goes
 * below -96: values under 2^-96 (1.26e-29) get the absolute bound
 * N * 2^(-96-B), not a relative one; subnormal inputs typically come back
 * as 0.
 * Non-finite results: a NaN or Inf in any worker's sendbuf makes its
 * packet NaN; a SUM element beyond the float range (|exact sum| above
 * 2^128 - 2^103, give or take N * 2^(E-B)) is +-Inf. Either way the call
 * completes on every worker with SERENE_ERR_NONFINITE, the other elements
 * obey the bound and the context stays usable. An AVG of finite inputs is
 * finite (3e38 on 3 workers averages to 3e38).
 * Every worker of the job must make the same sequence of calls with the
 * same count; a call of count 0 is a call too (it completes when every
 * worker has made it). Workers whose counts differ all get
 * SERENE_ERR_MISMATCH, promptly (lib/README.md, "Streaming allreduce").
 * After a MISMATCH, a TIMEOUT or another refusal, allreduce on the context
 * returns SERENE_ERR_BROKEN, while push, pull and clock go on: start a new
 * run of the job (destroy every worker's context, create new ones with a
 * new job_nonce).
 * sendbuf, recvbuf: count floats each, valid during the call (may be NULL
 * when count is 0); recvbuf may be sendbuf (in place), else they must not
 * overlap. While it waits, the calling thread reads sendbuf's per-packet
 * exponents for the context's data-path thread (one pass over sendbuf,
 * early in the call); serene_allreduce_start leaves that to that thread.
 * Returns:
 *   0                      recvbuf holds the result, within the bound
 *   SERENE_ERR_INVAL       ctx NULL or destroyed; a NULL buffer with count
 *                          > 0; buffers that overlap but are not equal; op
 *                          unknown; count above 2^31 - 1
 *   SERENE_ERR_CONCURRENT  another thread is inside a starting call on ctx
 *   SERENE_ERR_BUSY        max_ops ops started and not yet waited for
 *   SERENE_ERR_UNSUPPORTED the switch has no allreduce slots (its JOIN_ACK
 *                          announced a pool of 0)
 *   SERENE_ERR_BROKEN      an earlier allreduce of ctx failed (above)
 *   SERENE_ERR_NONFINITE   NaN/Inf in some sendbuf, or a sum beyond the float
 *                          range (above); recvbuf is filled
 *   SERENE_ERR_MISMATCH    the workers' counts or orders differ
 *   SERENE_ERR_TIMEOUT     deadline or retry limit passed
 *   other refusals         e.g. SERENE_ERR_NOJOB: the job was removed
 * Blocks: until every worker's part is summed, by timeout_ms after the call.
 * Threads: a starting call (Conventions).
 */
SERENE_API int serene_allreduce(serene_ctx *ctx, const float *sendbuf, float *recvbuf,
                                size_t count, serene_reduce_op op);

/* Element types of an allreduce's buffers. */
typedef enum serene_dtype {
    SERENE_FLOAT32 = 0,  /* IEEE 754 binary32 (float) */
    SERENE_FLOAT16 = 1,  /* IEEE 754 binary16 (torch.float16), as uint16_t */
    SERENE_BFLOAT16 = 2, /* bfloat16 (torch.bfloat16): float32's top 16 bits, as uint16_t */
} serene_dtype;

/* Allreduce flags: the width of the values on the wire. Without either,
 * float16 and bfloat16 travel as 16-bit values and float32 as
 * serene_config.wire_bits says. */
#define SERENE_WIRE16 0x1u /* 16-bit fixed point: half the bytes per link */
#define SERENE_WIRE32 0x2u /* 32-bit fixed point */

/*
 * serene_allreduce_typed - serene_allreduce of count values of dtype.
 *
 * flags choose the wire's width: SERENE_WIRE16, SERENE_WIRE32 or 0
 * (above). sendbuf and recvbuf hold count elements of dtype each (float,
 * or uint16_t for the 16-bit types); the rules and in-place use are
 * serene_allreduce's. A 16-bit wire carries two values to a 32-bit word,
 * so a packet holds twice the values, and with N workers keeps B = 15 -
 * ceil(log2 N) bits (13 at N = 4, 12 at N = 8): the switch's sums of the
 * words hold the exact 16-bit sums (lib/README.md, "16-bit values", also
 * for the error measured on real gradients). With E and ulp as for
 * serene_allreduce, the float32 result r_i obeys
 *     SUM: |r_i - sum_w x_w[i]|       <= N * 2^(E+1-B) + ulp(r_i)/2
 *     AVG: |r_i - (sum_w x_w[i]) / N| <=     2^(E+1-B) + ulp(r_i)/2
 * (a 32-bit wire keeps serene_allreduce's bound); a float16 or bfloat16
 * result is that float32 result rounded to nearest even in its format:
 * add half its spacing there, ulp16(r_i)/2 (float16: 2^(e-10) for |r| in
 * [2^e, 2^(e+1)), 2^-24 below 2^-14; bfloat16: 2^(e-7), 2^-133 below
 * 2^-126). A SUM beyond the format's range (65504 for float16) is +-Inf,
 * reported as SERENE_ERR_NONFINITE like NaN/Inf inputs. Every worker of
 * the job must make the call with the same count and the same wire width;
 * their dtypes may differ.
 * Returns:
 *   0                      recvbuf holds the result, within the bound
 *   SERENE_ERR_INVAL       as serene_allreduce; also an unknown dtype or
 *                          flag, or both width flags
 *   SERENE_ERR_CONCURRENT  another thread is inside a starting call on ctx
 *   SERENE_ERR_BUSY        max_ops ops started and not yet waited for
 *   SERENE_ERR_UNSUPPORTED the switch has no allreduce slots
 *   SERENE_ERR_BROKEN      an earlier allreduce of ctx failed
 *   SERENE_ERR_NONFINITE   NaN/Inf in some sendbuf, or a sum beyond the
 *                          result format's range; recvbuf is filled
 *   SERENE_ERR_MISMATCH    the workers' counts, orders or widths differ
 *   SERENE_ERR_TIMEOUT     deadline or retry limit passed
 *   other refusals         e.g. SERENE_ERR_NOJOB: the job was removed
 * Blocks: until every worker's part is summed, by timeout_ms after the call.
 * Threads: a starting call (Conventions).
 */
SERENE_API int serene_allreduce_typed(serene_ctx *ctx, const void *sendbuf, void *recvbuf,
                                      size_t count, serene_dtype dtype, serene_reduce_op op,
                                      unsigned flags);

/*
 * serene_allreduce_start - start serene_allreduce; return at once.
 *
 * *op_out is the op (NULL after an error); serene_op_wait gives its
 * result. sendbuf and recvbuf must stay valid, and sendbuf unchanged,
 * until serene_op_wait returns. Ops complete in the order they were
 * started. The data-path thread reads sendbuf's exponents itself.
 * Returns:
 *   0                      started
 *   SERENE_ERR_INVAL       op_out NULL, or serene_allreduce's reasons
 *   SERENE_ERR_CONCURRENT  another thread is inside a starting call on ctx
 *   SERENE_ERR_BUSY        max_ops ops started and not yet waited for
 *   SERENE_ERR_UNSUPPORTED the switch has no allreduce slots
 *   SERENE_ERR_BROKEN      an earlier allreduce of ctx failed
 *   serene_op_wait then returns 0, SERENE_ERR_NONFINITE, SERENE_ERR_MISMATCH,
 *   SERENE_ERR_TIMEOUT, SERENE_ERR_BROKEN or another refusal, as
 *   serene_allreduce.
 * Blocks: no.
 * Threads: a starting call (Conventions).
 */
SERENE_API int serene_allreduce_start(serene_ctx *ctx, const float *sendbuf, float *recvbuf,
                                      size_t count, serene_reduce_op op, serene_op **op_out);
/*
 * serene_allreduce_typed_start - start serene_allreduce_typed; return at once.
 *
 * Buffers, order and *op_out as for serene_allreduce_start.
 * Returns:
 *   0                      started
 *   SERENE_ERR_INVAL       op_out NULL, or serene_allreduce_typed's reasons
 *   SERENE_ERR_CONCURRENT  another thread is inside a starting call on ctx
 *   SERENE_ERR_BUSY        max_ops ops started and not yet waited for
 *   SERENE_ERR_UNSUPPORTED the switch has no allreduce slots
 *   SERENE_ERR_BROKEN      an earlier allreduce of ctx failed
 *   serene_op_wait then returns serene_allreduce_typed's other codes.
 * Blocks: no.
 * Threads: a starting call (Conventions).
 */
SERENE_API int serene_allreduce_typed_start(serene_ctx *ctx, const void *sendbuf, void *recvbuf,
                                            size_t count, serene_dtype dtype,
                                            serene_reduce_op op, unsigned flags,
                                            serene_op **op_out);

/* serene_op_test - whether op has finished, without waiting or releasing it.
 * Returns:
 *   0                      finished, successfully or not (serene_op_wait tells)
 *   SERENE_ERR_AGAIN       still running
 *   SERENE_ERR_INVAL       NULL or a stale handle (already waited for, or its
 *                          context destroyed)
 * Blocks: no.
 * Threads: any. */
SERENE_API int serene_op_test(serene_op *op);

/*
 * serene_op_wait - wait for op to finish, release it and return its result.
 *
 * Sets *op to NULL. A stale handle (already waited for, by this or another
 * thread, or its context destroyed) is refused at once; the check can only
 * be fooled by a copy kept while its descriptor was reused a multiple of
 * 256 times (each of the max_ops descriptors is used in turn).
 * Returns:
 *   the op's result        0, or the codes its _start form lists for it
 *   SERENE_ERR_INVAL       op or *op NULL, or a stale handle
 *   SERENE_ERR_SHUTDOWN    the context is being destroyed
 * Blocks: until the op has finished: by its deadline (timeout_ms after the
 *   call that started it) at the latest; a stale handle not at all.
 * Threads: any, once per op: of two threads that wait for one op, one gets
 *   its result, the other SERENE_ERR_INVAL. serene_ctx_destroy is refused
 *   while it waits.
 */
SERENE_API int serene_op_wait(serene_op **op);

/* ------------------------------------------------------------------------ */
/* Statistics                                                                */
/* ------------------------------------------------------------------------ */

typedef struct serene_stats {
    uint64_t pkts_sent;       /* packets handed to the transport */
    uint64_t pkts_recv;       /* packets received and accepted */
    uint64_t bytes_sent;      /* Serene header + payload bytes sent */
    uint64_t bytes_recv;
    uint64_t retransmissions; /* packets sent again in full: a request whose timer
                                 expired, or an allreduce packet the switch said
                                 it lacks (lost) */
    uint64_t timeouts;        /* operations failed by their deadline or retry limit */
    uint64_t saturations;     /* values clamped by quantization (should stay 0) */
    uint64_t duplicates;      /* results received for a round already done */
    uint64_t rejected;        /* malformed, truncated or foreign packets dropped */
    uint64_t ops_completed;   /* operations finished successfully */
    uint64_t clock_wait_ns;   /* total time spent in serene_clock calls */
    uint64_t holds;           /* clock calls, steps and stream-mode clocks the
                                 barrier held at least once */
    uint64_t releases;        /* RELEASE messages that let a held clock call go on */
    uint64_t probes;          /* header-only probes sent for allreduce packets or
                                 step pieces whose timer expired, instead of
                                 resending them */
    uint64_t held;            /* answers to probes (or resends) saying the switch
                                 holds the packet and waits for other workers */
    uint64_t window_cuts;     /* times a lost (or, on a queueing path, late)
                                 allreduce packet, step piece or push/pull
                                 request halved the window of packets in
                                 flight (it grows back by one per window of
                                 answers, up to the slots) */
    uint64_t results_switch;   /* allreduce results summed in the switch */
    uint64_t results_fallback; /* allreduce results summed by the job's fallback
                                  aggregator, relayed by the switch when it had
                                  no memory free for the round (a shared job:
                                  p4/swswitch/README.md, "Sharing the switch") */
    uint64_t reserved[6];      /* zero; later counters take these places */
} serene_stats;

/* serene_get_stats - a snapshot of the context's counters.
 * They are monotonic since creation; each is read atomically, not all at
 * one instant.
 * Returns:
 *   0                      *out filled
 *   SERENE_ERR_INVAL       ctx NULL or destroyed, or out NULL
 * Blocks: no.
 * Threads: any. */
SERENE_API int serene_get_stats(const serene_ctx *ctx, serene_stats *out);

/* ------------------------------------------------------------------------ */
/* SSP parameter store and barrier                                           */
/* ------------------------------------------------------------------------ */

/*
 * Each job has a store of int32 accumulators in the switch, its capacity
 * fixed at job setup (serene_store_capacity). Arithmetic is modulo 2^32.
 * A worker's iteration is: pull (read the model), compute, push (add its
 * update), serene_clock (end of iteration c = 0, 1, 2, ...). The switch
 * holds a worker that finished clock c until c - low <= s(c), where low is
 * the largest clock every worker has finished and s(c) the staleness bound
 * of the policy in force at clock c (BSP: s = 0; SSP(s); ASP: unbounded up
 * to the switch's ring). Guarantee (SSP in the sense of Bosen): after
 * serene_clock returned for clock c, a pull contains every push that any
 * worker made in its clocks <= c - s(c), plus possibly any later ones.
 * Operations of a context run in the order they were started, so a clock
 * started after a push is sent only once the push was acknowledged.
 */

typedef enum serene_sync_mode {
    SERENE_SYNC_BSP = 0,
    SERENE_SYNC_SSP = 1,
    SERENE_SYNC_ASP = 2,
} serene_sync_mode;

/* Pull flag: return what was added since this worker's last read of each
 * element (a pull or a step, any form), instead of the absolute value.
 * Exact even across wraps of the accumulators, as long as the change fits
 * an int32. */
#define SERENE_PULL_DELTA 0x1u

/* Step flag: return what the other workers added since this worker's last
 * read of each element (a pull or a step, any form): the change minus this
 * step's own update, so a worker that already holds its own update in its
 * model adds just this. Exact modulo 2^32 as SERENE_PULL_DELTA. */
#define SERENE_STEP_OTHERS 0x2u

/* serene_store_capacity - the number of words of the job's store.
 * Returns: the capacity the switch announced at the join; 0 if it has no
 *   store, or ctx is NULL or destroyed.
 * Blocks: no.
 * Threads: any. */
SERENE_API size_t serene_store_capacity(const serene_ctx *ctx);

/*
 * serene_push - add count floats at offset of the store, exactly once each.
 *
 * Each value x is added as rne(x * 2^store_frac_bits), saturating (counted
 * in stats.saturations), one request per row of the store; the library
 * retransmits until the switch acknowledges, and the switch drops
 * duplicates. values: count floats, read during the call. count 0 sends
 * nothing (values may then be NULL).
 * Returns:
 *   0                      the switch added every value
 *   SERENE_ERR_INVAL       ctx NULL or destroyed, or values NULL, count > 0
 *   SERENE_ERR_CONCURRENT  another thread is inside a starting call on ctx
 *   SERENE_ERR_BUSY        max_ops ops started and not yet waited for
 *   SERENE_ERR_RANGE       [offset, offset + count) exceeds the capacity;
 *                          nothing sent
 *   SERENE_ERR_NONFINITE   NaN/Inf in values; nothing sent
 *   SERENE_ERR_TIMEOUT     deadline or retry limit passed: any of the rows
 *                          may have been added (a repeat adds them again)
 *   other refusals         e.g. SERENE_ERR_NOJOB: the job was removed
 * Blocks: until every row is acknowledged, by timeout_ms after the call.
 * Threads: a starting call (Conventions).
 */
SERENE_API int serene_push(serene_ctx *ctx, size_t offset, const float *values, size_t count);
/* serene_push_i32 - add count int32 words at offset of the store, as they are.
 * As serene_push, with no fixed point (so no NaN/Inf).
 * Returns:
 *   0                      the switch added every word
 *   SERENE_ERR_INVAL       ctx NULL or destroyed, or values NULL, count > 0
 *   SERENE_ERR_CONCURRENT  another thread is inside a starting call on ctx
 *   SERENE_ERR_BUSY        max_ops ops started and not yet waited for
 *   SERENE_ERR_RANGE       beyond the capacity; nothing sent
 *   SERENE_ERR_TIMEOUT     as for serene_push
 *   other refusals         e.g. SERENE_ERR_NOJOB
 * Blocks: until every row is acknowledged, by timeout_ms after the call.
 * Threads: a starting call (Conventions). */
SERENE_API int serene_push_i32(serene_ctx *ctx, size_t offset, const int32_t *values,
                               size_t count);

/*
 * serene_pull - read count words at offset of the store into out, as floats.
 *
 * Each word is divided by 2^store_frac_bits. flags: 0 for the words, or
 * SERENE_PULL_DELTA for their change since this worker's last read. A
 * pull is not a snapshot across rows. out: count floats, written during
 * the call. count 0 sends nothing (out may then be NULL).
 * Returns:
 *   0                      out holds the words
 *   SERENE_ERR_INVAL       ctx NULL or destroyed, out NULL with count > 0,
 *                          or flags other than 0 and SERENE_PULL_DELTA
 *   SERENE_ERR_CONCURRENT  another thread is inside a starting call on ctx
 *   SERENE_ERR_BUSY        max_ops ops started and not yet waited for
 *   SERENE_ERR_RANGE       beyond the capacity; nothing sent
 *   SERENE_ERR_TIMEOUT     deadline or retry limit passed; out, and the view
 *                          of the last read, may be partly updated
 *   other refusals         e.g. SERENE_ERR_NOJOB: the job was removed
 * Blocks: until every row has come back, by timeout_ms after the call.
 * Threads: a starting call (Conventions).
 */
SERENE_API int serene_pull(serene_ctx *ctx, size_t offset, float *out, size_t count,
                           unsigned flags);
/* serene_pull_i32 - read count int32 words at offset of the store, as they are.
 * As serene_pull, with no fixed point.
 * Returns:
 *   0                      out holds the words
 *   SERENE_ERR_INVAL       as for serene_pull
 *   SERENE_ERR_CONCURRENT  another thread is inside a starting call on ctx
 *   SERENE_ERR_BUSY        max_ops ops started and not yet waited for
 *   SERENE_ERR_RANGE       beyond the capacity; nothing sent
 *   SERENE_ERR_TIMEOUT     as for serene_pull
 *   other refusals         e.g. SERENE_ERR_NOJOB
 * Blocks: until every row has come back, by timeout_ms after the call.
 * Threads: a starting call (Conventions). */
SERENE_API int serene_pull_i32(serene_ctx *ctx, size_t offset, int32_t *out, size_t count,
                               unsigned flags);

/*
 * serene_clock - end this worker's current clock c; wait for the barrier.
 *
 * CLOCK(c) goes once the ops started before it are done (a push's rows
 * acknowledged); the call returns when the barrier lets the worker go on,
 * c - low <= s(c): then serene_get_clock_info().clock has advanced by one.
 * Returns:
 *   0                      clock c finished: the guarantee above holds
 *   SERENE_ERR_INVAL       ctx NULL or destroyed, or in the stream mode
 *   SERENE_ERR_CONCURRENT  another thread is inside a starting call on ctx
 *   SERENE_ERR_BUSY        max_ops ops started and not yet waited for
 *   SERENE_ERR_TIMEOUT     deadline or retry limit passed: the clock stays
 *                          unfinished and the call may be repeated
 *   other refusals         e.g. SERENE_ERR_NOJOB: the job was removed
 * Blocks: while the barrier holds the worker, by timeout_ms after the call.
 * Threads: a starting call (Conventions).
 */
SERENE_API int serene_clock(serene_ctx *ctx);

/*
 * serene_push_start - start serene_push; return at once.
 *
 * *op_out is the op (NULL after an error). values must stay valid and
 * unchanged until serene_op_wait returns.
 * Returns:
 *   0                      started
 *   SERENE_ERR_INVAL       op_out NULL, or serene_push's reasons
 *   SERENE_ERR_CONCURRENT  another thread is inside a starting call on ctx
 *   SERENE_ERR_BUSY        max_ops ops started and not yet waited for
 *   SERENE_ERR_RANGE       beyond the capacity; nothing sent
 *   serene_op_wait then returns 0, SERENE_ERR_NONFINITE (nothing sent),
 *   SERENE_ERR_TIMEOUT or another refusal, as serene_push.
 * Blocks: no.
 * Threads: a starting call (Conventions).
 */
SERENE_API int serene_push_start(serene_ctx *ctx, size_t offset, const float *values,
                                 size_t count, serene_op **op_out);
/*
 * serene_pull_start - start serene_pull; return at once.
 *
 * *op_out is the op (NULL after an error). out must stay valid until
 * serene_op_wait returns; it is written as the rows come back.
 * Returns:
 *   0                      started
 *   SERENE_ERR_INVAL       op_out NULL, or serene_pull's reasons
 *   SERENE_ERR_CONCURRENT  another thread is inside a starting call on ctx
 *   SERENE_ERR_BUSY        max_ops ops started and not yet waited for
 *   SERENE_ERR_RANGE       beyond the capacity; nothing sent
 *   serene_op_wait then returns 0, SERENE_ERR_TIMEOUT or another refusal.
 * Blocks: no.
 * Threads: a starting call (Conventions).
 */
SERENE_API int serene_pull_start(serene_ctx *ctx, size_t offset, float *out, size_t count,
                                 unsigned flags, serene_op **op_out);
/*
 * serene_clock_start - start serene_clock; return at once.
 *
 * *op_out is the op (NULL after an error).
 * Returns:
 *   0                      started
 *   SERENE_ERR_INVAL       op_out NULL, ctx NULL or destroyed, or in the
 *                          stream mode
 *   SERENE_ERR_CONCURRENT  another thread is inside a starting call on ctx
 *   SERENE_ERR_BUSY        max_ops ops started and not yet waited for
 *   serene_op_wait then returns 0, SERENE_ERR_TIMEOUT or another refusal.
 * Blocks: no.
 * Threads: a starting call (Conventions).
 */
SERENE_API int serene_clock_start(serene_ctx *ctx, serene_op **op_out);

/*
 * serene_step - one SSP iteration as one pipelined op: push, clock and pull.
 *
 * Adds update[0 .. count) at offset of the store (as serene_push), ends
 * this worker's current clock c (as serene_clock) and reads the same words
 * into out (as serene_pull with flags: 0, SERENE_PULL_DELTA or
 * SERENE_STEP_OTHERS). It streams like an allreduce: each row of the store
 * comes back as soon as the switch holds every worker's steps of that row
 * at clocks <= c - s(c) (lib/README.md, "The SSP step").
 * Guarantee: when it returns, out holds every worker's updates of clocks
 * <= c - s(c) to these words (plus possibly newer ones), as a pull after
 * serene_clock would. Under BSP (s = 0) that is every update of clocks
 * <= c, plus, where this worker's answer was lost and the others already
 * went on, some of clock c + 1.
 * Rules: every worker of the job steps a word at every clock once it
 * began stepping it, all from the same clock on (a data-parallel loop does
 * this). Steps and plain pushes may share words (the sums add up), but a
 * step's guarantee covers steps only.
 * update and out: count values each, valid during the call; out may be
 * update itself (in place) but may not overlap it otherwise. The float
 * forms use the store's fixed point (store_frac_bits) as push and pull do.
 * Returns:
 *   0                      clock c finished; out holds the guarantee's sums
 *   SERENE_ERR_INVAL       ctx NULL or destroyed, count 0, a NULL buffer,
 *                          buffers partly overlapping, unknown flags or
 *                          DELTA with OTHERS, or a context in the stream mode
 *   SERENE_ERR_CONCURRENT  another thread is inside a starting call on ctx
 *   SERENE_ERR_BUSY        max_ops ops started and not yet waited for
 *   SERENE_ERR_RANGE       beyond the capacity; nothing sent
 *   SERENE_ERR_NONFINITE   NaN/Inf in update: as an allreduce does, the step
 *                          completes so that every worker stays in step, but
 *                          each row piece that held one added zeros instead;
 *                          out and the clock are as for a success
 *   SERENE_ERR_MISMATCH    the rules above broken: a clock skipped, or a word
 *                          first stepped at another clock than the others'
 *   SERENE_ERR_TIMEOUT     deadline or retry limit passed: the clock stays
 *                          unfinished; the same step may be repeated, and
 *                          what the switch already added is not added again
 *   other refusals         e.g. SERENE_ERR_PROTO: the step ran more than the
 *                          barrier's ring ahead of the slowest worker
 * Blocks: until every row has come back, by timeout_ms after the call.
 * Threads: a starting call (Conventions).
 */
SERENE_API int serene_step(serene_ctx *ctx, size_t offset, const float *update, float *out,
                           size_t count, unsigned flags);
/* serene_step_i32 - serene_step of int32 words, added and read as they are.
 * Returns:
 *   0                      clock c finished; out holds the guarantee's sums
 *   SERENE_ERR_INVAL       as for serene_step
 *   SERENE_ERR_CONCURRENT  another thread is inside a starting call on ctx
 *   SERENE_ERR_BUSY        max_ops ops started and not yet waited for
 *   SERENE_ERR_RANGE       beyond the capacity; nothing sent
 *   SERENE_ERR_MISMATCH    as for serene_step
 *   SERENE_ERR_TIMEOUT     as for serene_step: the step may be repeated
 *   other refusals         as for serene_step
 * Blocks: until every row has come back, by timeout_ms after the call.
 * Threads: a starting call (Conventions). */
SERENE_API int serene_step_i32(serene_ctx *ctx, size_t offset, const int32_t *update,
                               int32_t *out, size_t count, unsigned flags);
/*
 * serene_step_start - start serene_step; return at once.
 *
 * *op_out is the op (NULL after an error). update and out must stay valid,
 * and update unchanged, until serene_op_wait returns.
 * Returns:
 *   0                      started
 *   SERENE_ERR_INVAL       op_out NULL, or serene_step's reasons
 *   SERENE_ERR_CONCURRENT  another thread is inside a starting call on ctx
 *   SERENE_ERR_BUSY        max_ops ops started and not yet waited for
 *   SERENE_ERR_RANGE       beyond the capacity; nothing sent
 *   serene_op_wait then returns 0, SERENE_ERR_NONFINITE, SERENE_ERR_MISMATCH,
 *   SERENE_ERR_TIMEOUT or another refusal, as serene_step.
 * Blocks: no.
 * Threads: a starting call (Conventions).
 */
SERENE_API int serene_step_start(serene_ctx *ctx, size_t offset, const float *update,
                                 float *out, size_t count, unsigned flags, serene_op **op_out);

typedef struct serene_clock_info {
    uint32_t clock;        /* the clock this worker is in (finished clocks + first) */
    uint32_t low;          /* largest clock all workers finished, last seen */
    uint32_t high;         /* largest clock any worker finished, last seen */
    serene_sync_mode mode; /* policy of the last clock this worker finished */
    uint32_t staleness;    /* its s */
    uint32_t reserved_[11];
} serene_clock_info;

/* serene_get_clock_info - the worker's view of the barrier.
 * As of the last answer from the switch; read between operations for a
 * consistent view (the fields are read one at a time).
 * Returns:
 *   0                      *out filled
 *   SERENE_ERR_INVAL       ctx NULL or destroyed, or out NULL
 * Blocks: no.
 * Threads: any. */
SERENE_API int serene_get_clock_info(const serene_ctx *ctx, serene_clock_info *out);

/* ------------------------------------------------------------------------ */
/* SSP for a model of any size: the stream mode                              */
/* ------------------------------------------------------------------------ */

/*
 * The store above keeps the model in the switch, which holds megabytes; a
 * Tofino holds 16,384 words per job. The stream mode keeps the model on
 * the workers and sends each clock's gradients through the streaming
 * allreduce, so the switch holds the allreduce's window (slots x words
 * per packet), never the model, and the model's optimizer (momentum,
 * Adam, schedules) stays the user's. The staleness bound is the switch's
 * clock-indexed policy, as for the store (BSP: s = 0; SSP(s); ASP: the
 * ring's bound R - 2), so a change made while the job runs (serene-ctl
 * policy ... from CLOCK, or the dynamic controller) takes effect at the
 * same clock on every worker.
 *
 * A worker's loop, clock c = 0, 1, 2, ...:
 *   compute its gradient g_c on its replica;
 *   serene_stale_start(ctx, g_c, sum_c, n, ...)    clock c's allreduce;
 *   serene_stale_bound(ctx, c ? c - 1 : 0, &mode, &s)
 *                          the policy of the clock before (below);
 *   wait (serene_op_wait) for the ops of every clock <= c - s not yet
 *   waited for, in clock order, and apply their sums in that order
 *   (e.g. the optimizer's step on sum_k); it may apply later clocks'
 *   sums too, in order, if their ops have completed (serene_op_test);
 *   then compute clock c + 1.
 * The bound that gates clock c + 1 is the policy of clock c - 1, not c:
 * the switch answers c's announcement a round trip after
 * serene_stale_start(c), while c - 1's answer came during clock c's
 * compute, so the loop never waits for it. A change of policy from clock
 * E thus gates the computation of clock E + 2 on; the same on every
 * worker, as the rule depends on the clock alone.
 * Guarantees, for workers that follow it:
 * - When a worker computes clock c + 1 it has applied the sums of every
 *   clock <= c - s(c - 1), each the same on every worker (the allreduce's
 *   bound): SSP(s) in the sense of Bosen while the policy holds; s = 0 is
 *   synchronous data-parallel training (DDP).
 * - Every worker applies the same sums in the same order, so replicas
 *   that started equal and have applied the same number of clocks are
 *   equal; after the last clock's op is waited for and applied on every
 *   worker, every replica is identical (bit for bit, with a deterministic
 *   optimizer).
 * - The switch holds slots x words per packet of the job's memory for
 *   it, whatever the model's size; a worker keeps s + 1 gradients'
 *   buffers in flight.
 * The allreduces of consecutive clocks go in clock order, each as
 * serene_allreduce_typed_start (dtype, op and wire width per flags;
 * max_ops bounds how many are started and not yet waited for). A context
 * in the stream mode refuses serene_clock and serene_step, and the other
 * way round (SERENE_ERR_INVAL).
 */

/*
 * serene_stale_start - end clock c in the stream mode: start its allreduce.
 *
 * c is the number of earlier calls (the first call ends clock 0). Starts
 * the allreduce of sendbuf for c, as serene_allreduce_typed_start
 * (sendbuf and recvbuf valid and sendbuf unchanged until serene_op_wait
 * returns for *op_out), and announces c to the switch's barrier, without
 * waiting behind the allreduces of earlier clocks. The first call puts the
 * context in the stream mode.
 * Returns:
 *   0                      started; *op_out is the clock's allreduce
 *   SERENE_ERR_INVAL       op_out NULL, serene_allreduce_typed's reasons, or
 *                          a context that used serene_clock or serene_step
 *   SERENE_ERR_CONCURRENT  another thread is inside a starting call on ctx
 *   SERENE_ERR_BUSY        max_ops ops started and not yet waited for
 *   SERENE_ERR_UNSUPPORTED the switch has no allreduce slots
 *   SERENE_ERR_BROKEN      an earlier allreduce of ctx failed
 *   the switch's refusal of an earlier announcement (serene_stale_bound),
 *   kept for every later call
 *   serene_op_wait then returns serene_allreduce_typed's other codes.
 * Blocks: no.
 * Threads: a starting call (Conventions).
 */
SERENE_API int serene_stale_start(serene_ctx *ctx, const void *sendbuf, void *recvbuf,
                                  size_t count, serene_dtype dtype, serene_reduce_op op,
                                  unsigned flags, serene_op **op_out);

/*
 * serene_stale_bound - the policy in force at clock c, as the switch said.
 *
 * c (the argument clock) must have been started by this worker's
 * serene_stale_start. *staleness gets the policy's bound s, and *mode its
 * mode when mode is not NULL. An announcement goes once c is started and
 * c - 1 was answered; the answer comes within a round trip unless packets
 * are lost.
 * Returns:
 *   0                      *staleness (and *mode) set
 *   SERENE_ERR_INVAL       ctx NULL or destroyed, staleness NULL, c not
 *                          started, or a context not in the stream mode
 *   SERENE_ERR_TIMEOUT     no answer to c's announcement within timeout_ms
 *   SERENE_ERR_RANGE       c is older than the last 64 answered clocks, whose
 *                          policies are kept
 *   SERENE_ERR_SHUTDOWN    the context is being destroyed
 *   the switch's refusal of an announcement (e.g. SERENE_ERR_NOJOB,
 *   SERENE_ERR_NOTMEMBER), for c and every later clock not yet answered
 * Blocks: until the switch has answered c's announcement, at most
 *   timeout_ms from the call; not at all once it has.
 * Threads: any, during starting calls too; serene_ctx_destroy is refused
 *   while it waits.
 */
SERENE_API int serene_stale_bound(serene_ctx *ctx, uint32_t clock, serene_sync_mode *mode,
                                  uint32_t *staleness);

#ifdef __cplusplus
}
#endif

#endif /* SERENE_SERENE_H */
