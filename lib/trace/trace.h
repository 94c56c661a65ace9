/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace.h - the packet trace of one context (SERENE_PCAP, serene_config's
 * pcap_path): every message the engine hands to the transport, and every
 * one it gets from it, appended to a pcap file.
 *
 * The udp transport moves bare Serene messages, so each is wrapped in an
 * Ethernet/IPv4/UDP frame (sr_frame_pack) with the socket's real addresses
 * and ports: sent packets go local -> peer, received ones peer -> local.
 * MACs are fixed locally administered addresses (worker 02:00:00:00:00:01,
 * switch 02:00:00:00:00:02): the kernel never tells us the real ones.
 *
 * Invariants:
 * - One writer per context, no global state: two contexts with different
 *   files in one process trace independently.
 * - open and close run in the thread that creates / destroys the context;
 *   packet and flush in the engine thread only (the thread's start and
 *   join order them).
 * - Nothing is allocated per packet: the frame and the stdio buffer are
 *   allocated at open.
 * - The file only ever holds whole records: a record is written only when
 *   it fits the stdio buffer whole, else the buffer is flushed first; the
 *   engine flushes once per loop iteration that traced something. So a
 *   process killed at any point leaves a readable file.
 * - A write error is logged once and ends the trace; the context goes on.
 *
 * Without libpcap (meson -Dpcap=disabled or not found) sr_trace_open logs
 * why and returns SERENE_ERR_UNSUPPORTED.
 */
#ifndef SERENE_TRACE_TRACE_H
#define SERENE_TRACE_TRACE_H

#include <netinet/in.h>
#include <stddef.h>

#include "common/log.h"
#include "proto/wire.h"
#include "serene/serene.h"

/* Expanded paths are never longer than the pattern: "%r" becomes at most
 * two digits (rank < 64), "%%" one character. */
#define SR_TRACE_PATH_MAX SERENE_PATH_MAX
/* The largest frame: every record is captured whole. */
#define SR_TRACE_SNAPLEN (SR_FRAME_HLEN + SR_WIRE_MAX_MSG)

enum sr_trace_dir {
    SR_TRACE_TX = 0, /* sent: local -> peer */
    SR_TRACE_RX = 1, /* received: peer -> local */
};

typedef struct sr_trace sr_trace;

/* Expand pattern into out (cap bytes): "%r" -> rank in decimal, "%%" -> "%".
 * Returns 0, -1 for any other '%' sequence (or a trailing '%'), -2 if the
 * result does not fit. */
int sr_trace_path(char *out, size_t cap, const char *pattern, int rank);

/* Create (truncate) the pcap file named by pattern expanded for rank and
 * write its header. local and peer are the transport's addresses (NULL:
 * 0.0.0.0:0). log must outlive the trace. On success *t owns the file.
 * Returns 0; SERENE_ERR_CONFIG after logging the path and the system's
 * reason (cannot create the file, bad pattern); SERENE_ERR_NOMEM;
 * SERENE_ERR_UNSUPPORTED in a build without libpcap. */
int sr_trace_open(sr_trace **t, const char *pattern, int rank, const struct sockaddr_in *local,
                  const struct sockaddr_in *peer, const sr_log *log);

/* Append one message of len bytes (header + payload), timestamped now.
 * msg stays the caller's. Engine thread only; never blocks but on the
 * file's write. */
void sr_trace_packet(sr_trace *t, enum sr_trace_dir dir, const void *msg, size_t len);

/* Write out what was traced since the last flush (nothing if nothing). */
void sr_trace_flush(sr_trace *t);

/* Flush, close the file and free t; accepts NULL. */
void sr_trace_close(sr_trace *t);

#endif /* SERENE_TRACE_TRACE_H */
