#ifndef SHOPLEDGER_CLIBPQ_SHIM_H
#define SHOPLEDGER_CLIBPQ_SHIM_H

#include <libpq-fe.h>
#include <poll.h>

// Swift does not import character-literal macros such as PG_DIAG_SQLSTATE ('C'),
// so the diagnostic field codes are re-exported here as integers.
static const int CLIBPQ_DIAG_SEVERITY_NONLOCALIZED = 'V';
static const int CLIBPQ_DIAG_SQLSTATE = 'C';
static const int CLIBPQ_DIAG_MESSAGE_PRIMARY = 'M';
static const int CLIBPQ_DIAG_MESSAGE_DETAIL = 'D';
static const int CLIBPQ_DIAG_MESSAGE_HINT = 'H';
static const int CLIBPQ_DIAG_STATEMENT_POSITION = 'P';
static const int CLIBPQ_DIAG_SCHEMA_NAME = 's';
static const int CLIBPQ_DIAG_TABLE_NAME = 't';
static const int CLIBPQ_DIAG_COLUMN_NAME = 'c';
static const int CLIBPQ_DIAG_CONSTRAINT_NAME = 'n';

// True when the connection's socket has something to read right now (or is closed): used to
// notice, before a leased connection is used, that the server went away while it sat idle.
static inline int clibpq_socket_readable(int fd) {
    struct pollfd p;
    p.fd = fd;
    p.events = POLLIN;
    p.revents = 0;
    int n = poll(&p, 1, 0);
    if (n < 0) return 1;
    return n > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

#endif
