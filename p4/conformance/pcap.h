/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pcap.h - the classic libpcap file format (microsecond timestamps,
 * LINKTYPE_ETHERNET), read and written without libpcap: the conformance
 * traces are tiny, and the tool must build wherever the software switch
 * builds.
 *
 * Only what the traces need: little-endian files written by this tool, and
 * both byte orders when reading (simple_switch writes in host order, with
 * link type 0 for its Ethernet frames, which the reader accepts).
 */
#ifndef SERENE_CONFORM_PCAP_H
#define SERENE_CONFORM_PCAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CF_PCAP_SNAPLEN 65535u

/* One frame of a trace: owned copy of its bytes and its timestamp. */
typedef struct cf_frame {
    uint8_t *data;
    size_t len;
    uint64_t ts_us; /* microseconds since the epoch */
} cf_frame;

/* A growable list of frames. Zero-initialise it; free with cf_frames_free. */
typedef struct cf_frames {
    cf_frame *v;
    size_t n, cap;
} cf_frames;

/* Append a copy of data[len] at time ts_us. Returns 0 or -ENOMEM. */
int cf_frames_add(cf_frames *f, const uint8_t *data, size_t len, uint64_t ts_us);
void cf_frames_free(cf_frames *f);

/* Write every frame of f to path (created or truncated). Returns 0, or
 * -errno with a message on stderr. */
int cf_pcap_write(const char *path, const cf_frames *f);

/* Read path into f (appending). Returns 0, or a negative errno (-EINVAL:
 * not a pcap file, another link type, or a truncated record) with a
 * message on stderr. */
int cf_pcap_read(const char *path, cf_frames *f);

#endif /* SERENE_CONFORM_PCAP_H */
