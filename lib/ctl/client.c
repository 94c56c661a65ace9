/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client.c - monitoring of the software switch: one command over
 * serene-switch's control socket (a Unix stream socket: one line in, one
 * line out, then the switch closes), and the parsing of `status JOB`
 * replies into serene_ctl_status, plus its JSON form.
 *
 * Every socket call is bounded by the caller's timeout (poll before each
 * step); nothing blocks forever.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl_int.h"

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for events on fd until the deadline: 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - now_ms();
        struct pollfd pfd = {.fd = fd, .events = events};
        int n;

        if (left <= 0)
            return -ETIMEDOUT;
        n = poll(&pfd, 1, (int)(left > 60000 ? 60000 : left));
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -errno;
    }
}

int serene_ctl_sw_command(const char *path, const char *line, char *reply, size_t cap,
                          int timeout_ms)
{
    struct sockaddr_un sa;
    int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 1);
    size_t len, off = 0, got = 0;
    int fd, rc = 0, send_err = 0;

    if (!path || !line || !reply || cap < 2)
        return -EINVAL;
    reply[0] = '\0';
    if (strlen(path) >= sizeof sa.sun_path)
        return -ENAMETOOLONG;
    len = strlen(line);
    if (len == 0 || memchr(line, '\n', len))
        return -EINVAL;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
        if (errno != EINPROGRESS && errno != EAGAIN) {
            rc = -errno;
            goto out;
        }
        if ((rc = wait_fd(fd, POLLOUT, deadline)))
            goto out;
    }
    /* The line, then its newline. */
    while (off <= len) {
        const char *b = off < len ? line + off : "\n";
        size_t n = off < len ? len - off : 1;
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);

        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && (errno == EPIPE || errno == ECONNRESET)) {
            /* The switch answered early (a line too long, a refused peer)
             * and closed: its reply may still be there to read. */
            send_err = -errno;
            break;
        }
        if (w < 0 && errno != EAGAIN && errno != EINTR) {
            rc = -errno;
            goto out;
        }
        if ((rc = wait_fd(fd, POLLOUT, deadline)))
            goto out;
    }
    /* Read until the newline or EOF. */
    for (;;) {
        char buf[512];
        ssize_t r = recv(fd, buf, sizeof buf, 0);

        if (r > 0) {
            for (ssize_t i = 0; i < r; i++) {
                if (buf[i] == '\n')
                    goto done;
                if (got + 1 < cap)
                    reply[got++] = buf[i];
            }
            continue;
        }
        if (r == 0)
            break;
        if (errno != EAGAIN && errno != EINTR) {
            rc = -errno;
            goto out;
        }
        if ((rc = wait_fd(fd, POLLIN, deadline)))
            goto out;
    }
done:
    reply[got] = '\0';
    if (got == 0)
        rc = send_err ? send_err : -EPROTO;
    else
        rc = strncmp(reply, "ok", 2) || (reply[2] != ' ' && reply[2] != '\0') ? -EPROTO : 0;
out:
    close(fd);
    return rc;
}

static int parse_u64(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;

    if (n == 0 || n > 20)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        if (v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return 0;
}

static int parse_mode(const char *s, size_t n, serene_ctl_mode *m)
{
    if (n == 3 && !memcmp(s, "bsp", 3))
        *m = SERENE_CTL_BSP;
    else if (n == 3 && !memcmp(s, "ssp", 3))
        *m = SERENE_CTL_SSP;
    else if (n == 3 && !memcmp(s, "asp", 3))
        *m = SERENE_CTL_ASP;
    else
        return -1;
    return 0;
}

/* rules=FROM-TO:MODE:S,... */
static int parse_rules(const char *s, size_t n, serene_ctl_status *st)
{
    const char *end = s + n;

    st->n_rules = 0;
    while (s < end) {
        const char *comma = memchr(s, ',', (size_t)(end - s)), *e = comma ? comma : end;
        const char *dash = memchr(s, '-', (size_t)(e - s));
        const char *c1 = dash ? memchr(dash, ':', (size_t)(e - dash)) : NULL;
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(e - c1 - 1)) : NULL;
        serene_ctl_rule r = {0};
        uint64_t v;

        if (!c2)
            return -1;
        if (parse_u64(s, (size_t)(dash - s), &v) || v > UINT32_MAX)
            return -1;
        r.from = (uint32_t)v;
        if ((size_t)(c1 - dash - 1) == 3 && !memcmp(dash + 1, "inf", 3))
            r.open = 1;
        else if (parse_u64(dash + 1, (size_t)(c1 - dash - 1), &v) || v > UINT32_MAX)
            return -1;
        else
            r.to = (uint32_t)v;
        if (parse_mode(c1 + 1, (size_t)(c2 - c1 - 1), &r.mode) ||
            parse_u64(c2 + 1, (size_t)(e - c2 - 1), &v) || v > UINT32_MAX)
            return -1;
        r.s = (uint32_t)v;
        if (st->n_rules < SERENE_CTL_STATUS_RULES)
            st->rules[st->n_rules++] = r;
        s = comma ? comma + 1 : end;
    }
    return 0;
}

