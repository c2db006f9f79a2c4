package history

import (
	"encoding/json"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"
)

// This file reads the fault records of runs recorded before typed records:
// every figure a string in "params", read by name. It is the one place that
// reads a fault's figures by name; everything else reads FaultValue's
// fields, and the fault's figures through its record type.

// fromParams fills v's record from the params of an earlier run, and keeps
// them in Recorded. The figures common to every fault go to their fields
// ("down", a kill's older name for its hold, to Hold); every other param
// becomes a figure of the same name, a number when it reads as one, with
// these exceptions: "cut off from" (partition:...:client-cut) is the list
// cut_off_from, and a figure that could not be measured ("unobserved: ...",
// "uncounted: ...", "unmeasured: ...") is the figure named by the word, with
// the reason. A common figure that does not read as its type is left out of
// the record (and shown as recorded).
func (v *FaultValue) fromParams(params map[string]string) {
	v.Recorded = maps.Clone(params)
	v.Hold, v.Holder, v.Health, v.Replay, v.Figures = 0, nil, Health{}, "", nil
	figures := map[string]any{}
	holder := func() *Aim {
		if v.Holder == nil {
			v.Holder = &Aim{}
		}
		return v.Holder
	}
	duration := func(s string, to *Duration) {
		if d, err := time.ParseDuration(s); err == nil {
			*to = Duration(d)
		}
	}
	var process, token bool
	for k, p := range params {
		switch k {
		case "hold", "down":
			duration(p, &v.Hold)
		case "process":
			var pr Process
			if pr.UnmarshalJSON([]byte(p)) == nil {
				holder().Process, process = pr, true
			}
		case "token":
			if t, err := strconv.ParseInt(p, 10, 64); err == nil {
				holder().Token, token = &t, true
			}
		case "hit":
			if b, err := strconv.ParseBool(p); err == nil {
				holder().Hit = &b
			}
		case "phase":
			holder().Phase = p
		case "ttl":
			duration(p, &holder().TTL)
		case "lease":
			duration(p, &holder().Lease)
		case "stop_took":
			var d Duration
			duration(p, &d)
			holder().StopTook = &d
		case "healthy_before":
			if e, ok := strings.CutPrefix(p, "no: "); ok {
				v.Health.BeforeError = e
			} else {
				duration(strings.TrimPrefix(p, "after "), &v.Health.Before)
			}
		case "healthy_after":
			if e, ok := strings.CutPrefix(p, "no: "); ok {
				v.Health.AfterError = e
			} else {
				duration(p, &v.Health.After)
			}
		case "replay":
			v.Replay = p
		case "cut off from":
			figures["cut_off_from"] = strings.Split(p, ",")
		default:
			k, f := figureV0(k, p)
			figures[k] = f
		}
	}
	if v.Holder != nil && !process && (token || v.Holder.Hit != nil) {
		// A holder's figures without its process: not a holder the
		// record can name.
		v.Holder = nil
	}
	if len(figures) > 0 {
		v.Figures, _ = json.Marshal(figures)
	}
}

// unmeasuredV0 are the prefixes an earlier run wrote in place of a figure it
// could not measure; the record names the reason by the prefix's word.
var unmeasuredV0 = []string{"unobserved", "uncounted", "unmeasured"}

// maxNumberV0 is the longest param read as a number; a float64 written by
// strconv takes at most 24 bytes.
const maxNumberV0 = 64

// figureV0 is an earlier run's param k as a figure: its name and value.
func figureV0(k, p string) (string, any) {
	for _, word := range unmeasuredV0 {
		if reason, ok := strings.CutPrefix(p, word+": "); ok {
			return word, reason
		}
	}
	if len(p) > maxNumberV0 {
		// Not a number: and strconv's error would copy the whole
		// param (a hostile run's can be megabytes) for each try.
		return k, p
	}
	if n, err := strconv.ParseInt(p, 10, 64); err == nil {
		return k, n
	}
	if f, err := strconv.ParseFloat(p, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) && !strings.ContainsAny(p, "xXpP_") {
		return k, f
	}
	return k, p
}
