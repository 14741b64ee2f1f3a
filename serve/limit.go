package serve

import (
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// Timeouts of the HTTP server: a connection that sends no request header
// within serveHeaderTimeout, or stays idle between requests longer than
// serveIdleTimeout, is closed; a request must be read within
// serveReadTimeout and answered within serveWriteTimeout (a result carries
// up to 64 MiB of captured output).
const (
	serveHeaderTimeout = 10 * time.Second
	serveReadTimeout   = 2 * time.Minute
	serveWriteTimeout  = 2 * time.Minute
	serveIdleTimeout   = time.Minute
)

// DefaultMaxConns returns the default bound on open connections: half
// the process's file descriptor limit (RLIMIT_NOFILE), at least 64 and
// at most 10,000, so that idle connections can never exhaust the
// descriptors the server and the driver's trials need.
func DefaultMaxConns() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 1024
	}
	return int(max(64, min(10000, rl.Cur/2)))
}

// connLimiter keeps at most max connections open: when a new one goes
// past it, the connection that has waited longest without a request in
// progress (new and silent, or idle between requests) is closed; when
// every connection has a request in progress, the new one is. A client
// with the token is served at once however many idle connections others
// hold open.
type connLimiter struct {
	max int
	log *slog.Logger

	mu      sync.Mutex
	conns   map[net.Conn]*connInfo
	closing int // closed by the limiter, not yet reported closed
	shed    int // connections closed by the limiter so far
	warned  bool
}

type connInfo struct {
	state   http.ConnState
	since   time.Time
	closing bool
}

func newConnLimiter(max int, log *slog.Logger) *connLimiter {
	return &connLimiter{max: max, log: log, conns: map[net.Conn]*connInfo{}}
}

// state is the http.Server's ConnState hook.
func (l *connLimiter) state(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch st {
	case http.StateNew:
		l.conns[c] = &connInfo{state: st, since: time.Now()}
		l.shedLocked(c)
	case http.StateActive, http.StateIdle:
		if ci := l.conns[c]; ci != nil {
			ci.state, ci.since = st, time.Now()
		}
	case http.StateClosed, http.StateHijacked:
		if ci := l.conns[c]; ci != nil {
			if ci.closing {
				l.closing--
			}
			delete(l.conns, c)
		}
	}
}

func (l *connLimiter) shedLocked(newest net.Conn) {
	for len(l.conns)-l.closing > l.max {
		var victim net.Conn
		var since time.Time
		for c, ci := range l.conns {
			if ci.closing || ci.state == http.StateActive {
				continue
			}
			if victim == nil || ci.since.Before(since) {
				victim, since = c, ci.since
			}
		}
		if victim == nil {
			victim = newest
		}
		l.conns[victim].closing = true
		l.closing++
		l.shed++
		_ = victim.Close()
		if !l.warned {
			l.warned = true
			l.log.Warn("too many open connections: closing those that wait longest without a request", "max_connections", l.max)
		}
		if victim == newest {
			return
		}
	}
}

// open returns the number of open connections not being closed.
func (l *connLimiter) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns) - l.closing
}

// PlainHTTPWarning returns the warning to give once at start when a
// server (or a worker's --connect URL) carries the access token over plain
// HTTP to an address that is not loopback, "" when there is nothing to
// say. addr is host:port; an empty host (":7070") listens on every
// address.
func PlainHTTPWarning(addr string, tls bool) string {
	if tls {
		return ""
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return ""
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return ""
	}
	where := addr
	if host == "" {
		where = addr + " (every address)"
	}
	return "plain HTTP on " + where + ": the access token and the trials' data cross the network unencrypted; serve HTTPS with --tls-cert and --tls-key (workers: --connect https://... --tls-ca)"
}
