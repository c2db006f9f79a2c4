package spec

import (
	"encoding/json"
	"flag"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// Every field of Spec is one knob's, and no two knobs share a field or a
// flag or a test.json key: the table is the one place a knob is declared.
func TestEveryFieldIsOneKnob(t *testing.T) {
	var s Spec
	base := uintptr(unsafe.Pointer(&s))
	owner := map[uintptr]string{}
	flags, keys := map[string]bool{}, map[string]bool{}
	for _, k := range Knobs {
		v := reflect.ValueOf(k.field(&s)).Field(0) // the value's pointer
		off := v.Pointer() - base
		if prev, dup := owner[off]; dup {
			t.Errorf("--%s and --%s share a field", prev, k.Flag)
		}
		owner[off] = k.Flag
		if flags[k.Flag] || (k.Key != "" && keys[k.Key]) {
			t.Errorf("--%s: flag or key %q given twice", k.Flag, k.Key)
		}
		flags[k.Flag], keys[k.Key] = true, true
		if k.Help == "" {
			t.Errorf("--%s has no help", k.Flag)
		}
	}
	// An embedded struct's fields are Spec's (WorkerKnobs): each is a
	// knob's, at its offset in Spec.
	var walk func(st reflect.Type, at uintptr)
	walk = func(st reflect.Type, at uintptr) {
		for i := 0; i < st.NumField(); i++ {
			f := st.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type, at+f.Offset)
				continue
			}
			if _, ok := owner[at+f.Offset]; !ok {
				t.Errorf("Spec.%s is no knob's field", f.Name)
			}
		}
	}
	walk(reflect.TypeOf(s), 0)
}

// A Spec with every knob set goes through test.json and through the
// command line and comes back the same.
func TestRoundTrips(t *testing.T) {
	delay, mem := 3*time.Second, uint64(6<<30)
	s := Spec{Target: "consul", Version: "1.14.11", Recipe: "session", Workload: "lock-append",
		Resource: []string{"postgres", "proxy"}, Fencing: "postgres=token,proxy=none", SideWriter: true,
		Image: map[string]string{"target": "my/consul:1"}, Nemesis: "kill:leader,pause-holder:x2", NemesisInterval: 2 * time.Second,
		Seed: 42, TimeLimit: 45 * time.Second, Nodes: 5,
		WorkerKnobs: WorkerKnobs{AuditLog: true, Concurrency: 7, Locks: 3, Keys: 4, ReadMode: "consistent",
			Work: 300 * time.Millisecond, Margin: time.Second, AcquireTimeout: time.Minute},
		TTL: 10 * time.Second, LockDelay: &delay, RPCTimeout: 40 * time.Second, OpTimeout: 3 * time.Minute, ReadyTimeout: 90 * time.Second,
		CheckTimeout: time.Minute, CheckMemory: &mem, Name: "n"}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Spec
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	// --audit-log is recorded beside the Spec (test.json's "audit_log"
	// names the log's resource): store.TestInfo reads it back.
	back.AuditLog = s.AuditLog
	if !reflect.DeepEqual(back, s) {
		t.Errorf("through JSON %s:\n got %+v\nwant %+v", b, back, s)
	}
	args := s.Args()
	p, err := Parse(args)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Args(), args) {
		t.Errorf("through the command line: %q, want %q", p.Args(), args)
	}
	if args[len(args)-1] != "42" || args[len(args)-2] != "--seed" {
		t.Errorf("the seed is not last: %q", args)
	}
}

// test.json as the version before the knob table wrote it reads into the
// same knobs.
func TestReadsEarlierTestJSON(t *testing.T) {
	old := `{"run_id":"0000000b","name":"etcd-lock-append-token","target":"etcd","workload":"lock-append","fencing":"token",
	"nemesis":"pause-holder","nemesis_interval":"3s","time_limit":"30s","concurrency":5,"nodes":3,"ttl":"2s",
	"lock_delay":"0s","work":"250ms","margin":"500ms","acquire_timeout":"10s","op_timeout":"42.5s","rpc_timeout":"8s",
	"check_timeout":"1m0s","ready_timeout":"30s","seed":77,"version":"3.4.3","recipe":"lock-rpc"}`
	var s Spec
	if err := json.Unmarshal([]byte(old), &s); err != nil {
		t.Fatal(err)
	}
	if s.TTL != 2*time.Second || s.OpTimeout != 42500*time.Millisecond || s.Concurrency != 5 || s.Seed != 77 ||
		s.LockDelay == nil || *s.LockDelay != 0 || s.Version != "3.4.3" || s.Fencing != "token" {
		t.Errorf("read %+v", s)
	}
	if err := json.Unmarshal([]byte(`{"ttl":"two"}`), &s); err == nil || !strings.Contains(err.Error(), `ttl: "two" is not a value of --ttl`) {
		t.Errorf("a bad duration: %v", err)
	}
	if err := json.Unmarshal([]byte(`{"concurrency":"5"}`), &s); err == nil {
		t.Errorf("a count as a string: no error")
	}
}

