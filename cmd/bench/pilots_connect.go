package main

import (
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"os"
	"regexp"
	"strings"

	"github.com/benchtune/bench/serve"
)

// pilotConnect is bench pilots --connect URL: pilots that run network
// workers (bench worker --connect URL), which pull their trials from a
// bench serve (or bench run --serve) and need no database.
type pilotConnect struct {
	url, tokenFile, tlsCA string
	err                   error
}

// take consumes argv[*i] (and its value) when it is one of --connect,
// --token-file or --tls-ca.
func (c *pilotConnect) take(argv []string, i *int) bool {
	a := argv[*i]
	for _, o := range []struct {
		names []string
		dest  *string
	}{{[]string{"--connect"}, &c.url}, {[]string{"--token-file", "--token_file"}, &c.tokenFile}, {[]string{"--tls-ca", "--tls_ca"}, &c.tlsCA}} {
		for _, n := range o.names {
			switch {
			case a == n:
				if *i+1 >= len(argv) || argv[*i+1] == "" {
					if c.err == nil {
						c.err = fmt.Errorf("%s wants a value", n)
					}
					return true
				}
				*o.dest = argv[*i+1]
				*i++
				return true
			case strings.HasPrefix(a, n+"="):
				*o.dest = a[len(n)+1:]
				return true
			}
		}
	}
	return false
}

// tokenEnvName is what --token-file env:NAME may name.
var tokenEnvName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// check refuses the combinations that cannot work.
func (c *pilotConnect) check(experiment string) error {
	if c.err != nil {
		return c.err
	}
	if c.url == "" {
		if c.tokenFile != "" || c.tlsCA != "" {
			return errors.New("bench pilots: --token-file and --tls-ca go with --connect URL (pilots with --experiment reach the experiment through its shared storage)")
		}
		return nil
	}
	if experiment != "" {
		return errors.New("bench pilots: --connect and --experiment exclude each other: network workers run the experiment that the server at --connect serves")
	}
	u, err := neturl.Parse(c.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("bench pilots: --connect wants an http:// or https:// URL of a bench serve (or bench run --serve), got %q", serve.RedactURL(c.url))
	}
	if u.User != nil {
		return fmt.Errorf("bench pilots: --connect %s carries credentials: they would be on every pilot's command line; pass the access token with --token-file", serve.RedactURL(c.url))
	}
	if c.tokenFile == "" {
		return errors.New("bench pilots --connect needs --token-file FILE (or env:NAME): the access token the workers present, read where they run")
	}
	if name, ok := strings.CutPrefix(c.tokenFile, "env:"); ok && !tokenEnvName.MatchString(name) {
		return fmt.Errorf("bench pilots: --token-file %q: env:NAME wants an environment variable name", c.tokenFile)
	}
	return nil
}

// workerArgs are the network worker's own options: the URL and where the
// worker finds the token (a path or env:NAME; never the token itself).
func (c *pilotConnect) workerArgs() []string {
	out := []string{"--connect", c.url, "--token-file", c.tokenFile}
	if c.tlsCA != "" {
		out = append(out, "--tls-ca", c.tlsCA)
	}
	return out
}

// loopbackWarning: a loopback --connect URL is reached only by pilots on
// this machine (the local engine's); other engines' jobs run elsewhere.
func (c *pilotConnect) loopbackWarning(engine string) string {
	u, err := neturl.Parse(c.url)
	if err != nil || engine == "local" {
		return ""
	}
	h := u.Hostname()
	if ip := net.ParseIP(h); h != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return ""
	}
	return fmt.Sprintf("--connect %s is a loopback address: the %s engine's pilots reach it only if they run on this machine", serve.RedactURL(c.url), engine)
}

var pilotIDBad = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// jobID names the pilots' jobs after the server they connect to (they
// do not know the experiment's ID).
func (c *pilotConnect) jobID() string {
	u, err := neturl.Parse(c.url)
	host := "server"
	if err == nil && u.Host != "" {
		host = u.Host
	}
	return "connect-" + strings.Trim(pilotIDBad.ReplaceAllString(host, "-"), "-")
}

// readAccessToken reads the access token of --token-file: a file, or
// env:NAME for the value of the environment variable NAME (a Kubernetes
// Secret given to the pod with the engine's secret_env, for one).
func readAccessToken(ref string) (string, error) {
	name, ok := strings.CutPrefix(ref, "env:")
	if !ok {
		return serve.ReadToken(ref)
	}
	if !tokenEnvName.MatchString(name) {
		return "", fmt.Errorf("token file %q: env:NAME wants an environment variable name", ref)
	}
	tok := strings.TrimSpace(os.Getenv(name))
	if tok == "" {
		return "", fmt.Errorf("token file env:%s: the environment variable %s is unset or empty", name, name)
	}
	return tok, nil
}
