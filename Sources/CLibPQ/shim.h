#ifndef SHOPLEDGER_CLIBPQ_SHIM_H
#define SHOPLEDGER_CLIBPQ_SHIM_H

#include <libpq-fe.h>
#include <poll.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

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

// The reactor (Postgres/Connection/SocketReactor.swift) waits for libpq's sockets with epoll.
// `struct epoll_event` is packed on x86-64, so it is built and unpacked here rather than in Swift.
static const uint32_t CLIBPQ_EPOLLIN = EPOLLIN;
static const uint32_t CLIBPQ_EPOLLOUT = EPOLLOUT;
static const uint32_t CLIBPQ_EPOLLERR = EPOLLERR;
static const uint32_t CLIBPQ_EPOLLHUP = EPOLLHUP;
static const int CLIBPQ_EPOLL_CTL_ADD = EPOLL_CTL_ADD;
static const int CLIBPQ_EPOLL_CTL_MOD = EPOLL_CTL_MOD;
static const int CLIBPQ_EPOLL_CTL_DEL = EPOLL_CTL_DEL;

static inline int clibpq_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

static inline int clibpq_eventfd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

static inline int clibpq_epoll_control(int epfd, int op, int fd, uint64_t token, uint32_t events) {
    struct epoll_event event;
    event.events = events;
    event.data.u64 = token;
    return epoll_ctl(epfd, op, fd, &event);
}

// Waits for at most 64 events; returns their count (or -1, errno set) with each one's token and events.
static inline int clibpq_epoll_wait(int epfd, uint64_t *tokens, uint32_t *events, int max, int timeout) {
    struct epoll_event ready[64];
    if (max > 64) max = 64;
    int n = epoll_wait(epfd, ready, max, timeout);
    for (int i = 0; i < n; i++) {
        tokens[i] = ready[i].data.u64;
        events[i] = ready[i].events;
    }
    return n;
}

#endif
