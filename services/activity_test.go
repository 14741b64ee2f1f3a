package services

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestActivityNil(t *testing.T) {
	var a *Activity
	a.Touch()
	a.Watch("x")
	if !a.LastActive().IsZero() || a.Watched() != nil {
		t.Error("a nil Activity should do nothing")
	}
	if ActivityFrom(context.Background()) != nil {
		t.Error("empty context has an Activity")
	}
	// The nil-safe chain the services use.
	ActivityFrom(context.Background()).Touch()
}

func TestActivityTouch(t *testing.T) {
	before := time.Now()
	a := NewActivity()
	created := a.LastActive()
	if created.Before(before) || created.After(time.Now()) {
		t.Fatalf("creation time %v not within the call", created)
	}
	time.Sleep(20 * time.Millisecond)
	a.Touch()
	if got := a.LastActive(); got.Sub(created) < 20*time.Millisecond {
		t.Errorf("Touch did not move LastActive: %v -> %v", created, got)
	}
	if got := ActivityFrom(WithActivity(context.Background(), a)); got != a {
		t.Error("ActivityFrom(WithActivity(a)) != a")
	}
	var zero Activity
	if !zero.LastActive().IsZero() {
		t.Error("a zero Activity should have no touch")
	}
}

func TestActivityWatch(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "telemetry.csv")
	a := NewActivity()
	a.Watch(file) // does not exist yet: ignored
	a.Watch(file)
	if got := a.Watched(); len(got) != 1 {
		t.Errorf("Watched = %v, want the file once", got)
	}
	created := a.LastActive()

	// An older file does not move LastActive back.
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := created.Add(-time.Hour)
	if err := os.Chtimes(file, old, old); err != nil {
		t.Fatal(err)
	}
	if got := a.LastActive(); !got.Equal(created) {
		t.Errorf("LastActive = %v, want the creation time %v", got, created)
	}

	// The file is written later: LastActive follows its mtime.
	later := created.Add(5 * time.Second)
	if err := os.Chtimes(file, later, later); err != nil {
		t.Fatal(err)
	}
	if got := a.LastActive(); !got.Equal(later) {
		t.Errorf("LastActive = %v, want the file's mtime %v", got, later)
	}

	// A real write moves it too. File times come from the kernel's coarse
	// clock (a tick, a few ms), so leave a margin.
	if err := os.Chtimes(file, old, old); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	if err := os.WriteFile(file, []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := a.LastActive(); got.Sub(created) < 40*time.Millisecond {
		t.Errorf("LastActive = %v, not after the write (created %v)", got, created)
	}
}

func TestActivityConcurrent(t *testing.T) {
	a := NewActivity()
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				a.Touch()
				if j%50 == 0 {
					a.Watch(filepath.Join(dir, "f", string(rune('a'+i))))
				}
				_ = a.LastActive()
			}
		})
	}
	wg.Wait()
	if len(a.Watched()) != 8 {
		t.Errorf("Watched = %v", a.Watched())
	}
	// Touches never move LastActive backwards.
	t1 := a.LastActive()
	a.Touch()
	if a.LastActive().Before(t1) {
		t.Error("LastActive moved backwards")
	}
}
