package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/record"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// JUnitFile is the run's verdict as JUnit XML, for CI systems that show
// test results.
const JUnitFile = "junit.xml"

// WriteJUnit writes junit.xml into the run directory: one test suite for the
// run, with the run's configuration as properties and one test case per
// checker of results.json, in its order, then one per record that judges
// the run (record.Verdicter: the belief check of a --recheck run), named by
// its key. An invalid checker or record is a <failure>,
// an unknown one an <error>; the suite counts them, so a CI system marks the
// run red exactly when fencecheck exits non-zero. When the run's verdict is
// worse than its checkers say (an interrupted run is unknown), a test case
// "verdict" carries it.
func WriteJUnit(run *store.Run, test store.TestInfo, res *store.Results) error {
	b, err := JUnit(test, res, run.Path(store.ReportFile))
	if err != nil {
		return err
	}
	return run.WriteFile(JUnitFile, b)
}

// JUnit returns the JUnit XML of a run; reportPath is named in the failure
// texts.
func JUnit(test store.TestInfo, res *store.Results, reportPath string) ([]byte, error) {
	cases, err := checkerCases(res)
	if err != nil {
		return nil, err
	}
	class := strings.Join([]string{"fencecheck", test.Target, test.Workload, test.Fencing}, ".")
	suite := junitSuite{Name: test.Name, Timestamp: test.Started.UTC().Format(time.RFC3339)}
	if d, err := time.ParseDuration(res.Elapsed); err == nil {
		suite.Time = fmt.Sprintf("%.3f", d.Seconds())
	}
	worst := checkers.Valid
	for _, c := range cases {
		tc := junitCase{Class: class, Name: c.name}
		text := c.message
		if c.name == checkers.NameLostUpdates && res.Result != nil {
			if sum := res.Result.Summary(); sum.Updates {
				text = lostText(sum, test.Concurrency)
			}
		}
		text += "\nreport: " + reportPath
		switch c.valid {
		case checkers.Invalid:
			tc.Failure = &junitProblem{Type: "invalid", Message: c.message, Text: text}
			suite.Failures++
		case checkers.Unknown:
			tc.Error = &junitProblem{Type: "unknown", Message: c.message, Text: text}
			suite.Errors++
		}
		worst = checkers.Compose(worst, c.valid)
		suite.Cases = append(suite.Cases, tc)
	}
	for _, r := range res.Records {
		v, ok := r.(record.Verdicter)
		if !ok || isNilRecord(r) {
			continue
		}
		verdict, why := v.Verdict()
		tc := junitCase{Class: class, Name: r.Key()}
		switch verdict {
		case record.Invalid:
			tc.Failure = &junitProblem{Type: "invalid", Message: why, Text: why + "\nreport: " + reportPath}
			suite.Failures++
			worst = checkers.Compose(worst, checkers.Invalid)
		case record.Unknown:
			tc.Error = &junitProblem{Type: "unknown", Message: why, Text: why + "\nreport: " + reportPath}
			suite.Errors++
			worst = checkers.Compose(worst, checkers.Unknown)
		}
		suite.Cases = append(suite.Cases, tc)
	}
	if v := res.Valid(); v != worst && checkers.Compose(worst, v) == v {
		msg := res.Note
		if msg == "" {
			msg = "the run's verdict is " + v.String()
		}
		tc := junitCase{Class: class, Name: "verdict"}
		p := &junitProblem{Type: v.String(), Message: msg, Text: msg + "\nreport: " + reportPath}
		if v == checkers.Invalid {
			tc.Failure = p
			suite.Failures++
		} else {
			tc.Error = p
			suite.Errors++
		}
		suite.Cases = append(suite.Cases, tc)
	}
	suite.Tests = len(suite.Cases)
	props := [][2]string{
		{"run_id", test.RunID.String()}, {"target", test.Target}, {"target_version", test.TargetVersion},
		{"workload", test.Workload}, {"fencing", test.Fencing}, {"nemesis", test.Nemesis},
		{"time_limit", dstr(test.TimeLimit)}, {"concurrency", fmt.Sprint(test.Concurrency)},
		{"nodes", fmt.Sprint(test.Nodes)}, {"ttl", dstr(test.TTL)}, {"seed", fmt.Sprint(test.Seed)},
		{"verdict", res.Valid().String()},
		{"fencecheck_version", test.Fencecheck}, {"fencecheck_revision", test.FencecheckRevision},
	}
	for _, p := range props {
		if p[1] != "" {
			suite.Properties = append(suite.Properties, junitProperty{Name: p[0], Value: p[1]})
		}
	}
	all := junitSuites{Name: "fencecheck", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors,
		Time: suite.Time, Suites: []junitSuite{suite}}
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	enc.Indent("", "  ")
	if err := enc.Encode(all); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// isNilRecord reports whether r is a typed nil (a kind whose record a run
// does not have).
func isNilRecord(r record.Record) bool {
	n, ok := r.(interface{ IsNil() bool })
	return r == nil || ok && n.IsNil()
}

// checkerCase is one checker of results.json.
type checkerCase struct {
	name, message string
	valid         checkers.Validity
}

// checkerCases reads the checkers of a result as results.json has them, in
// their order.
func checkerCases(res *store.Results) ([]checkerCase, error) {
	if res.Result == nil {
		return nil, nil
	}
	// The workload's part alone holds the checkers: the run's faults
	// (whose recorded figures an untrusted run can make large) stay out.
	b, err := json.Marshal(res.Result)
	if err != nil {
		return nil, err
	}
	var top struct {
		Checkers json.RawMessage `json:"checkers"`
	}
	if err := json.Unmarshal(b, &top); err != nil || len(top.Checkers) == 0 {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(top.Checkers))
	if _, err := dec.Token(); err != nil { // {
		return nil, err
	}
	var cases []checkerCase
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v struct {
			Valid   checkers.Validity `json:"valid"`
			Message string            `json:"message"`
			Error   string            `json:"error"`
		}
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		msg := v.Message
		if v.Error != "" {
			msg = strings.TrimSpace(msg + " (" + v.Error + ")")
		}
		cases = append(cases, checkerCase{name: fmt.Sprint(tok), message: msg, valid: v.Valid})
	}
	return cases, nil
}

// lostText lists the lost elements as the summary does, each client named
// by its worker of workers (checkers.LostElement's Describe).
func lostText(l checkers.Summary, workers int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d acknowledged elements lost", l.Lost, l.Acknowledged)
	const most = 20
	for i, e := range l.Losses {
		if i == most {
			fmt.Fprintf(&b, "\n... and %d more", len(l.Losses)-most)
			break
		}
		b.WriteString("\n" + e.Describe(workers))
	}
	return b.String()
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr,omitempty"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Time       string          `xml:"time,attr,omitempty"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Class   string        `xml:"classname,attr"`
	Name    string        `xml:"name,attr"`
	Failure *junitProblem `xml:"failure,omitempty"`
	Error   *junitProblem `xml:"error,omitempty"`
}

type junitProblem struct {
	Type    string `xml:"type,attr"`
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}
