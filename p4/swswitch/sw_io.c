/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sw_io.c - the I/Os this serene-switch was built with (see sw_io.h): the
 * one place that knows whether DPDK is in.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "sw_io.h"

static const sw_io_ops *const ios[] = {
    &sw_io_udp,
#ifdef SERENE_HAVE_DPDK
    &sw_io_dpdk,
#endif
};

const sw_io_ops *sw_io_find(const char *name)
{
    for (size_t i = 0; i < sizeof ios / sizeof ios[0]; i++)
        if (!strcmp(ios[i]->name, name))
            return ios[i];
    return NULL;
}

void sw_io_addr_format(uint32_t ip, uint16_t port, char *buf, size_t len)
{
    struct in_addr in = {htonl(ip)};
    char addr[INET_ADDRSTRLEN];

    inet_ntop(AF_INET, &in, addr, sizeof addr);
    snprintf(buf, len, "%s:%u", addr, (unsigned)port);
}
