package nemesis

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// Tell says a fault's record in words, as a story and a report print it:
// how long it held, the lock holder it was aimed at (named by client, with
// its token when it had one), the fault's own figures read through its
// record type, and how the cluster served around it; for example
// "held 2.1s; the holder w1 (token 4) was frozen at its failpoint; the
// cluster served before it and again 35ms after the heal". client names a
// process as the report names clients (w1, w2, ...).
//
// ok is false when the record cannot be told by type: a run recorded
// before typed records (v.Recorded), a fault name this version does not
// parse, or figures its record type does not read. A reader then shows the
// record as recorded (v.Shown). A record with nothing to tell is "", true.
func Tell(v history.FaultValue, client func(history.Process) string) (words string, ok bool) {
	if v.Recorded != nil {
		return "", false
	}
	fs, err := Parse(v.Fault)
	if err != nil || len(fs) != 1 {
		return "", false
	}
	f := fs[0]
	var parts []string
	if v.Hold != 0 {
		word := "held"
		if d, ok := f.(downer); ok && d.down() {
			word = "down"
		}
		parts = append(parts, word+" "+span(v.Hold.D()))
	}
	if h := v.Holder; h != nil {
		parts = append(parts, holderWords(f, *h, client))
	}
	if t, ok := f.(recordTeller); ok {
		w, err := t.tellRecord(v)
		if err != nil {
			return "", false
		}
		parts = append(parts, w...)
	} else if len(v.Figures) > 0 {
		return "", false
	}
	parts = append(parts, healthWords(v.Health)...)
	if v.Replay != "" {
		parts = append(parts, "replays "+v.Replay)
	}
	return strings.Join(parts, "; "), true
}

// recordTeller is a fault with a record type of its own: it reads v's
// figures into that type and says them, in the order a reader wants them.
// An error (figures the type does not read) makes Tell give up.
type recordTeller interface {
	tellRecord(v history.FaultValue) ([]string, error)
}

// holderVerber is a fault aimed at the lock holder that says what it did
// to it ("frozen", "killed"); others say "caught".
type holderVerber interface {
	holderVerb() string
}

// downer is a fault whose hold is how long its nodes stay down (kill,
// kill-holder): "down 2s", not "held 2s".
type downer interface {
	down() bool
}

// decodeRecord reads v's figures into a fault's record type R.
func decodeRecord[R any](v history.FaultValue) (R, error) {
	var rec R
	err := v.DecodeFigures(&rec)
	return rec, err
}

// holderWords says what the fault did to the holder it was aimed at.
func holderWords(f Fault, h history.Aim, client func(history.Process) string) string {
	who := "the holder " + client(h.Process)
	if h.Token != nil && *h.Token != 0 {
		// Token 0 is none (a lock without tokens), as the token
		// checker counts it.
		who += fmt.Sprintf(" (token %d)", *h.Token)
	}
	verb := "caught"
	if hv, ok := f.(holderVerber); ok {
		verb = hv.holderVerb()
	}
	where := "at its failpoint"
	if h.Phase != "" && h.Phase != PhaseFailpoint {
		where = h.Phase
	}
	var s string
	switch {
	case h.Hit == nil:
		s = fmt.Sprintf("aimed at %s %s", who, where)
	case *h.Hit:
		s = fmt.Sprintf("%s was %s %s", who, verb, where)
	default:
		s = fmt.Sprintf("%s had left its failpoint before the fault was in place", who)
	}
	if h.StopTook != nil {
		s += fmt.Sprintf(" (SIGSTOP took %s)", span(h.StopTook.D()))
	}
	if h.Lease != 0 {
		s += fmt.Sprintf("; its lease %s", span(h.Lease.D()))
		if h.TTL != 0 && h.TTL != h.Lease {
			s += fmt.Sprintf(" (TTL %s)", span(h.TTL.D()))
		}
	} else if h.TTL != 0 {
		s += fmt.Sprintf("; TTL %s", span(h.TTL.D()))
	}
	return s
}

// healthWords says how the cluster served before the fault and after its
// heal.
func healthWords(h history.Health) []string {
	var out []string
	if h.BeforeError != "" {
		out = append(out, "the cluster did not serve before it: "+h.BeforeError)
	}
	switch {
	case h.AfterError != "":
		out = append(out, "the cluster did not serve after the heal: "+h.AfterError)
	case h.After != 0 && h.Before != 0 && h.BeforeError == "":
		out = append(out, "the cluster served before it and again "+span(h.After.D())+" after the heal")
	case h.After != 0:
		out = append(out, "the cluster served again "+span(h.After.D())+" after the heal")
	case h.Before != 0 && h.BeforeError == "":
		out = append(out, "the cluster served before it")
	}
	return out
}

// span is a duration as the words print it: to 10 ms from a second up,
// else to the millisecond ("5.58s", "35ms").
func span(d time.Duration) string {
	if d >= time.Second || d <= -time.Second {
		return d.Round(10 * time.Millisecond).String()
	}
	if d >= time.Millisecond || d <= -time.Millisecond {
		return d.Round(time.Millisecond).String()
	}
	return d.String()
}

// signedSpan is span with its sign ("+6s", "-1.5s").
func signedSpan(d time.Duration) string { return plus(d, span(d)) }

// plus is s, d written, with a "+" when d is not negative.
func plus(d time.Duration, s string) string {
	if d >= 0 {
		return "+" + s
	}
	return s
}

// factor writes a rate or a multiple to three significant digits ("1.5",
// "0.253").
func factor(x float64) string { return strconv.FormatFloat(x, 'g', 3, 64) }

// percent writes a share of one as a percentage ("1.3%").
func percent(x float64) string { return strconv.FormatFloat(100*x, 'g', 3, 64) + "%" }

// subject names the fault's nodes: "w2", or "n1, n2".
func subject(v history.FaultValue) string {
	if len(v.Nodes) == 0 {
		return "the process"
	}
	return strings.Join(v.Nodes, ", ")
}

// packetWords says what a packet rule counted: dropped packets, or why
// they were not counted.
func packetWords(dropped *int, uncounted string) []string {
	switch {
	case dropped != nil:
		return []string{fmt.Sprintf("%d %s dropped", *dropped, plural(*dropped, "packet"))}
	case uncounted != "":
		return []string{"dropped packets not counted: " + uncounted}
	}
	return nil
}

// plural is word for n of them ("packet", "packets").
func plural[N int | int64](n N, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
