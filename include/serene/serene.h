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
 * Conventions:
 * - Every function returns 0 (SERENE_OK) or a negative error code; see
 *   serene_strerror(). Negative values above SERENE_ERR_BASE_ are -errno.
 * - No call blocks forever: each communication call ends by the deadline
 *   derived from serene_config.timeout_ms at the latest.
 * - A context starts operations from one thread at a time: a call that
 *   starts one (every allreduce, push, pull and clock form) while another
 *   thread is inside such a call on the same context returns
 *   SERENE_ERR_CONCURRENT and does nothing (the order of a context's calls
 *   pairs them with the other workers' calls, so two threads at once would
 *   mix their data). serene_op_test and serene_op_wait may run on any
 *   thread, once per op. Several contexts may live in one process; the
 *   library has no global state except DPDK's EAL, which is per process
 *   (see dpdk_eal_args).
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
    X(PROTO, 10, "protocol error: the peer speaks another wire version, or refused a message as malformed (see the log)") \
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

/* Human-readable message for any return code; never NULL. */
SERENE_API const char *serene_strerror(int code);
/* Symbolic name ("SERENE_ERR_TIMEOUT", "ENOMEM", "SERENE_OK"); never NULL. */
SERENE_API const char *serene_err_name(int code);

/* ------------------------------------------------------------------------ */
/* Version                                                                   */
/* ------------------------------------------------------------------------ */

/* The library's version string, e.g. "0.1.0"; static storage. */
SERENE_API const char *serene_version(void);
/* (major << 16) | (minor << 8) | patch of the library actually loaded. */
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
    /* 1: the udp transport sends one datagram per send call, never a UDP
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

/* Fill cfg with the documented defaults. */
SERENE_API void serene_config_init(serene_config *cfg);

/* Overwrite fields from SERENE_* environment variables that are set.
 * Numbers, ports included, are decimal digits only: no sign, blank or 0x,
 * and a leading zero is not octal ("010" is ten). SERENE_SWITCH is
 * "host:port" (port 1..65535); SERENE_BIND is "", "host", "host:port" or
 * ":port" (port 0..65535); host is an IPv4 address or a name.
 * rank and world_size come from SERENE_RANK and SERENE_WORLD_SIZE; when
 * neither is set, from the first launcher that sets its pair: torchrun
 * (RANK, WORLD_SIZE), then Open MPI (OMPI_COMM_WORLD_RANK,
 * OMPI_COMM_WORLD_SIZE), then Slurm (SLURM_PROCID, SLURM_NTASKS). A
 * launcher that sets only one of its pair is an error (never mixed with
 * another's).
 * Returns SERENE_ERR_CONFIG, and logs which variable is wrong, when a value
 * does not parse or is out of range; cfg is then partly updated. */
SERENE_API int serene_config_from_env(serene_config *cfg);

/* Write the effective configuration, one "key = value" per line, to buf
 * (NUL-terminated, truncated to len). Returns the length it needed
 * (excluding the NUL), like snprintf. */
