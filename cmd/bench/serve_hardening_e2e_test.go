package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeIdleConnections: a driver serving over HTTP with 4096 file
// descriptors (ulimit -n) gets 5,000 idle connections that never send a
// request; a worker with the token is still served within 2 s, and a
// real worker then runs the experiment to its end. (Before connections
// were limited, accept failed with "too many open files" and the worker
// waited until the idle ones timed out.)
func TestServeIdleConnections(t *testing.T) {
	const idleConns = 5000
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Cur < idleConns+500 {
		// Raise this test process's soft limit to hold the client ends.
		want := min(rl.Max, uint64(idleConns+1000))
		if want < idleConns+500 {
			t.Skipf("the file descriptor limit (hard %d) cannot hold %d connections", rl.Max, idleConns)
		}
		old := rl
		rl.Cur = want
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			t.Skipf("cannot raise RLIMIT_NOFILE: %v", err)
		}
		t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
	}
	dir := chaosExperiment(t, 2, "0")
	tmp := t.TempDir()
	addr := freePort(t)
	dargs, wargs := netSetup(t, dir, addr, "IDLE")
	var dlog bytes.Buffer
	driver := exec.Command("/bin/sh", append([]string{"-c", `ulimit -n 4096 && exec "$@"`, "sh", benchBin}, dargs...)...)
	driver.Dir = dir
	driver.Env = append(os.Environ(), "TMPDIR="+tmp)
	logf, err := os.Create(filepath.Join(tmp, "driver.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	driver.Stdout, driver.Stderr = logf, logf
	if err := driver.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = driver.Process.Kill(); _ = driver.Wait() })
	waitFor(t, "the server", func() bool { return strings.Contains(readLog(tmp, "driver"), "serving experiment IDLE") })

	conns := make([]net.Conn, 0, idleConns)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	d := net.Dialer{Timeout: 5 * time.Second}
	for len(conns) < idleConns {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("idle connection %d: %v", len(conns)+1, err)
		}
		conns = append(conns, c)
	}
	token, _ := os.ReadFile(filepath.Join(dir, "token"))
	client := &http.Client{Timeout: 2 * time.Second}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/register", strings.NewReader(`{"name": "probe", "runners": 1}`))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("with %d idle connections open, a worker's request was not served within 2 s: %v\n%s%s", idleConns, err, readLog(tmp, "driver"), dlog.String())
	}
	var reg struct {
		WorkerID string `json:"worker_id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&reg)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || reg.WorkerID == "" {
		t.Fatalf("register: HTTP %d %+v", resp.StatusCode, reg)
	}
	t.Logf("served in %s with %d idle connections", time.Since(start).Round(time.Millisecond), idleConns)
	// The probe leaves; a real worker runs the trials.
	bye, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/bye", strings.NewReader(`{"worker_id": "`+reg.WorkerID+`"}`))
	bye.Header = req.Header
	if r, err := client.Do(bye); err == nil {
		r.Body.Close()
	}
	// Its --connect URL holds the token (user information and a query):
	// neither is sent nor logged.
	for i, a := range wargs {
		if a == "http://"+addr {
			wargs[i] = "http://user:tok-IDLE-secret@" + addr + "/?token=tok-IDLE-secret"
		}
	}
	w := startBench(t, dir, tmp, "w1", wargs...)
	waitOK(t, w, tmp, "w1")
	if wl := readLog(tmp, "w1"); strings.Contains(wl, "tok-IDLE-secret") || !strings.Contains(wl, "http://[REDACTED]@"+addr+"/?token=[REDACTED]") {
		t.Errorf("worker log:\n%s", wl)
	}
	waitOK(t, driver, tmp, "driver")
	rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "IDLE")
	if len(rows) != 2 {
		t.Fatalf("%d trials stored, want 2\n%s", len(rows), readLog(tmp, "driver"))
	}
	if d := readLog(tmp, "driver"); strings.Contains(d, "too many open files") || !strings.Contains(d, "too many open connections") {
		t.Errorf("driver log:\n%s", d)
	}
}
