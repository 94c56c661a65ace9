/* SPDX-License-Identifier: Apache-2.0 */
/*
 * errors.c - messages and names of Serene's return codes, and the version.
 *
 * Both tables come from SERENE_ERRNO_MAP in serene.h, so a new code cannot
 * be added to the enum without a message and a name. Codes outside the
 * library block are negated errno values and are described by libc.
 */
#include <string.h>

#include "serene/serene.h"

#define SR_MSG_CASE(name, n, msg)                                                                  \
    case SERENE_ERR_##name:                                                                        \
        return msg;
#define SR_NAME_CASE(name, n, msg)                                                                 \
    case SERENE_ERR_##name:                                                                        \
        return "SERENE_ERR_" #name;

SERENE_API const char *serene_strerror(int code)
{
    switch (code) {
    case SERENE_OK:
        return "success";
        SERENE_ERRNO_MAP(SR_MSG_CASE)
    default:
        break;
    }
    if (code < 0 && code > SERENE_ERR_BASE_)
        return strerror(-code);
    return "unknown error";
}

SERENE_API const char *serene_err_name(int code)
{
    switch (code) {
    case SERENE_OK:
        return "SERENE_OK";
        SERENE_ERRNO_MAP(SR_NAME_CASE)
    default:
        break;
    }
    if (code < 0 && code > SERENE_ERR_BASE_) {
        const char *n = strerrorname_np(-code);
        if (n)
            return n;
    }
    return "SERENE_ERR_UNKNOWN";
}

SERENE_API const char *serene_version(void)
{
    return SERENE_VERSION_STRING;
}

SERENE_API unsigned serene_version_int(void)
{
    return (unsigned)SERENE_VERSION_MAJOR << 16 | (unsigned)SERENE_VERSION_MINOR << 8 |
           (unsigned)SERENE_VERSION_PATCH;
}
