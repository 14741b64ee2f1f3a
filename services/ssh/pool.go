package ssh

import (
	"context"
	"errors"
	"fmt"
	"github.com/benchtune/bench/internal/capture"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/benchtune/bench/internal/safeio"
	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// maxSessionsPerConn bounds the sessions bench opens at once on one
// connection. OpenSSH allows 10 by default (MaxSessions), and the SFTP
// client holds one.
const maxSessionsPerConn = 8

// errPoolClosed is returned after the service was closed.
var errPoolClosed = errors.New("ssh: the service is closed")

// permanentError marks a connection failure that retrying cannot fix (a
// host key that does not verify, a refused login, a missing key file).
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return &permanentError{err} }

// pool caches one connection per (user, host, port, key) and reconnects
// when a cached connection has died. It is safe for concurrent use.
type pool struct {
	cfg Config

	mu      sync.Mutex
	entries map[target]*entry
	closed  bool

	dials atomic.Int64 // connections made, for tests and debugging
}

type entry struct {
	dialing chan struct{} // a one-slot semaphore serializing dials
	cur     *conn
}

// conn is one SSH connection and the SFTP client opened on it.
type conn struct {
	t      target
	client *ssh.Client
	raw    net.Conn
	done   chan struct{} // closed when the connection has ended
	closed atomic.Bool   // set at once by close
	slots  chan struct{} // session slots

	sftpMu sync.Mutex
	sftp   *sftp.Client
	home   string
}

func newPool(cfg Config) *pool {
	return &pool{cfg: cfg, entries: map[target]*entry{}}
}

// alive reports whether the connection has not ended.
func (c *conn) alive() bool {
	if c.closed.Load() {
		return false
	}
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// close ends the connection abruptly (in-flight operations fail).
func (c *conn) close() {
	c.closed.Store(true)
	_ = c.raw.Close()
	_ = c.client.Close()
}

// get returns a live connection for t, dialing one when none is cached or
// the cached one has died.
func (p *pool) get(ctx context.Context, t target) (*conn, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errPoolClosed
	}
	e := p.entries[t]
	if e == nil {
		e = &entry{dialing: make(chan struct{}, 1)}
		p.entries[t] = e
	}
	p.mu.Unlock()

	select {
	case e.dialing <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	defer func() { <-e.dialing }()
	if e.cur != nil && e.cur.alive() {
		return e.cur, nil
	}
	c, err := p.dial(ctx, t)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.close()
		return nil, errPoolClosed
	}
	e.cur = c
	return c, nil
}

// drop closes c so that the next get dials afresh.
func (p *pool) drop(c *conn) {
	if c != nil {
		c.close()
	}
}

// dropTarget closes the cached connection to t, if any.
func (p *pool) dropTarget(t target) {
	p.mu.Lock()
	e := p.entries[t]
	var c *conn
	if e != nil {
		c = e.cur
	}
	p.mu.Unlock()
	p.drop(c)
}

// dropAll closes every cached connection (the service stays usable).
func (p *pool) dropAll() {
	p.mu.Lock()
	var cs []*conn
	for _, e := range p.entries {
		if e.cur != nil {
			cs = append(cs, e.cur)
		}
	}
	p.mu.Unlock()
	for _, c := range cs {
		c.close()
	}
}

// Close closes every connection; later calls fail.
func (p *pool) Close() error {
	p.mu.Lock()
	p.closed = true
	var cs []*conn
	for _, e := range p.entries {
		if e.cur != nil {
			cs = append(cs, e.cur)
		}
	}
	p.entries = map[target]*entry{}
	p.mu.Unlock()
	for _, c := range cs {
		if c.sftp != nil {
			_ = c.sftp.Close()
		}
		_ = c.client.Close()
	}
	return nil
}

// dial opens a new connection to t, bounded by the connect timeout.
func (p *pool) dial(ctx context.Context, t target) (*conn, error) {
	cfg := p.cfg
	hostKeyCB, algos, err := cfg.hostKeyPolicy(t)
	if err != nil {
		return nil, permanent(err)
	}
	signers, describe, closeAgent, err := loadSigners(t)
	if err != nil {
		return nil, permanent(err)
	}
	defer closeAgent()

	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	d := net.Dialer{KeepAlive: 30 * time.Second}
	raw, err := d.DialContext(ctx, "tcp", t.addr())
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", t, dialErr(ctx, err, cfg.ConnectTimeout))
	}
	// The handshake honours the context too: closing the socket ends it.
	if dl, ok := ctx.Deadline(); ok {
		_ = raw.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = raw.Close() })
	sc, chans, reqs, err := ssh.NewClientConn(raw, t.addr(), &ssh.ClientConfig{
		User:              t.user,
		Auth:              []ssh.AuthMethod{ssh.PublicKeysCallback(signers)},
		HostKeyCallback:   hostKeyCB,
		HostKeyAlgorithms: algos,
		Timeout:           cfg.ConnectTimeout,
	})
	stop()
	if err != nil {
		_ = raw.Close()
		var hk *HostKeyError
		switch {
		case errors.As(err, &hk):
			return nil, permanent(hk)
		case strings.Contains(err.Error(), "unable to authenticate"):
			return nil, permanentf("SSH login to %s was refused (offered %s): check that the public key is in the user's authorized_keys on the host: %w", t, describe, err)
		}
		return nil, fmt.Errorf("connecting to %s: %w", t, dialErr(ctx, err, cfg.ConnectTimeout))
	}
	_ = raw.SetDeadline(time.Time{})
	client := ssh.NewClient(sc, chans, reqs)
	c := &conn{
		t:      t,
		client: client,
		raw:    raw,
		done:   make(chan struct{}),
		slots:  make(chan struct{}, maxSessionsPerConn),
	}
	go func() {
		_ = client.Wait()
		close(c.done)
	}()
	if cfg.KeepaliveInterval > 0 {
		go c.keepalive(cfg.KeepaliveInterval)
	}
	if cfg.InsecureIgnoreHostKey {
		slog.Warn("SSH host key verification is OFF (ssh_insecure_ignore_host_key is true): this connection could be intercepted",
			"host", t.addr(), "user", t.user)
	}
	p.dials.Add(1)
	slog.Debug("ssh: connected", "host", t.addr(), "user", t.user)
	return c, nil
}

