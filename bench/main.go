// Command bench measures fencecheck end to end, the way a user runs it, and
// prints the figures docs/figures.md quotes as a Markdown table: image build time
// (cold and warm), and for each fencing mode over N runs the exit codes, the
// wall time of a run, operations per run, lost updates, fence rejections, the
// time to the first lost update and the checker's time. Medians throughout,
// all measured in one invocation.
//
//	go run ./bench -bin bin/fencecheck -runs 5 [-cold]
//	go run ./bench -bin bin/fencecheck -liveness [-runs 1] [-parallel 2] [-only TARGET]
//	go run ./bench -bin bin/fencecheck -clock-rate 0.1,0.2,0.5 [-runs 5] [-chart docs/clock-rate.svg]
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	f := benchFlags{
		bin:            flag.String("bin", "bin/fencecheck", "the fencecheck binary"),
		runs:           flag.Int("runs", 5, "runs per fencing mode"),
		limit:          flag.Duration("time-limit", 30*time.Second, "--time-limit of each run"),
		fencings:       flag.String("fencing", "none,token,cas", "fencing modes to run"),
		nemesis:        flag.String("nemesis", "pause-holder", "--nemesis of each run"),
		target:         flag.String("target", "etcd", "--target of each run"),
		workloadFlag:   flag.String("workload", "lock-append", "--workload of each run (lock-append, election)"),
		extra:          flag.String("args", "", "more flags for each run, space-separated (e.g. \"--ttl 10s --lock-delay 0\")"),
		cold:           flag.Bool("cold", false, "also measure a cold image build: remove fencecheck's images and build them all with empty Go caches (downloads the etcd and Consul modules again)"),
		findings:       flag.Bool("findings", false, "instead, run the scenarios behind the findings in docs/ once each and print their verdicts"),
		only:           flag.String("only", "", "with -findings: only the scenarios whose description contains this"),
		overhead:       flag.Bool("overhead", false, "instead, compare the harness-driven throughput with a bare client loop (same library, same concurrency, no faults)"),
		detection:      flag.Bool("detection", false, "instead, measure detection under load: both cores kept busy, -runs runs (default 20) per client fault, unfenced and token-fenced, random seeds"),
		profiles:       flag.String("profiles", "", "instead, run each of these targets (comma-separated, or \"all\") with its profile: no flag but --target, --fencing (-fencing, default none,token) and --seed 1..-runs, several at once with -parallel"),
		parallel:       flag.Int("parallel", 1, "with -profiles, -versions and -liveness: runs at once"),
		versions:       flag.String("versions", "", "instead, run etcd at each of these versions (comma-separated) under pause-holder: `run --target etcd --version V --fencing F --seed N`, F in -fencing (default none,token), N = 1..-runs, several at once with -parallel"),
		scenario:       flag.String("scenario", "", "instead, play this regression scenario -runs times (default 10) on each version of -versions: `run --scenario S --version V`"),
		recipe:         flag.String("recipe", "", "with -versions: the etcd --recipe"),
		rerun:          flag.Bool("rerun", false, "instead, measure reproduction: an invalid unfenced etcd pause-holder run, then fencecheck rerun of it with -runs re-runs"),
		liveness:       flag.Bool("liveness", false, "instead, measure liveness: every target under kill-holder and the kill of its leader, -runs seeds (default 1) a cell, -parallel at a time (-only: the targets whose name contains it)"),
		clientOverhead: flag.String("client-overhead", "", "instead, compare a client program's critical sections per second (this --client-dir) with -target's built-in recipe: no faults, alternating runs"),
		clockRate:      flag.String("clock-rate", "", "instead, run -workload (default election) on -target (default kubernetes) with the holder's clock (or a server's: -clock-scope server) at each of these rates (comma-separated: clock-rate:client:xR), -fencing (default none,term) and seeds 1..-runs; print the table and write the chart to -chart"),
		clockScope:     flag.String("clock-scope", "client", "with -clock-rate: whose clock, client (the next holder's) or server"),
		redraw:         flag.String("redraw", "", "with -clock-rate: run nothing, draw the chart of the table in this file (what an earlier -clock-rate printed)"),
		chart:          flag.String("chart", "docs/clock-rate.svg", "with -clock-rate: where the chart goes (\"\": none)"),
		handoverFlag:   flag.Bool("handover", false, "instead, measure how long the lock takes to pass on after each fault aimed at a holder (-nemesis, default partition-client) on -target, and whether the stale holder's write lands: -fencing (default none,token), seeds 1..-runs"),
		imagesBench:    flag.Bool("images", false, "instead, run etcd from fencecheck's image and from a FROM-scratch image (images scratch etcd) under -nemesis, -fencing (default none,token), seeds 1..-runs, -parallel at a time"),
	}
	flag.Parse()
	if err := f.run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// benchFlags are bench's flags.