// The bounds are checked in table order and named.
func TestCheckBounds(t *testing.T) {
	ok := Default()
	ok.TimeLimit, ok.TTL, ok.NemesisInterval, ok.AcquireTimeout, ok.RPCTimeout, ok.ReadyTimeout, ok.OpTimeout =
		time.Second, time.Second, time.Second, time.Second, time.Second, time.Second, time.Second
	if err := ok.CheckBounds(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		edit func(*Spec)
		want string
	}{
		{func(s *Spec) { s.Concurrency = 0 }, "--concurrency 0: at least 1"},
		{func(s *Spec) { s.Concurrency = 65 }, "--concurrency 65: at most 64"},
		{func(s *Spec) { s.Locks = 0 }, "--locks 0: at least 1"},
		{func(s *Spec) { s.TTL = -time.Second }, "--ttl must be positive, not -1s"},
		{func(s *Spec) { s.TTL = 2 * time.Hour }, "--ttl 2h0m0s: at most 1h0m0s"},
		{func(s *Spec) { s.RPCTimeout = time.Nanosecond }, "--rpc-timeout 1ns: at least 1ms"},
		{func(s *Spec) { s.TTL, s.OpTimeout = 0, 0 }, "--ttl"},
		{func(s *Spec) { s.KeepDataLimit = new(uint64) }, "--keep-data-limit must be positive, not 0"},
	} {
		s := ok
		tc.edit(&s)
		if err := s.CheckBounds(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want %q", err, tc.want)
		}
	}
}

// --keep-data takes its three words, as a flag and from test.json, and
// nothing else; its default is auto, with a limit of 256MiB.
func TestKeepData(t *testing.T) {
	s := Default()
	if s.KeepData != KeepAuto || s.KeepDataLimit == nil || *s.KeepDataLimit != 256<<20 {
		t.Fatalf("defaults: %q %v", s.KeepData, s.KeepDataLimit)
	}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s.Flags(fs, nil, nil)
	if err := fs.Parse([]string{"--keep-data", "always", "--keep-data-limit", "1GiB"}); err != nil || s.KeepData != KeepAlways || *s.KeepDataLimit != 1<<30 {
		t.Errorf("parsed %q %d, err %v", s.KeepData, *s.KeepDataLimit, err)
	}
	if err := fs.Parse([]string{"--keep-data", "sometimes"}); err == nil || !strings.Contains(err.Error(), "want one of auto, always, never") {
		t.Errorf("--keep-data sometimes: %v", err)
	}
	var r Spec
	if err := json.Unmarshal([]byte(`{"keep_data":"never","keep_data_limit":1024}`), &r); err != nil || r.KeepData != KeepNever || *r.KeepDataLimit != 1024 {
		t.Errorf("read %q %v, err %v", r.KeepData, r.KeepDataLimit, err)
	}
	if err := json.Unmarshal([]byte(`{"keep_data":"all"}`), &r); err == nil {
		t.Error(`keep_data "all" read without error`)
	}
}

// --check-memory's sizes: binary and decimal units, and what is refused.
func TestBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
	}{
		{"0", 0}, {"1048576", 1 << 20}, {"512B", 512}, {"6GiB", 6 << 30}, {"6 GiB", 6 << 30}, {"6gib", 6 << 30},
		{"1.5GiB", 3 << 29}, {"512MiB", 512 << 20}, {"4G", 4 << 30}, {"64k", 64 << 10}, {"2KiB", 2048},
		{"1GB", 1e9}, {"2.5MB", 2.5e6}, {"1kB", 1000}, {"1TiB", 1 << 40},
	} {
		if got, err := ParseBytes(c.in); err != nil || got != c.want {
			t.Errorf("%q: %d %v, want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "GiB", "-1GiB", "6 gigs", "1e9", "1.2.3GiB", "99999999999999999999", "20000000TiB", "0x10"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if FormatBytes(6<<30) != "6GiB" || FormatBytes(1000) != "1000" {
		t.Errorf("FormatBytes: %s %s", FormatBytes(6<<30), FormatBytes(1000))
	}
}

// --auth is a secret: it is parsed, but no recorded, replayed or shown form
// of a Spec holds it; a secret knob has no test.json key.
func TestSecretKnobShownNowhere(t *testing.T) {
	const pw = "hunter2-do-not-print"
	s := Default()
	s.Endpoints, s.Auth, s.AuthFile = []string{"redis://10.0.0.1:6379"}, "user:"+pw, ""
	if strings.Contains(strings.Join(s.Args(), " "), pw) {
		t.Errorf("Args hold the secret: %v", s.Args())
	}
	for _, r := range s.Rows() {
		if strings.Contains(r.Value, pw) {
			t.Errorf("report row --%s holds the secret", r.Flag)
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), pw) || !strings.Contains(string(b), `"endpoints":"redis://10.0.0.1:6379"`) {
		t.Errorf("test.json: %s", b)
	}
	for _, c := range []struct{ args, want []string }{
		{[]string{"--auth", "u:" + pw, "--auth=u:" + pw, "-auth", pw, "-auth=" + pw, "--target", "etcd"},
			[]string{"--auth", "REDACTED", "--auth", "REDACTED", "--auth", "REDACTED", "--auth", "REDACTED", "--target", "etcd"}},
		// --tls-server-name takes "--auth" as its value; the second
		// --auth is the flag.
		{[]string{"--tls-server-name", "--auth", "--auth", "runner:" + pw, "--work-cpu", "--side-writer=false", "-ttl=2s"},
			[]string{"--tls-server-name", "--auth", "--auth", "REDACTED", "--work-cpu", "--side-writer=false", "--ttl", "2s"}},
		// After the flags, arguments are kept, the secret among them not.
		{[]string{"--auth", pw, "--", "--auth", pw, "x"}, []string{"--auth", "REDACTED", "--", "--auth", "REDACTED", "x"}},
	} {
		var s Spec
		fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
		s.Flags(fs, nil, nil)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if red := Redact(fs, c.args); !slices.Equal(red, c.want) {
			t.Errorf("Redact(%q):\n%q, want\n%q", c.args, red, c.want)
		}
	}
	for _, k := range Knobs {
		if k.Secret && (k.Key != "" || k.Replay) {
			t.Errorf("secret knob --%s has a test.json key or is replayed", k.Flag)
		}
	}
}
