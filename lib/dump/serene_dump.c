/* SPDX-License-Identifier: Apache-2.0 */
/*
 * serene_dump.c - serene-dump: decode the Serene packets of a pcap file,
 * such as the one a context writes with SERENE_PCAP, or any Ethernet
 * capture (tcpdump -w) of Serene traffic.
 *
 * One line per frame, fields as the wire header has them (lib/proto/wire.h):
 *
 *   TIME SRC -> DST OP job=J worker=W seq=S slot=N shadow=B count=C
 *       exp=E next_exp=X offset=O aux=A flags=0xFF [status=NAME refused=OP]
 *       [v16 total=T]
 *
 * TIME is the capture time in seconds.nanoseconds since the epoch, SRC and
 * DST are IPv4:port. ERROR packets add the status and the refused op (from
 * aux); allreduce packets of 16-bit values (SR_WIRE_AUX_V16 in aux, count
 * in words of two values) say so and give the call's total count. A frame
 * that is not Serene, or is malformed, gets a line with the reason instead: the frame parser's (not_ipv4, not_udp, bad_csum,
 * frame_truncated, frame_bad_length) or the message parser's
 * (sr_parse_result_name: foreign, truncated, bad_version, bad_op,
 * bad_count, bad_length).
 *
 * Every frame is checked whole: IPv4 and UDP checksums and lengths, then
 * the Serene header and payload length, exactly as a receiver would.
 *
 * Exit status: 0 the file was read to its end; 1 it cannot be read (not a
 * pcap file, not Ethernet, a damaged record); 2 bad usage.
 */
#include <inttypes.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <string.h>

#include "proto/wire.h"

#define PROG "serene-dump"

/* Results: index 0 = ok, 1..6 = -sr_parse_result, then the frame's. */
enum {
    RES_FRAME_BASE = SR_PARSE_NREASONS, /* + (-sr_frame_result) - 1 */
    RES_N = SR_PARSE_NREASONS + 5,
};

static const char *frame_result_name(int r)
{
    switch (r) {
    case SR_FRAME_TRUNCATED: return "frame_truncated";
    case SR_FRAME_NOT_IPV4: return "not_ipv4";
    case SR_FRAME_NOT_UDP: return "not_udp";
    case SR_FRAME_BAD_CSUM: return "bad_csum";
    case SR_FRAME_BAD_LENGTH: return "frame_bad_length";
    default: return "frame?";
    }
}

static const char *result_name(int idx)
{
    return idx < RES_FRAME_BASE ? sr_parse_result_name(-idx)
                                : frame_result_name(-(idx - RES_FRAME_BASE + 1));
}

/* Not Serene at all (another protocol), as opposed to a damaged Serene
 * packet. */
static int is_foreign(int idx)
{
    return idx == -SR_PARSE_FOREIGN || idx == RES_FRAME_BASE - SR_FRAME_NOT_IPV4 - 1 ||
           idx == RES_FRAME_BASE - SR_FRAME_NOT_UDP - 1;
}

typedef struct counts {
    uint64_t frames;
    uint64_t result[RES_N];
    uint64_t op[256];
} counts;

static void print_ep(uint32_t ip, uint16_t port)
{
    printf("%u.%u.%u.%u:%u", ip >> 24, ip >> 16 & 255, ip >> 8 & 255, ip & 255, port);
}