type benchFlags struct {
	bin            *string
	runs           *int
	limit          *time.Duration
	fencings       *string
	nemesis        *string
	target         *string
	workloadFlag   *string
	extra          *string
	cold           *bool
	findings       *bool
	only           *string
	overhead       *bool
	detection      *bool
	profiles       *string
	parallel       *int
	versions       *string
	scenario       *string
	recipe         *string
	rerun          *bool
	liveness       *bool
	clientOverhead *string
	clockRate      *string
	clockScope     *string
	redraw         *string
	chart          *string
	handoverFlag   *bool
	imagesBench    *bool
}

// run runs what the flags ask for: one of the measurements that take the
// place of the default (-clock-rate, -images, ...), or the default, the
// fencing modes' runs.
func (f benchFlags) run() error {
	switch {
	case *f.clockRate != "":
		return f.runClockRate()
	case *f.imagesBench:
		return runImages(*f.bin, *f.nemesis, f.fencingsOr("none,token"), *f.runs, *f.parallel)
	case *f.profiles != "":
		return runProfiles(*f.bin, *f.profiles, f.fencingsOr("none,token"), *f.runs, *f.parallel)
	case *f.scenario != "":
		vs := *f.versions
		if vs == "" {
			vs = "3.4.3,3.6.16"
		}
		return runScenario(*f.bin, *f.scenario, vs, f.runsOr(10))
	case *f.handoverFlag:
		n := *f.nemesis
		if !isSet("nemesis") {
			n = "partition-client"
		}
		return runHandover(*f.bin, *f.target, n, f.fencingsOr("none,token"), *f.runs, *f.limit, strings.Fields(*f.extra))
	case *f.liveness:
		return runLiveness(*f.bin, f.runsOr(1), *f.limit, *f.only, *f.parallel)
	case *f.versions != "":
		return runVersions(*f.bin, *f.versions, *f.recipe, f.fencingsOr("none,token"), *f.runs, *f.parallel)
	case *f.rerun:
		return runRerun(*f.bin, *f.runs, *f.limit)
	case *f.clientOverhead != "":
		return runClientOverhead(*f.bin, *f.clientOverhead, *f.target, *f.runs, *f.limit)
	case *f.detection:
		return runDetection(*f.bin, f.runsOr(20), *f.limit, *f.only)
	case *f.overhead:
		return runOverhead(*f.bin, *f.runs, *f.limit)
	case *f.findings:
		return runFindings(*f.bin, *f.limit, *f.only)
	}
	return bench(*f.bin, *f.runs, *f.limit, strings.Split(*f.fencings, ","), *f.nemesis, *f.target, *f.workloadFlag, strings.Fields(*f.extra), *f.cold)
}

// fencingsOr is -fencing's modes when it was given, else def's.
func (f benchFlags) fencingsOr(def string) []string {
	if isSet("fencing") {
		def = *f.fencings
	}
	return strings.Split(def, ",")
}

// runsOr is -runs when it was given, else def.
func (f benchFlags) runsOr(def int) int {
	if isSet("runs") {
		return *f.runs
	}
	return def
}

