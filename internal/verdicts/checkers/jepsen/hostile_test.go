package jepsen

import (
	"io"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// allocated returns the bytes fn allocates and the CPU time it takes (the
// process's, user and system: the package's tests run one at a time). CPU
// time, not wall time: a parse that went quadratic takes more of it however
// idle or loaded the machine, while the wall clock measures the machine's
// other work too.
func allocated(fn func()) (uint64, time.Duration) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := cpuTime()
	fn()
	took := cpuTime() - start
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, took
}

// cpuTime is the CPU time (user and system) this process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Hostile lines are errors naming the file and line, read within bounded
// time and memory: 10 MB of nesting on a line (it once overflowed the Go
// stack), nesting deeper than maxDepth within maxLine (400 KB of it once
// took 500 MB), and a 20 MB line.
func TestHostileLines(t *testing.T) {
	const kvOK = `{:process 0, :type :invoke, :f :get, :key "1", :value nil}`
	const logOK = "INFO  jepsen.util - 0\t:invoke\t:read\tnil"
	// Under maxLine, far over maxDepth; the map counts as a level.
	deep := strings.Repeat("[", 900<<10)
	cases := []struct {
		name  string
		parse func(io.Reader, string) error
		in    string
		want  string
	}{
		{"kv: 10 MB of nesting", kvParse, "{:process " + strings.Repeat("[", 10<<20) + "\n", "h:1: line longer than 1048576 bytes"},
		{"log: 10 MB of nesting", logParse, logOK + "\n" + "INFO  jepsen.util - 1\t:invoke\t:cas\t" + strings.Repeat("[", 10<<20), "h:2: line longer than 1048576 bytes"},
		{"kv: nesting deeper than the limit", kvParse, kvOK + "\n{:process 0, :value " + deep + "}\n", "h:2: column 84: vectors and maps nested more than 64 deep"},
		{"kv: a map key nested too deep", kvParse, "{" + strings.Repeat("{", 70) + "\n", "h:1: column 65: vectors and maps nested more than 64 deep"},
		{"log: nesting deeper than the limit", logParse, "INFO  jepsen.util - 1\t:invoke\t:cas\t" + deep, "h:1: jepsen.util line: column 100: vectors and maps nested more than 64 deep"},
		{"kv: a 20 MB line", kvParse, kvOK + "\n" + strings.Replace(kvOK, ":process 0", ":process 1", 1) + "\n" + `{:process 0, :value "` + strings.Repeat("x", 20<<20) + `"}` + "\n", "h:3: line longer than 1048576 bytes"},
		{"log: a 20 MB line", logParse, logOK + "\n" + strings.Repeat("y", 20<<20) + "\n", "h:2: line longer than 1048576 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			alloc, took := allocated(func() { err = c.parse(strings.NewReader(c.in), "h") })
			checkErr(t, err, c.want)
			t.Logf("%d bytes of input: %q in %s of CPU time, %d KB allocated", len(c.in), err.Error()[:min(len(err.Error()), 100)], took, alloc>>10)
			// The limits are 1 MiB a line and 64 levels: a few MB of
			// buffers and values at most, whatever the input's size.
			if alloc > 32<<20 {
				t.Errorf("parsing allocated %d MB, want under 32 MB", alloc>>20)
			}
			if took > 5*time.Second {
				t.Errorf("parsing took %s of CPU time, want well under 5s", took)
			}
		})
	}
}

func kvParse(r io.Reader, name string) error {
	_, err := ParseKV(r, name)
	return err
}

func logParse(r io.Reader, name string) error {
	_, err := ParseRegisterLog(r, name)
	return err
}

// Values quoted in error messages are cut: a megabyte-long value does not
// make a megabyte-long message.
func TestErrorsQuoteLittle(t *testing.T) {
	long := strings.Repeat("z", 100<<10)
	for _, c := range []struct {
		name  string
		parse func(io.Reader, string) error
		in    string
		want  string
	}{
		{"long key", kvParse, `{:process 0, :type :invoke, :f :put, :key [` + long + `], :value "v"}`, "h:1: "},
		{"long string value", kvParse, `{:process 0, :type :invoke, :f :put, :key "k", :value "v"}` + "\n" + `{:process 0, :type :ok, :f :put, :key "` + long + `", :value "v"}`, `h:2: process 0 completes :put on key "zzz`},
		{"long symbol", kvParse, `{:process ` + long + `}`, `h:1: column 11: unsupported "zzz`},
		{"long keyword", kvParse, `{:process 0, :type :` + long + `}`, "h:1: type :zzz"},
		{"long number", logParse, "INFO  jepsen.util - 1\t:invoke\t:write\t9" + strings.Repeat("9", 100<<10), "h:1: jepsen.util line: column 38: \"999"},
		{"long write value", logParse, "INFO  jepsen.util - 1\t:invoke\t:write\t[" + strings.Repeat("1 ", 50<<10) + "]", "h:1: :write of [1 1 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.parse(strings.NewReader(c.in), "h")
			checkErr(t, err, c.want)
			if n := len(err.Error()); n > 400 {
				t.Errorf("a message of %d bytes: %.200s...", n, err)
			}
			if !strings.Contains(err.Error(), "…") {
				t.Errorf("message %q does not say it was cut", err)
			}
		})
	}
}
