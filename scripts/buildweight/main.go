// Command buildweight summarises the compile actions of one or more Go
// action graphs (`go build -debug-actiongraph=FILE`): how many packages
// were compiled, their summed compile time, and the heaviest packages with
// their share of the sum. scripts/bench-build.sh runs it.
//
//	go run ./scripts/buildweight [-top N] NAME=FILE [NAME=FILE ...]
//
// A compile action is one of Mode "build" that ran a command (a cold
// cache runs all of them). Its time is TimeDone - TimeStart (wall time,
// what the issue measured; on a loaded machine it includes waiting for a
// CPU) and CmdUser + CmdSys (the CPU time of its commands, which load
// moves much less). With several graphs, the first is the baseline and
// the others are given as ratios to it.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

type action struct {
	Mode      string
	Package   string
	TimeStart time.Time
	TimeDone  time.Time
	Cmd       []string
	CmdUser   int64
	CmdSys    int64
}

type pkgTime struct {
	pkg       string
	wall, cpu time.Duration
}

type summary struct {
	name      string
	pkgs      []pkgTime // heaviest (by wall time) first
	wall, cpu time.Duration
}

func load(name, file string) (summary, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return summary{}, err
	}
	var acts []action
	if err := json.Unmarshal(raw, &acts); err != nil {
		return summary{}, fmt.Errorf("%s: %w", file, err)
	}
	s := summary{name: name}
	for _, a := range acts {
		if a.Mode != "build" || len(a.Cmd) == 0 || a.TimeStart.IsZero() || a.TimeDone.IsZero() {
			continue
		}
		p := pkgTime{pkg: a.Package, wall: a.TimeDone.Sub(a.TimeStart), cpu: time.Duration(a.CmdUser + a.CmdSys)}
		s.pkgs = append(s.pkgs, p)
		s.wall += p.wall
		s.cpu += p.cpu
	}
	if len(s.pkgs) == 0 {
		return summary{}, fmt.Errorf("%s: no compile actions ran (was the build cache cold?)", file)
	}
	sort.Slice(s.pkgs, func(i, j int) bool { return s.pkgs[i].wall > s.pkgs[j].wall })
	return s, nil
}

func pct(part, whole time.Duration) float64 { return 100 * part.Seconds() / whole.Seconds() }

func main() {
	top := flag.Int("top", 12, "how many of the heaviest packages to list")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: buildweight [-top N] NAME=ACTIONGRAPH.json [NAME=ACTIONGRAPH.json ...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var all []summary
	for _, arg := range flag.Args() {
		name, file, ok := strings.Cut(arg, "=")
		if !ok {
			name, file = arg, arg
		}
		s, err := load(name, file)
		if err != nil {
			fmt.Fprintln(os.Stderr, "buildweight:", err)
			os.Exit(1)
		}
		all = append(all, s)
	}
	for _, s := range all {
		fmt.Printf("== %s: %d packages compiled, summed compile time %.1f s wall, %.1f s CPU\n",
			s.name, len(s.pkgs), s.wall.Seconds(), s.cpu.Seconds())
		byCPU := append([]pkgTime(nil), s.pkgs...)
		sort.Slice(byCPU, func(i, j int) bool { return byCPU[i].cpu > byCPU[j].cpu })
		fmt.Printf("   longest package: %s, %.1f s wall (%.1f%%); by CPU: %s, %.1f s (%.1f%%)\n",
			s.pkgs[0].pkg, s.pkgs[0].wall.Seconds(), pct(s.pkgs[0].wall, s.wall),
			byCPU[0].pkg, byCPU[0].cpu.Seconds(), pct(byCPU[0].cpu, s.cpu))
		fmt.Printf("   %-62s %8s %6s %8s %6s\n", "heaviest packages", "wall s", "%", "CPU s", "%")
		for _, p := range s.pkgs[:min(*top, len(s.pkgs))] {
			fmt.Printf("   %-62s %8.1f %6.1f %8.1f %6.1f\n", p.pkg, p.wall.Seconds(), pct(p.wall, s.wall), p.cpu.Seconds(), pct(p.cpu, s.cpu))
		}
	}
	if len(all) > 1 {
		base := all[0]
		for _, s := range all[1:] {
			fmt.Printf("== %s / %s: summed compile time %.3f (wall), %.3f (CPU); packages %d / %d\n",
				s.name, base.name, s.wall.Seconds()/base.wall.Seconds(), s.cpu.Seconds()/base.cpu.Seconds(), len(s.pkgs), len(base.pkgs))
		}
	}
}