// runClockRate is -clock-rate (or its -redraw): -workload (default
// election) on -target (default kubernetes), -fencing default none,term.
// A rate that is not a number exits 2.
func (f benchFlags) runClockRate() error {
	t, w := "kubernetes", "election"
	if isSet("target") {
		t = *f.target
	}
	if isSet("workload") {
		w = *f.workloadFlag
	}
	fs := f.fencingsOr("none,term")
	var rates []float64
	for _, r := range strings.Split(*f.clockRate, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(r), 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: -clock-rate:", err)
			os.Exit(2)
		}
		rates = append(rates, v)
	}
	if *f.redraw != "" {
		return redrawClockRate(*f.redraw, t, w, *f.clockScope, fs, strings.Fields(*f.extra), *f.chart)
	}
	return runClockRate(*f.bin, t, w, *f.clockScope, rates, fs, *f.runs, strings.Fields(*f.extra), *f.chart)
}

// runVerdict runs fencecheck with args and returns its exit code, which
// must be a verdict (0, 1 or 2: else an error with its output), and its
// wall time in seconds.
func runVerdict(bin string, args ...string) (code int, wall float64, err error) {
	start := time.Now()
	out, err := exec.Command(bin, args...).CombinedOutput()
	wall = time.Since(start).Seconds()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		return 0, wall, err
	}
	if code > 2 {
		return code, wall, fmt.Errorf("exit %d\n%s", code, out)
	}
	return code, wall, nil
}

// scratch returns bin's absolute path and a new temporary directory for a
// mode's runs (the caller removes it).
func scratch(bin, mode string) (string, string, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return "", "", err
	}
	dir, err := os.MkdirTemp("", "fencecheck-"+mode+"-")
	return abs, dir, err
}

// isSet reports whether the flag was given.
func isSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func bench(bin string, runs int, limit time.Duration, fencings []string, nemesis, target, workload string, extra []string, cold bool) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	fmt.Printf("fencecheck bench, %s\n\n", time.Now().UTC().Format(time.RFC3339))
	if cold {
		d, err := coldBuild(bin)
		if err != nil {
			return err
		}
		fmt.Printf("- cold image build (debootstrap, etcd and Consul from source with empty Go caches, worker): %.1fs\n", d.Seconds())
	}
	var warm []float64
	for i := 0; i < 3; i++ {
		start := time.Now()
		if out, err := exec.Command(bin, "images", "build").CombinedOutput(); err != nil {
			return fmt.Errorf("images build: %v\n%s", err, out)
		}
		warm = append(warm, time.Since(start).Seconds())
	}
	fmt.Printf("- warm image build (nothing changed): median %.2fs of 3\n\n", median(warm))

	dir, err := os.MkdirTemp("", "fencecheck-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Printf("%d runs per mode, `fencecheck run --target %s --workload %s --nemesis %s --time-limit %s --seed N %s`:\n\n",
		runs, target, workload, nemesis, limit, strings.Join(extra, " "))
	// oneRun's --workload is lock-append; a later one overrides it.
	extra = append([]string{"--workload", workload}, extra...)
	fmt.Println("| fencing | exit codes | wall time | ops ok / fail / info | lost (of acknowledged) | fence rejections | first lost update | check |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, f := range fencings {
		var rs []runFigures
		for i := 1; i <= runs; i++ {
			r, err := oneRun(bin, dir, target, f, nemesis, extra, limit, uint64(i))
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "bench: %s run %d: exit %d, %.1fs, %d ok, lost %d, rejections %d\n", f, i, r.code, r.wall, r.ok, r.lost, r.rejections)
			rs = append(rs, r)
		}
		printRow(f, rs)
	}
	return nil
}

type runFigures struct {
	code           int
	wall           float64
	ok, fail, info int
	lost, acked    int
	rejections     int
	firstLost      float64 // -1: none
	check          float64
	// aimed, hit and missed count the faults aimed at a critical section.
	aimed, hit, missed int
	faults             int
}

