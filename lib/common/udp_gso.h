/* SPDX-License-Identifier: Apache-2.0 */
/*
 * udp_gso.h - the UDP socket options of GSO and GRO, for C libraries whose
 * headers predate them (the kernel takes them by number): the library's
 * and the switch's UDP I/O, their tests and bench_switch_udp use them.
 */
#ifndef SERENE_COMMON_UDP_GSO_H
#define SERENE_COMMON_UDP_GSO_H

#include <netinet/udp.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103 /* linux/udp.h, Linux 4.18 */
#endif
#ifndef UDP_GRO
#define UDP_GRO 104 /* linux/udp.h, Linux 5.0 */
#endif

#endif /* SERENE_COMMON_UDP_GSO_H */
