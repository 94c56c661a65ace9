/* SPDX-License-Identifier: Apache-2.0 */
/*
 * udp_wrap.h - libc failures for the UDP I/O tests, injected by linker
 * wrapping (-Wl,--wrap=setsockopt,--wrap=sendmmsg): a kernel that refuses
 * the UDP offload options, and one that refuses GSO sends. Included by one
 * test program each (it defines the wrappers).
 */
#ifndef SERENE_TESTS_UDP_WRAP_H
#define SERENE_TESTS_UDP_WRAP_H

#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>

#include "common/udp_gso.h"

static int refuse_opts;    /* setsockopt(SOL_UDP, UDP_SEGMENT or UDP_GRO) fails */
static int refuse_gso;     /* sendmmsg fails on a GSO message (EIO) */
static unsigned gso_seen;  /* GSO messages handed to sendmmsg */

int __real_setsockopt(int fd, int level, int name, const void *v, socklen_t len);
int __wrap_setsockopt(int fd, int level, int name, const void *v, socklen_t len);
int __real_sendmmsg(int fd, struct mmsghdr *m, unsigned int n, int flags);
int __wrap_sendmmsg(int fd, struct mmsghdr *m, unsigned int n, int flags);

int __wrap_setsockopt(int fd, int level, int name, const void *v, socklen_t len)
{
    if (refuse_opts && level == SOL_UDP && (name == UDP_SEGMENT || name == UDP_GRO)) {
        errno = ENOPROTOOPT;
        return -1;
    }
    return __real_setsockopt(fd, level, name, v, len);
}

static int is_gso(struct msghdr *mh)
{
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm))
        if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_SEGMENT)
            return 1;
    return 0;
}

/* As the kernel does: an error only when the first message fails, else
 * the count of those sent before the failing one. */
int __wrap_sendmmsg(int fd, struct mmsghdr *m, unsigned int n, int flags)
{
    unsigned i = 0;

    for (; i < n; i++) {
        if (!is_gso(&m[i].msg_hdr))
            continue;
        if (refuse_gso)
            break;
        gso_seen++;
    }
    if (i == 0 && n > 0) {
        gso_seen++;
        errno = EIO;
        return -1;
    }
    return __real_sendmmsg(fd, m, i, flags);
}

#endif /* SERENE_TESTS_UDP_WRAP_H */