// oneRun runs fencecheck once and reads its figures from results.json.
// nemesis "" and limit 0 leave --nemesis and --time-limit to their defaults
// (pause-holder, the target's profile).
func oneRun(bin, dir, target, fencing, nemesis string, extra []string, limit time.Duration, seed uint64) (runFigures, error) {
	res := filepath.Join(dir, fmt.Sprintf("%s-%d", fencing, seed))
	args := []string{"run", "--target", target, "--workload", "lock-append", "--fencing", fencing,
		"--seed", fmt.Sprint(seed), "--results", res, "--quiet"}
	if nemesis != "" { // "": the default, pause-holder
		args = append(args, "--nemesis", nemesis)
	}
	if limit > 0 { // 0: the target's profile's
		args = append(args, "--time-limit", limit.String())
	}
	args = append(args, extra...)
	r := runFigures{firstLost: -1}
	var err error
	if r.code, r.wall, err = runVerdict(bin, args...); err != nil {
		return r, fmt.Errorf("run %s seed %d: %w", fencing, seed, err)
	}
	var v struct {
		Checkers struct {
			Stats struct{ Ok, Fail, Info int }
		}
		LostUpdates struct {
			Acknowledged, Lost int
		} `json:"lost_updates"`
		FenceRejections   int    `json:"fence_rejections"`
		FirstLostUpdateNS *int64 `json:"first_lost_update_ns"`
		CheckTime         string `json:"check_time"`
		Faults            []any  `json:"faults"`
		FaultHits         *struct {
			Aimed, Hit, Missed int
		} `json:"fault_hits"`
	}
	b, err := os.ReadFile(filepath.Join(res, "latest", "results.json"))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return r, err
	}
	r.ok, r.fail, r.info = v.Checkers.Stats.Ok, v.Checkers.Stats.Fail, v.Checkers.Stats.Info
	r.lost, r.acked, r.rejections = v.LostUpdates.Lost, v.LostUpdates.Acknowledged, v.FenceRejections
	if v.FirstLostUpdateNS != nil {
		r.firstLost = time.Duration(*v.FirstLostUpdateNS).Seconds()
	}
	if d, err := time.ParseDuration(v.CheckTime); err == nil {
		r.check = d.Seconds()
	}
	r.faults = len(v.Faults)
	if h := v.FaultHits; h != nil {
		r.aimed, r.hit, r.missed = h.Aimed, h.Hit, h.Missed
	}
	return r, nil
}

func printRow(f string, rs []runFigures) {
	col := func(get func(runFigures) float64) []float64 {
		var out []float64
		for _, r := range rs {
			out = append(out, get(r))
		}
		return out
	}
	var codes []string
	for _, r := range rs {
		codes = append(codes, fmt.Sprint(r.code))
	}
	var firsts []float64
	for _, r := range rs {
		if r.firstLost >= 0 {
			firsts = append(firsts, r.firstLost)
		}
	}
	first := "none"
	if len(firsts) > 0 {
		first = fmt.Sprintf("median %.1fs (%d of %d runs)", median(firsts), len(firsts), len(rs))
	}
	fmt.Printf("| %s | %s | %.1fs | %.0f / %.0f / %.0f | %.0f (%.1f%%) | %.0f | %s | %.0fms |\n", f, strings.Join(codes, " "),
		median(col(func(r runFigures) float64 { return r.wall })),
		median(col(func(r runFigures) float64 { return float64(r.ok) })),
		median(col(func(r runFigures) float64 { return float64(r.fail) })),
		median(col(func(r runFigures) float64 { return float64(r.info) })),
		median(col(func(r runFigures) float64 { return float64(r.lost) })),
		median(col(func(r runFigures) float64 {
			if r.acked == 0 {
				return 0
			}
			return 100 * float64(r.lost) / float64(r.acked)
		})),
		median(col(func(r runFigures) float64 { return float64(r.rejections) })),
		first,
		1000*median(col(func(r runFigures) float64 { return r.check })))
}

