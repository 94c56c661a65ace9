/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace.c - the per-context pcap writer behind SERENE_PCAP (see trace.h for
 * the contract: whole records only, nothing allocated per packet, no global
 * state).
 *
 * The file is written through libpcap's dumper on a stdio stream whose
 * buffer we supply and size, so we know what a flush writes: the bytes
 * pending in it are counted here, and a record that would not fit whole is
 * preceded by a flush. pcap's record header is 16 bytes on disk (struct
 * pcap_sf_pkthdr, 32-bit seconds and fractions), whatever struct timeval is.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace/trace.h"

#ifdef SERENE_HAVE_PCAP
#include <pcap/pcap.h>
#endif

int sr_trace_path(char *out, size_t cap, const char *pattern, int rank)
{
    size_t n = 0;
    for (const char *p = pattern; *p; p++) {
        char num[16];
        const char *put = p;
        size_t len = 1;
        if (*p == '%') {
            p++;
            if (*p == 'r') {
                len = (size_t)snprintf(num, sizeof num, "%d", rank);
                put = num;
            } else if (*p != '%') {
                return -1;
            }
        }
        if (cap - n <= len)
            return -2;
        memcpy(out + n, put, len);
        n += len;
    }
    if (cap == 0)
        return -2;
    out[n] = '\0';
    return 0;
}

#ifdef SERENE_HAVE_PCAP

#define TRACE_REC_HDR 16u       /* struct pcap_sf_pkthdr on disk */
#define TRACE_IOBUF (64u << 10) /* holds several largest records */
_Static_assert(TRACE_IOBUF >= TRACE_REC_HDR + SR_TRACE_SNAPLEN, "a record fits the buffer whole");

struct sr_trace {
    pcap_t *pd;            /* dead handle: link type, snaplen, ns precision */
    pcap_dumper_t *dumper; /* owns the FILE */
    const sr_log *log;
    size_t pending; /* bytes in iobuf not yet written */
    int failed;     /* a write failed: tracing has stopped */
    sr_frame_addr addr[2]; /* indexed by enum sr_trace_dir */
    char path[SR_TRACE_PATH_MAX];
    uint8_t frame[SR_TRACE_SNAPLEN];
    char iobuf[TRACE_IOBUF];
};

static const uint8_t mac_worker[6] = {0x02, 0, 0, 0, 0, 0x01};
static const uint8_t mac_switch[6] = {0x02, 0, 0, 0, 0, 0x02};

static void fail(sr_trace *t, const char *what)
{
    if (t->failed)
        return;
    t->failed = 1;
    SR_WARN(t->log, "packet trace %s: %s failed: %s; tracing stops here", t->path, what,
            strerror(errno ? errno : EIO));
}

static void set_endpoint(uint32_t *ip, uint16_t *port, const struct sockaddr_in *sa)
{
    *ip = sa ? ntohl(sa->sin_addr.s_addr) : 0;
    *port = sa ? ntohs(sa->sin_port) : 0;
}

