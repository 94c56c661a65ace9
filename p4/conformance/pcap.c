/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pcap.c - classic pcap files (see pcap.h). Global header: magic, version
 * 2.4, zone 0, sigfigs 0, snaplen, link type 1 (Ethernet); then per frame
 * ts_sec, ts_usec, incl_len, orig_len and the bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pcap.h"

#define PCAP_MAGIC 0xa1b2c3d4u
#define PCAP_MAGIC_SWAPPED 0xd4c3b2a1u
#define LINKTYPE_ETHERNET 1u

int cf_frames_add(cf_frames *f, const uint8_t *data, size_t len, uint64_t ts_us)
{
    uint8_t *copy;

    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 64;
        cf_frame *v = realloc(f->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        f->v = v;
        f->cap = cap;
    }
    copy = malloc(len ? len : 1);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, data, len);
    f->v[f->n++] = (cf_frame){.data = copy, .len = len, .ts_us = ts_us};
    return 0;
}

void cf_frames_free(cf_frames *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->v[i].data);
    free(f->v);
    memset(f, 0, sizeof *f);
}

static void put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t get32(const uint8_t *p, int swapped)
{
    uint32_t le = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                  (uint32_t)p[3] << 24;
    return swapped ? __builtin_bswap32(le) : le;
}

int cf_pcap_write(const char *path, const cf_frames *f)
{
    uint8_t gh[24], rh[16];
    FILE *fp = fopen(path, "wb");
    int err = 0;

    if (!fp) {
        err = errno;
        fprintf(stderr, "%s: %s\n", path, strerror(err));
        return -err;
    }
    put_le32(gh, PCAP_MAGIC);
    gh[4] = 2, gh[5] = 0, gh[6] = 4, gh[7] = 0; /* version 2.4, little-endian u16s */
    put_le32(gh + 8, 0);
    put_le32(gh + 12, 0);
    put_le32(gh + 16, CF_PCAP_SNAPLEN);
    put_le32(gh + 20, LINKTYPE_ETHERNET);
    if (fwrite(gh, sizeof gh, 1, fp) != 1)
        err = EIO;
    for (size_t i = 0; !err && i < f->n; i++) {
        put_le32(rh, (uint32_t)(f->v[i].ts_us / 1000000u));
        put_le32(rh + 4, (uint32_t)(f->v[i].ts_us % 1000000u));
        put_le32(rh + 8, (uint32_t)f->v[i].len);
        put_le32(rh + 12, (uint32_t)f->v[i].len);
        if (fwrite(rh, sizeof rh, 1, fp) != 1 ||
            (f->v[i].len && fwrite(f->v[i].data, f->v[i].len, 1, fp) != 1))
            err = EIO;
    }
    if (fclose(fp) && !err)
        err = errno ? errno : EIO;
    if (err)
        fprintf(stderr, "%s: write failed: %s\n", path, strerror(err));
    return -err;
}

int cf_pcap_read(const char *path, cf_frames *f)
{
    uint8_t gh[24], rh[16];
    uint8_t *buf = NULL;
    FILE *fp = fopen(path, "rb");
    int swapped, err = 0;
    size_t got;

    if (!fp) {
        err = errno;
        fprintf(stderr, "%s: %s\n", path, strerror(err));
        return -err;
    }
    if (fread(gh, sizeof gh, 1, fp) != 1) {
        fprintf(stderr, "%s: not a pcap file (shorter than its header)\n", path);
        fclose(fp);
        return -EINVAL;
    }
    swapped = get32(gh, 0) == PCAP_MAGIC_SWAPPED;
    /* simple_switch --use-files writes link type 0 for its Ethernet frames. */
    if (get32(gh, swapped) != PCAP_MAGIC ||
        (get32(gh + 20, swapped) != LINKTYPE_ETHERNET && get32(gh + 20, swapped) != 0)) {
        fprintf(stderr, "%s: not a microsecond pcap file of Ethernet frames\n", path);
        fclose(fp);
        return -EINVAL;
    }
    buf = malloc(CF_PCAP_SNAPLEN);
    if (!buf) {
        fclose(fp);
        return -ENOMEM;
    }
    while ((got = fread(rh, 1, sizeof rh, fp)) == sizeof rh) {
        uint32_t incl = get32(rh + 8, swapped);
        uint64_t ts = (uint64_t)get32(rh, swapped) * 1000000u + get32(rh + 4, swapped);

        if (incl > CF_PCAP_SNAPLEN || fread(buf, 1, incl, fp) != incl) {
            fprintf(stderr, "%s: truncated or oversized record %zu\n", path, f->n + 1);
            err = EINVAL;
            break;
        }
        if (cf_frames_add(f, buf, incl, ts) < 0) {
            err = ENOMEM;
            break;
        }
    }
    if (!err && got != 0) {
        fprintf(stderr, "%s: truncated record header\n", path);
        err = EINVAL;
    }
    free(buf);
    fclose(fp);
    return -err;
}