// coldBuild removes every fencecheck image and builds this binary's images
// again with empty Go build and module caches.
func coldBuild(bin string) (time.Duration, error) {
	out, err := exec.Command(bin, "images", "list").Output()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		ref := ""
		switch {
		case len(fields) > 1 && fields[0] == "*":
			ref = fields[1]
		case len(fields) > 0 && strings.HasPrefix(fields[0], "fencecheck/"):
			ref = fields[0]
		}
		if ref == "" {
			continue
		}
		if o, err := exec.Command("docker", "rmi", ref).CombinedOutput(); err != nil {
			return 0, fmt.Errorf("docker rmi %s: %v: %s", ref, err, o)
		}
	}
	tmp, err := os.MkdirTemp("", "fencecheck-cold-")
	if err != nil {
		return 0, err
	}
	defer func() {
		exec.Command("chmod", "-R", "u+w", tmp).Run() // module cache files are read-only
		os.RemoveAll(tmp)
	}()
	cmd := exec.Command(bin, "images", "build")
	cmd.Env = append(os.Environ(), "GOCACHE="+filepath.Join(tmp, "cache"), "GOMODCACHE="+filepath.Join(tmp, "mod"))
	start := time.Now()
	if o, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("cold images build: %v\n%s", err, o)
	}
	return time.Since(start), nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// finding is one scenario behind a finding in docs/.
type finding struct {
	what string
	args []string
}

var findings = []finding{
	{"etcd, unfenced lock-append, pause-server:leader", []string{"--fencing", "none", "--nemesis", "pause-server:leader"}},
	{"etcd, unfenced lock-append, pause-server:all", []string{"--fencing", "none", "--nemesis", "pause-server:all"}},
	{"etcd, unfenced lock-append, kill:leader", []string{"--fencing", "none", "--nemesis", "kill:leader"}},
	{"etcd, unfenced lock-append, partition:leader", []string{"--fencing", "none", "--nemesis", "partition:leader"}},
	{"etcd, unfenced lock-append, partition:majorities-ring", []string{"--fencing", "none", "--nemesis", "partition:majorities-ring"}},
	{"etcd, unfenced lock-append, clock-skew:server", []string{"--fencing", "none", "--nemesis", "clock-skew:server"}},
	{"etcd, unfenced lock-append, netem:delay", []string{"--fencing", "none", "--nemesis", "netem:delay"}},
	{"etcd, unfenced lock-append, partition-client", []string{"--fencing", "none", "--nemesis", "partition-client"}},
	{"etcd, register, linearizable reads, partition:leader", []string{"--workload", "register", "--read-mode", "linearizable", "--nemesis", "partition:leader"}},
	{"etcd, register, serializable reads, partition:leader", []string{"--workload", "register", "--read-mode", "serializable", "--nemesis", "partition:leader"}},
	{"pg-advisory-pgbouncer, transaction pooling, unfenced, no fault", []string{"--target", "pg-advisory-pgbouncer", "--fencing", "none", "--nemesis", "none"}},
	{"pg-advisory, unfenced, partition-client", []string{"--target", "pg-advisory", "--fencing", "none", "--nemesis", "partition-client"}},
	{"zookeeper, Curator InterProcessMutex, unfenced, pause-holder", []string{"--target", "zookeeper", "--client-dir", "examples/clients/curator", "--fencing", "none"}},
	{"zookeeper, Curator InterProcessMutex, unfenced, partition-client:reset", []string{"--target", "zookeeper", "--client-dir", "examples/clients/curator", "--fencing", "none", "--nemesis", "partition-client:reset"}},
	// The zoo (docs/zoo.md): each library whose unfenced runs lost
	// updates there, under pause-holder.
	zooFinding("zookeeper", "kazoo"),
	zooFinding("zookeeper", "go-zookeeper"),
	zooFinding("etcd", "go-etcd"),
	zooFinding("etcd", "python-etcd3"),
	zooFinding("consul", "go-consul", "--time-limit", "45s"),
	zooFinding("consul", "python-consul", "--time-limit", "45s"),
	zooFinding("redis", "redis-py"),
	zooFinding("redis", "node-redis"),
	zooFinding("redis", "ruby-redis"),
	zooFinding("redis", "php-redis"),
	zooFinding("redlock", "go-redsync"),
	// docs/findings/consul-node-id-power-loss.md: no server restarts
	// (unknown, exit 2).
	{"power loss of Consul servers, token-fenced, kill:lose-unsynced (node-id empty after it)", []string{"--target", "consul", "--fencing", "token", "--nemesis", "kill:lose-unsynced"}},
	{"consul, register, default reads, partition:leader", consulRegister("default")},
	{"consul, register, consistent reads, partition:leader", consulRegister("consistent")},
	{"consul, register, stale reads, partition:leader", consulRegister("stale")},
}

