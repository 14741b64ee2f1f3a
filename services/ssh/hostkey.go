package ssh

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/benchtune/bench/internal/safeio"
	"github.com/benchtune/bench/internal/shellenv"
)

// HostKeyError is returned when a host's key cannot be trusted: the host is
// not in the known_hosts file, its key changed, or the key is revoked.
type HostKeyError struct {
	// Addr is the address as dialed (host:port).
	Addr string
	// KnownHosts is the file the key was checked against.
	KnownHosts string
	// Offered is the key the host presented.
	Offered ssh.PublicKey
	// Known lists the keys recorded for the host (empty when it is unknown).
	Known []knownhosts.KnownKey
	// Revoked is set when the offered key is marked @revoked.
	Revoked bool
}

// Unknown reports whether the host has no entry at all.
func (e *HostKeyError) Unknown() bool { return !e.Revoked && len(e.Known) == 0 }

func (e *HostKeyError) Error() string {
	host, port := splitAddr(e.Addr)
	offered := describeKey(e.Offered)
	add := keyscanHint(host, port, e.KnownHosts)
	switch {
	case e.Revoked:
		return fmt.Sprintf("host key verification failed for %s: the key it offered (%s) is marked @revoked in %s; refusing to connect",
			e.Addr, offered, e.KnownHosts)
	case len(e.Known) == 0:
		return fmt.Sprintf("host key verification failed for %s: the host is not in known_hosts file %s (it offered %s). "+
			"If you trust this host, add its key (check that the fingerprint matches the host's own first), e.g. with: %s ; "+
			"or "+acceptNewHint+" ; "+
			`or set "ssh_insecure_ignore_host_key": true in the SSH service config to skip the check (not recommended)`,
			e.Addr, e.KnownHosts, offered, add)
	default:
		var recorded []string
		for _, k := range e.Known {
			recorded = append(recorded, fmt.Sprintf("%s:%d (%s)", k.Filename, k.Line, describeKey(k.Key)))
		}
		return fmt.Sprintf("host key verification failed for %s: HOST KEY MISMATCH: the key it offered (%s) differs from the key recorded at %s. "+
			"Someone could be intercepting the connection, or the host was reinstalled. "+
			"If the change is expected, remove the old entry with: ssh-keygen -R %s -f %s ; then add the new key, e.g. with: %s",
			e.Addr, offered, strings.Join(recorded, ", "), shellWord(knownhosts.Normalize(e.Addr)), shellWord(e.KnownHosts), add)
	}
}

func describeKey(k ssh.PublicKey) string {
	if k == nil {
		return "no key"
	}
	return k.Type() + " key " + ssh.FingerprintSHA256(k)
}

func splitAddr(addr string) (string, int) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, DefaultPort
	}
	n, _ := strconv.Atoi(p)
	return h, n
}

func keyscanHint(host string, port int, file string) string {
	p := ""
	if port != DefaultPort {
		p = "-p " + strconv.Itoa(port) + " "
	}
	return "ssh-keyscan " + p + shellWord(host) + " >> " + shellWord(file)
}

// shellWord quotes s for a command shown to the user only when needed.
func shellWord(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@%+=,", r)) {
			return shellenv.Quote(s)
		}
	}
	return s
}

// probeKey is a key no host has; checking it against known_hosts reveals
// which keys are recorded for an address.
var probeKey = func() ssh.PublicKey {
	k, err := ssh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
	if err != nil {
		panic(err)
	}
	return k
}()