/* Decode one frame, print its line and count it. */
static void dump_frame(const struct pcap_pkthdr *ph, const uint8_t *frame, counts *c)
{
    sr_frame_addr a;
    const uint8_t *msg = NULL;
    size_t msg_len = 0;
    c->frames++;
    printf("%lld.%09ld ", (long long)ph->ts.tv_sec, (long)ph->ts.tv_usec);
    int fr = sr_frame_parse(frame, ph->caplen, &a, &msg, &msg_len);
    if (fr != SR_FRAME_OK) {
        int idx = RES_FRAME_BASE - fr - 1;
        c->result[idx]++;
        printf("- %s: %s (%u of %u bytes captured)\n", is_foreign(idx) ? "not serene" : "malformed",
               result_name(idx), ph->caplen, ph->len);
        return;
    }
    print_ep(a.src_ip, a.src_port);
    printf(" -> ");
    print_ep(a.dst_ip, a.dst_port);
    sr_hdr h;
    int pr = sr_msg_parse(msg, msg_len, &h, NULL);
    c->result[-pr]++;
    if (pr != SR_PARSE_OK) {
        printf(" %s: %s (%zu bytes of UDP payload)\n", is_foreign(-pr) ? "not serene" : "malformed",
               sr_parse_result_name(pr), msg_len);
        return;
    }
    c->op[h.op]++;
    printf(" %s job=%u worker=%u seq=%" PRIu32 " slot=%u shadow=%u count=%u exp=%d next_exp=%d"
           " offset=%" PRIu32 " aux=%" PRIu32 " flags=0x%02x",
           sr_op_name(h.op), h.job, h.worker, h.seq, h.slot, h.shadow, h.count, h.exp,
           h.next_exp, h.offset, h.aux, h.flags);
    if (h.op == SR_OP_ERROR)
        printf(" status=%s refused=%s", sr_status_name(h.status), sr_op_name(h.aux));
    else if (h.op >= SR_OP_AR_DATA && h.op <= SR_OP_AR_NAK && (h.aux & SR_WIRE_AUX_V16))
        printf(" v16 total=%" PRIu32, h.aux & SR_WIRE_AUX_TOTAL);
    printf("\n");
}

static void print_summary(const counts *c)
{
    uint64_t foreign = 0, bad = 0;
    for (int i = 1; i < RES_N; i++) {
        if (is_foreign(i))
            foreign += c->result[i];
        else
            bad += c->result[i];
    }
    printf("summary: %" PRIu64 " frames: %" PRIu64 " serene, %" PRIu64 " not serene, %" PRIu64
           " malformed\n",
           c->frames, c->result[0], foreign, bad);
    for (unsigned op = 0; op < 256; op++)
        if (c->op[op])
            printf("  op %-16s %" PRIu64 "\n", sr_op_name(op), c->op[op]);
    for (int i = 0; i < RES_N; i++)
        printf("  result %-16s %" PRIu64 "\n", result_name(i), c->result[i]);
}

static int usage(FILE *f, int rc)
{
    fprintf(f,
            "usage: " PROG " [--summary] FILE.pcap\n"
            "\n"
            "Print one line per frame of FILE.pcap (Ethernet; written by SERENE_PCAP or any\n"
            "capture tool): time, addresses and the Serene header's fields, or why the\n"
            "frame is not a valid Serene packet.\n"
            "\n"
            "  --summary   then print the number of packets per op and per parse result\n"
            "  -h, --help  print this help and exit\n"
            "\n"
            "Exit status: 0 read to the end; 1 unreadable file; 2 bad usage.\n");
    return rc;
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    int summary = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--summary"))
            summary = 1;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return usage(stdout, 0);
        else if (argv[i][0] == '-' && argv[i][1])
            return fprintf(stderr, PROG ": unknown option '%s'\n", argv[i]), usage(stderr, 2);
        else if (path)
            return fprintf(stderr, PROG ": one file at a time\n"), usage(stderr, 2);
        else
            path = argv[i];
    }
    if (!path)
        return usage(stderr, 2);

    char err[PCAP_ERRBUF_SIZE];
    pcap_t *p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, err);
    if (!p) {
        fprintf(stderr, PROG ": %s: cannot read as a pcap file: %s\n", path, err);
        return 1;
    }
    if (pcap_datalink(p) != DLT_EN10MB) {
        fprintf(stderr, PROG ": %s: link type %s, not Ethernet: not a Serene trace\n", path,
                pcap_datalink_val_to_name(pcap_datalink(p))
                    ? pcap_datalink_val_to_name(pcap_datalink(p))
                    : "unknown");
        pcap_close(p);
        return 1;
    }
    static counts c; /* 2 KiB of counters: off the stack */
    struct pcap_pkthdr *ph;
    const u_char *frame;
    int rc;
    while ((rc = pcap_next_ex(p, &ph, &frame)) == 1)
        dump_frame(ph, frame, &c);
    int status = 0;
    if (rc != PCAP_ERROR_BREAK) {
        fflush(stdout);
        fprintf(stderr, PROG ": %s: after %" PRIu64 " frames: %s\n", path, c.frames,
                pcap_geterr(p));
        status = 1;
    }
    pcap_close(p);
    if (summary)
        print_summary(&c);
    return status;
}