int sr_trace_open(sr_trace **out, const char *pattern, int rank, const struct sockaddr_in *local,
                  const struct sockaddr_in *peer, const sr_log *log)
{
    *out = NULL;
    sr_trace *t = calloc(1, sizeof *t);
    if (!t)
        return SERENE_ERR_NOMEM;
    t->log = log;
    if (sr_trace_path(t->path, sizeof t->path, pattern, rank)) {
        SR_ERR(log, "pcap_path \"%s\": '%%' must be followed by 'r' (the rank) or '%%'", pattern);
        free(t);
        return SERENE_ERR_CONFIG;
    }
    sr_frame_addr *tx = &t->addr[SR_TRACE_TX], *rx = &t->addr[SR_TRACE_RX];
    memcpy(tx->src_mac, mac_worker, 6);
    memcpy(tx->dst_mac, mac_switch, 6);
    set_endpoint(&tx->src_ip, &tx->src_port, local);
    set_endpoint(&tx->dst_ip, &tx->dst_port, peer);
    memcpy(rx->src_mac, mac_switch, 6);
    memcpy(rx->dst_mac, mac_worker, 6);
    rx->src_ip = tx->dst_ip;
    rx->src_port = tx->dst_port;
    rx->dst_ip = tx->src_ip;
    rx->dst_port = tx->src_port;

    /* fopen rather than pcap_dump_open: errno says why it failed. */
    FILE *fp = fopen(t->path, "wbe");
    if (!fp) {
        int e = errno;
        SR_ERR(log, "pcap_path \"%s\": cannot create the trace file: %s", t->path, strerror(e));
        free(t);
        return SERENE_ERR_CONFIG;
    }
    if (setvbuf(fp, t->iobuf, _IOFBF, sizeof t->iobuf)) {
        fclose(fp);
        free(t);
        return SERENE_ERR_NOMEM;
    }
    t->pd = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, (int)SR_TRACE_SNAPLEN,
                                                 PCAP_TSTAMP_PRECISION_NANO);
    if (!t->pd) {
        fclose(fp);
        free(t);
        return SERENE_ERR_NOMEM;
    }
    t->dumper = pcap_dump_fopen(t->pd, fp);
    if (!t->dumper) {
        SR_ERR(log, "pcap_path \"%s\": cannot start the trace: %s", t->path, pcap_geterr(t->pd));
        fclose(fp);
        pcap_close(t->pd);
        free(t);
        return SERENE_ERR_CONFIG;
    }
    /* The file header goes out now: even an empty trace is a valid file. */
    if (pcap_dump_flush(t->dumper)) {
        int e = errno;
        SR_ERR(log, "pcap_path \"%s\": cannot write the trace file: %s", t->path,
               strerror(e ? e : EIO));
        sr_trace_close(t);
        return SERENE_ERR_CONFIG;
    }
    SR_INFO(log, "tracing packets to %s", t->path);
    *out = t;
    return 0;
}

void sr_trace_packet(sr_trace *t, enum sr_trace_dir dir, const void *msg, size_t len)
{
    if (t->failed || len > SR_WIRE_MAX_MSG)
        return;
    memcpy(t->frame + SR_FRAME_HLEN, msg, len);
    size_t n = sr_frame_pack(t->frame, sizeof t->frame, &t->addr[dir], len);
    if (n == 0)
        return;
    if (t->pending + TRACE_REC_HDR + n > sizeof t->iobuf) {
        if (pcap_dump_flush(t->dumper)) {
            fail(t, "write");
            return;
        }
        t->pending = 0;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    /* At nanosecond precision the dumper takes nanoseconds in tv_usec. */
    struct pcap_pkthdr h = {
        .ts = {.tv_sec = ts.tv_sec, .tv_usec = (suseconds_t)ts.tv_nsec},
        .caplen = (bpf_u_int32)n,
        .len = (bpf_u_int32)n,
    };
    pcap_dump((u_char *)t->dumper, &h, t->frame);
    t->pending += TRACE_REC_HDR + n;
}

void sr_trace_flush(sr_trace *t)
{
    if (t->failed || t->pending == 0)
        return;
    if (pcap_dump_flush(t->dumper))
        fail(t, "write");
    t->pending = 0;
}

void sr_trace_close(sr_trace *t)
{
    if (!t)
        return;
    sr_trace_flush(t);
    /* pcap_dump_close closes the FILE; iobuf must outlive it. */
    pcap_dump_close(t->dumper);
    pcap_close(t->pd);
    free(t);
}

#else /* !SERENE_HAVE_PCAP */

struct sr_trace {
    int unused;
};

int sr_trace_open(sr_trace **out, const char *pattern, int rank, const struct sockaddr_in *local,
                  const struct sockaddr_in *peer, const sr_log *log)
{
    (void)rank;
    (void)local;
    (void)peer;
    *out = NULL;
    SR_ERR(log,
           "pcap_path \"%s\" (SERENE_PCAP): this libserene was built without libpcap; "
           "rebuild with libpcap-dev installed (meson option pcap)",
           pattern);
    return SERENE_ERR_UNSUPPORTED;
}

void sr_trace_packet(sr_trace *t, enum sr_trace_dir dir, const void *msg, size_t len)
{
    (void)t;
    (void)dir;
    (void)msg;
    (void)len;
}

void sr_trace_flush(sr_trace *t)
{
    (void)t;
}

void sr_trace_close(sr_trace *t)
{
    (void)t;
}

#endif /* SERENE_HAVE_PCAP */