// hostKeyPolicy returns the host key callback for t and the host key
// algorithms to ask for (nil: the library's defaults). Asking only for the
// algorithms of the recorded keys keeps a host that has several keys from
// presenting one that known_hosts does not list.
func (c Config) hostKeyPolicy(t target) (ssh.HostKeyCallback, []string, error) {
	if c.InsecureIgnoreHostKey {
		return ssh.InsecureIgnoreHostKey(), nil, nil //nolint:gosec // explicitly configured; warned about on each connection
	}
	path, err := expandHome(c.KnownHostsPath)
	if err != nil {
		return nil, nil, err
	}
	data, err := safeio.ReadFile(context.Background(), path, safeio.Limit{What: "known_hosts file"}, safeio.DefaultConfigLimit)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if c.acceptNew() {
				// Created with the first key recorded.
				return c.acceptNewCallback(path), nil, nil
			}
			return nil, nil, fmt.Errorf("cannot verify the host key of %s: known_hosts file %s does not exist. "+
				"Create it with the host's key (check the fingerprint first), e.g.: %s ; point ssh_known_hosts_path at another file; "+
				"or "+acceptNewHint+" ; "+
				`or set "ssh_insecure_ignore_host_key": true to skip the check (not recommended): %w`,
				t.addr(), path, keyscanHint(t.host, t.port, path), err)
		}
		return nil, nil, fmt.Errorf("reading known_hosts file: %w", err)
	}
	cb, err := knownhosts.New(path)
	if err != nil {
		return nil, nil, fmt.Errorf("known_hosts file %s: %w", path, err)
	}
	wrapped := func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := cb(hostname, remote, key)
		if err == nil {
			return nil
		}
		var ke *knownhosts.KeyError
		var re *knownhosts.RevokedError
		switch {
		case errors.As(err, &ke) && len(ke.Want) == 0 && c.acceptNew():
			return c.acceptNewCallback(path)(hostname, remote, key)
		case errors.As(err, &ke):
			return &HostKeyError{Addr: hostname, KnownHosts: path, Offered: key, Known: ke.Want}
		case errors.As(err, &re):
			return &HostKeyError{Addr: hostname, KnownHosts: path, Offered: key, Revoked: true}
		}
		return err
	}
	var algos []string
	if !bytes.Contains(data, []byte("@cert-authority")) {
		probeAddr := &net.TCPAddr{IP: net.IPv4zero, Port: t.port}
		var ke *knownhosts.KeyError
		if err := cb(t.addr(), probeAddr, probeKey); errors.As(err, &ke) {
			seen := map[string]bool{}
			for _, k := range ke.Want {
				for _, a := range algorithmsFor(k.Key.Type()) {
					if !seen[a] {
						seen[a] = true
						algos = append(algos, a)
					}
				}
			}
		}
	}
	return wrapped, algos, nil
}

// acceptNewHint tells how to turn trust on first use on.
const acceptNewHint = `set "ssh_strict_host_key_checking": "accept-new" in the SSH service config, or for every SSH service as a global (--ssh_strict_host_key_checking accept-new on the command line, or in a globals file), to record the key of a host seen for the first time (trust on first use; a changed key is still refused)`

// knownHostsMu serializes the recording of new host keys in this process.
var knownHostsMu sync.Mutex

// acceptNewCallback returns the callback for a host that known_hosts does
// not list: it reads
// the file again under a lock, in case another connection recorded the
// host meanwhile, and otherwise appends the offered key, creating the file
// (0600) and its folder (0700) when missing, and logs a warning with the
// key's fingerprint.
func (c Config) acceptNewCallback(path string) ssh.HostKeyCallback {
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		knownHostsMu.Lock()
		defer knownHostsMu.Unlock()
		if _, err := os.Stat(path); err == nil {
			cb, err := knownhosts.New(path)
			if err != nil {
				return fmt.Errorf("known_hosts file %s: %w", path, err)
			}
			err = cb(hostname, remote, key)
			var ke *knownhosts.KeyError
			var re *knownhosts.RevokedError
			switch {
			case err == nil:
				return nil
			case errors.As(err, &ke) && len(ke.Want) > 0:
				return &HostKeyError{Addr: hostname, KnownHosts: path, Offered: key, Known: ke.Want}
			case errors.As(err, &re):
				return &HostKeyError{Addr: hostname, KnownHosts: path, Offered: key, Revoked: true}
			case !errors.As(err, &ke):
				return err
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("known_hosts file %s: %w", path, err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return fmt.Errorf("recording the host key of %s: %w", hostname, err)
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("recording the host key of %s: %w", hostname, err)
		}
		line := knownhosts.Line([]string{knownhosts.Normalize(hostname)}, key) + "\n"
		_, werr := f.WriteString(line)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("recording the host key of %s in %s: %w", hostname, path, werr)
		}
		slog.Warn("SSH host seen for the first time: its key is now trusted and recorded (ssh_strict_host_key_checking is accept-new); "+
			"check that the fingerprint is the host's own", "host", hostname, "key", describeKey(key), "known_hosts", path)
		return nil
	}
}

func algorithmsFor(keyType string) []string {
	if keyType == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{keyType}
}