SERENE_API int serene_config_dump(const serene_config *cfg, char *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* Context                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct serene_ctx serene_ctx;

/* Create a context: validate cfg, open the transport, start the context's
 * data-path thread and join the job at the switch. Blocks until the switch
 * answers or cfg->timeout_ms passes. cfg is copied; it need not outlive the
 * call. On error *ctx is set to NULL.
 * Returns SERENE_ERR_CONFIG (bad field), SERENE_ERR_UNSUPPORTED (transport
 * not built), SERENE_ERR_TIMEOUT (switch silent), SERENE_ERR_NOJOB,
 * SERENE_ERR_NOTMEMBER, SERENE_ERR_STALE, SERENE_ERR_PROTO,
 * SERENE_ERR_JOB_IN_USE (a new job_nonce while workers of the job's previous
 * run are still bound: they leave when their contexts are destroyed, or the
 * operator resets the job on the switch), SERENE_ERR_DENIED (the JOIN did
 * not carry the job's admission token), SERENE_ERR_NODEV (transport rdma:
 * no RDMA device on this host, or none of the name given; the log says
 * which), SERENE_ERR_TRANSPORT (the device or its port cannot be set up),
 * or -errno.
 * The admission token is read here from the environment, SERENE_JOB_TOKEN
 * (1 to 16 hex digits; unset: none, which only a job without a token
 * admits; serene-run sets a fresh one per launch); this struct has no room
 * left for it. A malformed value fails with SERENE_ERR_CONFIG. */
SERENE_API int serene_ctx_create(serene_ctx **ctx, const serene_config *cfg);

/* Stop the data-path thread, tell the switch this worker leaves (best
 * effort), close the transport, free everything and set *ctx to NULL.
 * Operations not yet waited for are abandoned. Accepts NULL, a pointer to
 * NULL, and a copy of an already destroyed context (then only sets *ctx to
 * NULL). Refused, with an error logged and nothing changed, while another
 * thread is inside a call on the context or waits for one of its ops. */
SERENE_API void serene_ctx_destroy(serene_ctx **ctx);

/* The effective configuration (with values announced by the switch, such as
 * the window, filled in). */
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
 * Sum (or average) count float32 values over all workers of the job:
 * on return recvbuf[i] = the sum (SERENE_SUM) or mean (SERENE_AVG) over the
 * N = world_size workers w of their sendbuf x_w[i], within this bound. For
 * element i of packet k (elements [k*P, (k+1)*P), P the job's values per
 * packet, 256 by default) let E = max over w of
 * clamp(floor(log2(max_{j in k} |x_w[j]|)), -96, 126) (-96 when all are
 * 0), B = 30 - ceil(log2 N), and ulp(r) the spacing of floats at |r|:
 * 2^(e-23) for |r| in [2^e, 2^(e+1)), 2^-149 below 2^-126. Then
 *     SUM: |r_i - sum_w x_w[i]|       <= N * 2^(E-B) + ulp(r_i)/2
 *     AVG: |r_i - (sum_w x_w[i]) / N| <=     2^(E-B) + ulp(r_i)/2
 * whenever r_i is finite, in the default floating point environment (round
 * to nearest, no flush-to-zero); an average is rounded once. E never goes
 * below -96: values under 2^-96 (1.26e-29) get the absolute bound
 * N * 2^(-96-B), not a relative one, and subnormal inputs typically come
 * back as 0.
 * Non-finite results: a NaN or Inf in any worker's sendbuf makes its
 * packet NaN; a SUM element beyond the float range (|exact sum| above
 * 2^128 - 2^103, give or take N * 2^(E-B)) is +-Inf. Either way the call
 * completes on every worker with SERENE_ERR_NONFINITE, the other elements
 * obey the bound and the context stays usable. An AVG of finite inputs is
 * finite (3e38 on 3 workers averages to 3e38).
 * Every worker of the job must make the same sequence of calls with the
 * same count; a call of count 0 is a call too (it completes when every
 * worker has made it; sendbuf and recvbuf may then be NULL). Workers whose
 * counts differ all get SERENE_ERR_MISMATCH,
 * promptly (the switch compares every packet of the call with the others'
 * and answers every worker of a round that disagrees); allreduce on their
 * contexts then returns SERENE_ERR_BROKEN, while push, pull and clock go
 * on: start a new run of the job (destroy every worker's context, create
 * new ones with a new job_nonce). sendbuf may equal recvbuf (in place);
 * otherwise they must not overlap. While it waits, the calling thread reads
 * sendbuf's per-packet exponents for the context's data-path thread (one
 * pass over sendbuf, early in the call); serene_allreduce_start leaves
 * that to the data-path thread.
 * Returns SERENE_ERR_NONFINITE (NaN/Inf in some sendbuf, or a sum beyond
 * the float range: above), SERENE_ERR_TIMEOUT (deadline passed; the
 * context is then broken), SERENE_ERR_MISMATCH (above), SERENE_ERR_BROKEN,
 * SERENE_ERR_CONCURRENT, SERENE_ERR_INVAL (bad argument, or a destroyed
 * context, or count above 2^31 - 1), SERENE_ERR_UNSUPPORTED (the switch has
 * no allreduce slots: its JOIN_ACK announced a pool of 0).
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
 * serene_allreduce for count values of dtype, with the wire's width chosen
 * by flags (SERENE_WIRE16, SERENE_WIRE32 or 0, above). sendbuf and recvbuf
 * hold count elements of dtype each (float, or uint16_t for the 16-bit
 * types); the rules, errors and in-place use are serene_allreduce's.
 * A 16-bit wire carries each value in 2 bytes, two to a 32-bit word, so a
 * packet holds twice the values: with N workers it keeps B = 15 -
 * ceil(log2 N) bits (13 at N = 4, 12 at N = 8) and the sum of the N values
 * fits the 16 bits, so the switch's sums of the words hold the exact
 * 16-bit sums (every transport and switch; lib/proto/wire.h). With E
 * and ulp as for serene_allreduce, the float32 result r_i obeys
 *     SUM: |r_i - sum_w x_w[i]|       <= N * 2^(E+1-B) + ulp(r_i)/2
 *     AVG: |r_i - (sum_w x_w[i]) / N| <=     2^(E+1-B) + ulp(r_i)/2
 * (a 32-bit wire keeps serene_allreduce's bound); a float16 or bfloat16
 * result is that float32 result rounded to nearest even in its format:
 * add half its spacing there, ulp16(r_i)/2 (float16: 2^(e-10) for |r| in
 * [2^e, 2^(e+1)), 2^-24 below 2^-14; bfloat16: 2^(e-7), 2^-133 below
 * 2^-126). A SUM beyond the format's range (65504 for float16) is +-Inf,
 * reported as SERENE_ERR_NONFINITE like NaN/Inf inputs. lib/README.md
 * gives the error measured on real gradients. Every worker of the job must
 * make the call with the same count and the same wire width (workers whose
 * widths differ get SERENE_ERR_MISMATCH); their dtypes may differ.
 * Returns as serene_allreduce; SERENE_ERR_INVAL also for an unknown dtype
 * or flag, both width flags, or count above 2^31 - 1.
 */
SERENE_API int serene_allreduce_typed(serene_ctx *ctx, const void *sendbuf, void *recvbuf,
                                      size_t count, serene_dtype dtype, serene_reduce_op op,
                                      unsigned flags);

/* Non-blocking form: start the allreduce and return at once with *op set.
 * sendbuf and recvbuf must stay valid, and sendbuf unchanged, until
 * serene_op_wait returns. Operations complete in the order they were
 * started. Returns SERENE_ERR_BUSY when max_ops are in flight. */
SERENE_API int serene_allreduce_start(serene_ctx *ctx, const float *sendbuf, float *recvbuf,
                                      size_t count, serene_reduce_op op, serene_op **op_out);
/* Non-blocking form of serene_allreduce_typed, with serene_allreduce_start's
 * rules. */
SERENE_API int serene_allreduce_typed_start(serene_ctx *ctx, const void *sendbuf, void *recvbuf,
                                            size_t count, serene_dtype dtype,
                                            serene_reduce_op op, unsigned flags,
                                            serene_op **op_out);

/* 0 if op has finished (successfully or not: serene_op_wait tells),
 * SERENE_ERR_AGAIN if it is still running. Does not release op.
 * SERENE_ERR_INVAL for NULL or a stale handle (already waited for, or its
 * context destroyed). */
SERENE_API int serene_op_test(serene_op *op);

/* Wait for op to finish, release it, set *op to NULL, and return its
 * result. Returns by the op's deadline at the latest. A stale handle
 * (already waited for, by this or another thread, or its context
 * destroyed) returns SERENE_ERR_INVAL at once; the check can only be
 * fooled by a copy kept while its descriptor served 256 more ops (each of
 * the max_ops descriptors is used in turn). SERENE_ERR_SHUTDOWN if the
 * context is being destroyed. */
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
    uint64_t holds;           /* clock calls the barrier held at least once */
    uint64_t releases;        /* RELEASE messages that let a held clock call go on */
    uint64_t probes;          /* header-only probes sent for allreduce packets whose
                                 timer expired, instead of resending them */
    uint64_t held;            /* answers to probes (or resends) saying the switch
                                 holds the packet and waits for other workers */
    uint64_t window_cuts;     /* times a lost (or, on a queueing path, late)
                                 allreduce packet, step piece or push/pull
                                 request halved the window of packets in
                                 flight (it grows back by one per window of
                                 answers, up to the slots) */
} serene_stats;

/* Snapshot of the context's counters (monotonic since creation). */
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

/* Pull flag: return what was added since this worker's last pull of each
 * element (any form), instead of the absolute value. Exact even across
 * wraps of the accumulators, as long as the change fits an int32. */
#define SERENE_PULL_DELTA 0x1u

/* Step flag: return what the other workers added since this worker's last
 * read of each element (a pull or a step, any form): the change minus this
 * step's own update, so a worker that already holds its own update in its
 * model adds just this. Exact modulo 2^32 as SERENE_PULL_DELTA. */
#define SERENE_STEP_OTHERS 0x2u

/* Words of the job's store (0 if the switch has none). */
SERENE_API size_t serene_store_capacity(const serene_ctx *ctx);

/* Add count values at offset of the store, exactly once each (the library
 * retransmits until the switch acknowledges; the switch drops duplicates).
 * The float form rounds x * 2^store_frac_bits to nearest even, saturating
 * (counted in stats.saturations). Returns SERENE_ERR_RANGE when
 * [offset, offset + count) exceeds the capacity (nothing sent),
 * SERENE_ERR_NONFINITE for NaN/Inf (nothing sent), SERENE_ERR_TIMEOUT. */
SERENE_API int serene_push(serene_ctx *ctx, size_t offset, const float *values, size_t count);
SERENE_API int serene_push_i32(serene_ctx *ctx, size_t offset, const int32_t *values,
                               size_t count);

/* Read count words at offset into out (absolute, or SERENE_PULL_DELTA).
 * The float form divides by 2^store_frac_bits. Same errors as push. */
SERENE_API int serene_pull(serene_ctx *ctx, size_t offset, float *out, size_t count,
                           unsigned flags);
SERENE_API int serene_pull_i32(serene_ctx *ctx, size_t offset, int32_t *out, size_t count,
                               unsigned flags);

/* End this worker's current clock and return when the barrier lets it go
 * on (then serene_get_clock_info().clock has advanced by one), or with
 * SERENE_ERR_TIMEOUT by the deadline (the clock then stays unfinished and
 * the call may be repeated). */
SERENE_API int serene_clock(serene_ctx *ctx);

/* Non-blocking forms; finish with serene_op_wait. Buffers must stay valid
 * (values unchanged) until then. */
SERENE_API int serene_push_start(serene_ctx *ctx, size_t offset, const float *values,
                                 size_t count, serene_op **op_out);
SERENE_API int serene_pull_start(serene_ctx *ctx, size_t offset, float *out, size_t count,
                                 unsigned flags, serene_op **op_out);
SERENE_API int serene_clock_start(serene_ctx *ctx, serene_op **op_out);

/*
 * One SSP iteration as one pipelined operation: push, clock and pull.
 * Adds update[0 .. count) at offset of the store (as serene_push), ends
 * this worker's current clock c (as serene_clock) and reads the same words
 * into out (as serene_pull with flags: 0, SERENE_PULL_DELTA or
 * SERENE_STEP_OTHERS). It streams like an allreduce: each row of the
 * store (the job's elems_per_pkt words) travels as one packet and comes
 * back as soon as the switch holds every worker's steps of that row at
 * clocks <= c - s(c); a worker the barrier holds waits in the switch, not
 * in another round trip. Guarantee: when it returns, out holds every
 * worker's updates of clocks <= c - s(c) to these words (plus possibly
 * newer ones), as a pull after serene_clock would. Under BSP (s = 0) that is
 * every update of clocks <= c, plus, where this worker's answer was lost
 * and the others already went on, some of clock c + 1.
 * Rules: every worker of the job steps a word at every clock once it
 * began stepping it, all from the same clock on (a data-parallel loop does
 * this); a skipped clock is refused with SERENE_ERR_MISMATCH. Steps and
 * plain pushes may share words (the sums add up), but a step's guarantee
 * covers steps only.
 * update and out: count values each, valid until the call returns (for
 * serene_step_start: until serene_op_wait returns); out may be update
 * itself (in place) but may not overlap it otherwise. The float forms use
 * the store's fixed point (store_frac_bits) as push and pull do.
 * Returns 0; SERENE_ERR_INVAL (count 0, a NULL buffer, partly overlapping
 * buffers, unknown flags or DELTA with OTHERS); SERENE_ERR_RANGE (beyond
 * the capacity; nothing sent); SERENE_ERR_NONFINITE (NaN/Inf in update:
 * as an allreduce does, the step completes so that every worker stays in
 * step, but each row piece that held one added zeros instead; out and the
 * clock are as for a success); SERENE_ERR_MISMATCH (the rules above); SERENE_ERR_TIMEOUT
 * (the clock stays unfinished; the same step may be repeated, and what the
 * switch already added is not added again).
 */
SERENE_API int serene_step(serene_ctx *ctx, size_t offset, const float *update, float *out,
                           size_t count, unsigned flags);
SERENE_API int serene_step_i32(serene_ctx *ctx, size_t offset, const int32_t *update,
                               int32_t *out, size_t count, unsigned flags);
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

/* The worker's view of the barrier, as of the last answer from the switch.
 * Safe to call between operations. */
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

/* End this worker's clock c (the number of earlier calls: its first call
 * ends clock 0): start the allreduce of sendbuf for it, as
 * serene_allreduce_typed_start (sendbuf and recvbuf valid and sendbuf
 * unchanged until serene_op_wait returns for *op_out), and announce c to
 * the switch's barrier, without waiting behind the allreduces of earlier
 * clocks. Does not block. Returns serene_allreduce_typed_start's codes,
 * SERENE_ERR_INVAL also when the context used serene_clock or
 * serene_step, and the code of an earlier refusal of an announcement
 * (serene_stale_bound). */
SERENE_API int serene_stale_start(serene_ctx *ctx, const void *sendbuf, void *recvbuf,
                                  size_t count, serene_dtype dtype, serene_reduce_op op,
                                  unsigned flags, serene_op **op_out);

/* The policy at clock c (started by this worker's serene_stale_start):
 * its staleness bound s, and its mode when mode is not NULL. Blocks until
 * the switch has answered c's announcement (an announcement goes once c
 * is started and c - 1 was answered; the answer comes within a round trip
 * unless packets are lost), at most timeout_ms. May be called from any
 * thread. Returns 0; SERENE_ERR_INVAL (c not started, NULL staleness, or
 * a context not in the stream mode); SERENE_ERR_TIMEOUT; SERENE_ERR_RANGE
 * (c is older than the last 64 answered clocks, whose policies are kept);
 * SERENE_ERR_SHUTDOWN; or the switch's refusal of an announcement
 * (SERENE_ERR_NOJOB, SERENE_ERR_NOTMEMBER, ...), kept for every later
 * call. */
SERENE_API int serene_stale_bound(serene_ctx *ctx, uint32_t clock, serene_sync_mode *mode,
                                  uint32_t *staleness);

#ifdef __cplusplus
}
#endif

#endif /* SERENE_SERENE_H */