// zooFinding is a zoo library's program (examples/clients/NAME) on its
// target, unfenced, under pause-holder.
func zooFinding(target, name string, extra ...string) finding {
	return finding{"zoo: " + target + ", " + name + ", unfenced, pause-holder",
		append([]string{"--target", target, "--client-dir", "examples/clients/" + name, "--fencing", "none", "--nemesis", "pause-holder"}, extra...)}
}

// consulRegister is the register workload on Consul with a read mode, under
// partitions of the leader long enough to matter (Consul's leases are 10 s
// at least; the partitions last 1 to 3 of its 21 s MaxLease).
func consulRegister(mode string) []string {
	return []string{"--target", "consul", "--ttl", "10s", "--lock-delay", "0", "--time-limit", "90s",
		"--workload", "register", "--read-mode", mode, "--nemesis", "partition:leader"}
}

// runFindings runs each finding's scenario once and prints a Markdown table.
func runFindings(bin string, limit time.Duration, only string) error {
	bin, dir, cleanup, err := workDir(bin, "fencecheck-findings-")
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Printf("fencecheck findings, %s; each `fencecheck run --target etcd --nemesis-interval 2s --time-limit %s --seed 1` plus (later flags win):\n\n", time.Now().UTC().Format(time.RFC3339), limit)
	fmt.Println("| scenario | flags | exit | verdict | ops ok / fail / info | lost (of acknowledged) |")
	fmt.Println("|---|---|---|---|---|---|")
	for i, f := range findings {
		if !strings.Contains(f.what, only) {
			continue
		}
		res := filepath.Join(dir, fmt.Sprint(i))
		args := append([]string{"run", "--target", "etcd", "--nemesis-interval", "2s", "--time-limit", limit.String(),
			"--seed", "1", "--results", res, "--quiet"}, f.args...)
		cmd := exec.Command(bin, args...)
		out, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			code = ee.ExitCode()
		case err != nil:
			return err
		}
		if code > 2 {
			return fmt.Errorf("%s: exit %d\n%s", f.what, code, out)
		}
		var v struct {
			Valid    any `json:"valid"`
			Checkers struct {
				Stats struct{ Ok, Fail, Info int }
			}
			LostUpdates *struct {
				Acknowledged, Lost int
			} `json:"lost_updates"`
		}
		b, err := os.ReadFile(filepath.Join(res, "latest", "results.json"))
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		lost := "-"
		if v.LostUpdates != nil {
			lost = fmt.Sprintf("%d (of %d)", v.LostUpdates.Lost, v.LostUpdates.Acknowledged)
		}
		fmt.Printf("| %s | `%s` | %d | %v | %d / %d / %d | %s |\n", f.what, strings.Join(f.args, " "), code, v.Valid,
			v.Checkers.Stats.Ok, v.Checkers.Stats.Fail, v.Checkers.Stats.Info, lost)
	}
	return nil
}

// workDir is bin made absolute (the runs change directory) and a new
// temporary directory for a measurement's runs, named by prefix, which
// cleanup removes.
func workDir(bin, prefix string) (abs, dir string, cleanup func(), err error) {
	if abs, err = filepath.Abs(bin); err != nil {
		return "", "", nil, err
	}
	if dir, err = os.MkdirTemp("", prefix); err != nil {
		return "", "", nil, err
	}
	return abs, dir, func() { os.RemoveAll(dir) }, nil
}