int serene_ctl_status_parse(const char *line, serene_ctl_status *st)
{
    /* Bit per required key, in this order. */
    static const char *const keys[] = {"job",    "workers", "low",      "high",    "mode", "s",
                                       "rules",  "clocks",  "holds",    "proceeds",
                                       "advances", "ring"};
    const unsigned n_keys = sizeof keys / sizeof keys[0];
    unsigned seen = 0;
    const char *s;

    if (!line || !st || strncmp(line, "ok ", 3))
        return -EINVAL;
    memset(st, 0, sizeof *st);
    for (s = line + 3; *s;) {
        const char *e, *eq;
        size_t kl, vl;
        uint64_t v = 0;
        unsigned k;

        while (*s == ' ')
            s++;
        if (!*s)
            break;
        e = strchr(s, ' ');
        if (!e)
            e = s + strlen(s);
        eq = memchr(s, '=', (size_t)(e - s));
        if (!eq)
            return -EINVAL;
        kl = (size_t)(eq - s);
        vl = (size_t)(e - eq - 1);
        for (k = 0; k < n_keys; k++)
            if (strlen(keys[k]) == kl && !memcmp(keys[k], s, kl))
                break;
        if (k == 4) {
            if (parse_mode(eq + 1, vl, &st->mode))
                return -EINVAL;
        } else if (k == 6) {
            if (parse_rules(eq + 1, vl, st))
                return -EINVAL;
        } else if (k < n_keys) {
            if (parse_u64(eq + 1, vl, &v))
                return -EINVAL;
            switch (k) {
            case 0: st->job = (uint32_t)v; break;
            case 1: st->workers = (uint32_t)v; break;
            case 2: st->low = (uint32_t)v; break;
            case 3: st->high = (uint32_t)v; break;
            case 5: st->s = (uint32_t)v; break;
            case 7: st->clocks = v; break;
            case 8: st->holds = v; break;
            case 9: st->proceeds = v; break;
            case 10: st->advances = v; break;
            default: st->ring = (uint32_t)v; break;
            }
        }
        if (k < n_keys)
            seen |= 1u << k;
        s = e;
    }
    return seen == (1u << n_keys) - 1 ? 0 : -EINVAL;
}

int serene_ctl_status_json(const serene_ctl_status *st, FILE *f)
{
    if (!st || !f)
        return -EINVAL;
    fprintf(f,
            "{\"job\": %" PRIu32 ", \"workers\": %" PRIu32 ", \"low\": %" PRIu32
            ", \"high\": %" PRIu32 ", \"clocks\": %" PRIu64 ", \"holds\": %" PRIu64
            ", \"proceeds\": %" PRIu64 ", \"advances\": %" PRIu64
            ", \"mode\": \"%s\", \"s\": %" PRIu32 ", \"ring\": %" PRIu32 ", \"rules\": [",
            st->job, st->workers, st->low, st->high, st->clocks, st->holds, st->proceeds,
            st->advances, serene_ctl_mode_name(st->mode), st->s, st->ring);
    for (unsigned i = 0; i < st->n_rules; i++) {
        const serene_ctl_rule *r = &st->rules[i];
        fprintf(f, "%s{\"from\": %" PRIu32 ", \"to\": ", i ? ", " : "", r->from);
        if (r->open)
            fprintf(f, "null");
        else
            fprintf(f, "%" PRIu32, r->to);
        fprintf(f, ", \"mode\": \"%s\", \"s\": %" PRIu32 "}", serene_ctl_mode_name(r->mode), r->s);
    }
    fprintf(f, "]}");
    return ferror(f) ? -EIO : 0;
}