func permanentf(format string, args ...any) error { return permanent(fmt.Errorf(format, args...)) }

func dialErr(ctx context.Context, err error, timeout time.Duration) error {
	var ne net.Error
	timedOut := ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded)
	if timedOut || errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("no connection within ssh_connect_timeout (%s): %w", timeout, err)
	}
	return err
}

// keepalive probes the connection every interval and closes it when the
// host stops answering, so that waiting operations fail and reconnect.
func (c *conn) keepalive(interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	grace := max(2*interval, 2*time.Second)
	for {
		select {
		case <-c.done:
			return
		case <-tick.C:
		}
		errc := make(chan error, 1)
		go func() {
			_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
			errc <- err
		}()
		select {
		case err := <-errc:
			if err != nil {
				c.close()
				return
			}
		case <-time.After(grace):
			slog.Warn("ssh: no answer to keepalive; closing the connection", "host", c.t.addr(), "waited", grace)
			c.close()
			return
		case <-c.done:
			return
		}
	}
}

// loadSigners collects the keys to offer: the configured key file (or the
// usual ~/.ssh/id_* files when none is configured), then the ssh-agent's
// keys when SSH_AUTH_SOCK is set. describe names them for error messages.
func loadSigners(t target) (func() ([]ssh.Signer, error), string, func(), error) {
	var (
		fileSigners []ssh.Signer
		names       []string
		encrypted   string
	)
	if t.keyPath != "" {
		path, err := expandHome(t.keyPath)
		if err != nil {
			return nil, "", nil, err
		}
		s, err := readKey(path)
		var pm *ssh.PassphraseMissingError
		switch {
		case errors.As(err, &pm):
			encrypted = path
		case err != nil:
			return nil, "", nil, err
		default:
			fileSigners = append(fileSigners, s)
			names = append(names, "key "+path)
		}
	} else if home, err := os.UserHomeDir(); err == nil {
		for _, n := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
			path := filepath.Join(home, ".ssh", n)
			s, err := readKey(path)
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					slog.Debug("ssh: skipping default key", "path", path, "err", err)
				}
				continue
			}
			fileSigners = append(fileSigners, s)
			names = append(names, "key "+path)
		}
	}

	var agentSigners func() ([]ssh.Signer, error)
	closeAgent := func() {}
	if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" {
		ac, err := net.Dial("unix", sock)
		if err != nil {
			slog.Debug("ssh: ssh-agent unreachable", "err", err)
		} else {
			agentSigners = agent.NewClient(ac).Signers
			closeAgent = func() { _ = ac.Close() }
			names = append(names, "ssh-agent keys")
		}
	}
	if encrypted != "" && agentSigners == nil {
		closeAgent()
		return nil, "", nil, fmt.Errorf("private key %s is protected by a passphrase, which bench cannot ask for: "+
			"load it into ssh-agent (ssh-add %s) and make SSH_AUTH_SOCK available, or use a key without a passphrase", encrypted, encrypted)
	}
	if len(fileSigners) == 0 && agentSigners == nil {
		closeAgent()
		return nil, "", nil, fmt.Errorf("no SSH key to log in to %s with: set ssh_priv_key_path, put a key in ~/.ssh/id_ed25519 (or id_ecdsa, id_rsa), or run ssh-agent with SSH_AUTH_SOCK set", t)
	}
	signers := func() ([]ssh.Signer, error) {
		out := append([]ssh.Signer(nil), fileSigners...)
		if agentSigners != nil {
			as, err := agentSigners()
			if err != nil {
				slog.Debug("ssh: listing ssh-agent keys failed", "err", err)
			}
			out = append(out, as...)
		}
		return out, nil
	}
	return signers, strings.Join(names, ", "), closeAgent, nil
}

