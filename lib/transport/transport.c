/* SPDX-License-Identifier: Apache-2.0 */
/* transport.c - the table of built transports and address parsing. */
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "transport/transport.h"

static const sr_transport *const transports[] = {
    &sr_transport_udp,
#ifdef SERENE_HAVE_DPDK
    &sr_transport_dpdk,
#endif
#ifdef SERENE_HAVE_RDMA
    &sr_transport_rdma,
#endif
};

const sr_transport *sr_transport_find(const char *name)
{
    size_t len = strcspn(name, ":");
    for (size_t i = 0; i < sizeof transports / sizeof transports[0]; i++)
        if (strlen(transports[i]->name) == len && !strncmp(transports[i]->name, name, len))
            return transports[i];
    return NULL;
}

int sr_parse_hostport(const char *s, int default_port, struct sockaddr_in *out, const sr_log *log)
{
    char host[SERENE_ADDR_MAX];
    size_t len = strlen(s);
    if (len == 0 || len >= sizeof host) {
        SR_ERR(log, "address \"%s\": expected host:port", s);
        return SERENE_ERR_CONFIG;
    }
    memcpy(host, s, len + 1);
    long port = default_port;
    char *colon = strrchr(host, ':');
    if (colon) {
        *colon = '\0';
        /* Decimal digits only, as serene_config_from_env reads them: no
         * blank, sign or base prefix slips through strtol. */
        const char *d = colon + 1;
        port = 0;
        while (*d >= '0' && *d <= '9' && port <= 65535)
            port = port * 10 + (*d++ - '0');
        if (!colon[1] || *d || port > 65535) {
            SR_ERR(log, "address \"%s\": port must be 0..65535", s);
            return SERENE_ERR_CONFIG;
        }
    } else if (default_port < 0) {
        SR_ERR(log, "address \"%s\": missing :port", s);
        return SERENE_ERR_CONFIG;
    }
    memset(out, 0, sizeof *out);
    out->sin_family = AF_INET;
    out->sin_port = htons((uint16_t)port);
    if (!host[0]) {
        out->sin_addr.s_addr = htonl(INADDR_ANY);
        return 0;
    }
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_DGRAM};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc || !res) {
        SR_ERR(log, "address \"%s\": cannot resolve \"%s\": %s", s, host, gai_strerror(rc));
        return SERENE_ERR_CONFIG;
    }
    out->sin_addr = ((const struct sockaddr_in *)(const void *)res->ai_addr)->sin_addr;
    freeaddrinfo(res);
    return 0;
}