func readKey(path string) (ssh.Signer, error) {
	data, err := safeio.ReadFile(context.Background(), path, safeio.Limit{What: "private key file"}, safeio.DefaultConfigLimit)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("ssh_priv_key_path %s does not exist: %w", path, err)
		}
		return nil, fmt.Errorf("reading private key: %w", err)
	}
	s, err := ssh.ParsePrivateKey(data)
	if err != nil {
		var pm *ssh.PassphraseMissingError
		if errors.As(err, &pm) {
			return nil, err
		}
		// The parser's message never quotes key material.
		return nil, fmt.Errorf("private key %s cannot be used: %w", path, err)
	}
	return s, nil
}

// sftpClient returns the connection's SFTP client, opening it on first use,
// and the login directory that relative paths start from.
func (c *conn) sftpClient() (*sftp.Client, string, error) {
	c.sftpMu.Lock()
	defer c.sftpMu.Unlock()
	if c.sftp != nil {
		return c.sftp, c.home, nil
	}
	sc, err := sftp.NewClient(c.client, sftp.UseConcurrentWrites(true))
	if err != nil {
		return nil, "", fmt.Errorf("opening SFTP on %s (the host's sshd needs an sftp Subsystem): %w", c.t, err)
	}
	home, err := sc.Getwd()
	if err != nil {
		_ = sc.Close()
		return nil, "", fmt.Errorf("SFTP on %s: finding the login directory: %w", c.t, err)
	}
	c.sftp, c.home = sc, home
	return sc, home, nil
}

// cmdResult is the outcome of a short command run in an SSH session.
type cmdResult struct {
	stdout, stderr string
	exitCode       int
}

// errNoExitStatus is returned when a session ended without an exit status
// (the connection went away, or the command was killed by a signal).
var errNoExitStatus = errors.New("the command ended without an exit status")

// run runs a short command in a new session (the login shell runs it) and
// returns its output, at most 64 KiB per stream. A non-zero exit is not an
// error. Cancelling ctx closes the session.
func (c *conn) run(ctx context.Context, cmd string, stdin io.Reader) (cmdResult, error) {
	sess, err := c.session(ctx)
	if err != nil {
		return cmdResult{}, err
	}
	defer func() { <-c.slots }()
	defer sess.Close()
	stdout := capture.New(32<<10, 32<<10)
	stderr := capture.New(32<<10, 32<<10)
	sess.Stdout = stdout
	sess.Stderr = stderr
	if stdin != nil {
		sess.Stdin = stdin
	}
	if err := sess.Start(cmd); err != nil {
		return cmdResult{}, err
	}
	errc := make(chan error, 1)
	go func() { errc <- sess.Wait() }()
	select {
	case err = <-errc:
	case <-ctx.Done():
		_ = sess.Close()
		<-errc
		return cmdResult{stdout: stdout.String(), stderr: stderr.String()}, context.Cause(ctx)
	case <-c.done:
		_ = sess.Close()
		<-errc
		return cmdResult{stdout: stdout.String(), stderr: stderr.String()}, fmt.Errorf("connection to %s lost: %w", c.t, io.ErrUnexpectedEOF)
	}
	res := cmdResult{stdout: stdout.String(), stderr: stderr.String()}
	var ee *ssh.ExitError
	var em *ssh.ExitMissingError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.exitCode = ee.ExitStatus()
		if ee.Signal() != "" && ee.ExitStatus() == 0 {
			res.exitCode = 128
		}
	case errors.As(err, &em):
		return res, fmt.Errorf("%w: %w", errNoExitStatus, err)
	default:
		return res, err
	}
	return res, nil
}

// session opens a session once a slot is free, retrying while the server
// refuses more sessions (its MaxSessions may be lower than ours).
func (c *conn) session(ctx context.Context) (*ssh.Session, error) {
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-c.done:
		return nil, fmt.Errorf("connection to %s lost: %w", c.t, io.ErrUnexpectedEOF)
	}
	wait := 20 * time.Millisecond
	for try := 1; ; try++ {
		sess, err := c.client.NewSession()
		if err == nil {
			return sess, nil
		}
		// OpenSSH refuses a session over its MaxSessions with "prohibited",
		// or with "open failed" while it is still closing sessions this
		// side already closed (seen under load): both pass.
		var oe *ssh.OpenChannelError
		retry := errors.As(err, &oe) && (oe.Reason == ssh.Prohibited || oe.Reason == ssh.ConnectionFailed && try < 20)
		if !retry {
			<-c.slots
			return nil, err
		}
		select {
		case <-time.After(wait):
			wait = min(2*wait, time.Second)
		case <-ctx.Done():
			<-c.slots
			return nil, context.Cause(ctx)
		}
	}
}

// isTransportErr reports whether err means that the connection broke (so
// that a retry on a new connection may work) rather than an answer from
// the host or a problem no retry fixes. c is the connection the operation
// used, or nil for a failed connection attempt.
func isTransportErr(c *conn, err error) bool {
	if err == nil {
		return false
	}
	var pe *permanentError
	switch {
	case errors.As(err, &pe), errors.Is(err, errPoolClosed),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	case c != nil && !c.alive():
		return true
	}
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, sftp.ErrSSHFxConnectionLost) || errors.Is(err, errNoExitStatus) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.As(err, &ne)
}
