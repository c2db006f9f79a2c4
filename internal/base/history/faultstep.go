package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// FaultStep is one fault of a recorded schedule: what a replay injects again
// (nemesis.Recorded reads it from a history; nemesis.Schedule replays it),
// and what an experiment file's "schedule" lists (docs/experiments.md). In
// a file:
//
//	{"fault":"pause-holder","after":"3.2s","hold":"5.583s","role":"holder","nodes":["w1"]}
type FaultStep struct {
	// Fault is the fault's name with its scope ("pause-holder",
	// "kill:leader"), as the nemesis table parses it.
	Fault string
	// After is the quiet time before the fault: from the previous fault's
	// stop (for the first, from the first event of the history: the start
	// of the clients and of the schedule) until the fault was injected,
	// or, for a fault aimed at the holder, until its holder reached its
	// failpoint (its last phase before the fault began). A replay waits
	// After, then injects: a holder fault takes the next client to reach
	// its failpoint from then on.
	After time.Duration
	// Hold is how long the fault was held (its record's hold); 0 when
	// the history does not say, and the fault draws it.
	Hold time.Duration
	// Role is "holder" or "leader" for a fault aimed at a role (the
	// nemesis's RoleHolder, RoleLeader), "" for one whose nodes were
	// picked at random (or fixed: :resource).
	Role string
	// Nodes are the nodes the fault hit in the recorded run.
	Nodes []string
}

// Roles a step may be aimed at (nemesis.RoleHolder, nemesis.RoleLeader).
var faultStepRoles = []string{"", "holder", "leader"}

// String is the step in words: "pause-holder on the holder (was w1) after
// 3.2s, held 5.583s".
func (s FaultStep) String() string {
	on := strings.Join(s.Nodes, ",")
	if s.Role != "" {
		on = fmt.Sprintf("the %s (was %s)", s.Role, on)
	}
	hold := "held as drawn"
	if s.Hold > 0 {
		hold = "held " + s.Hold.String()
	}
	return fmt.Sprintf("%s on %s after %s, %s", s.Fault, on, s.After.Round(time.Millisecond), hold)
}

// MaxStepDuration bounds a step's after and hold, as spec.MaxDuration
// bounds every duration of a run: a week.
const MaxStepDuration = Duration(7 * 24 * time.Hour)

// faultStepJSON is FaultStep's JSON form: durations as Go writes them.
type faultStepJSON struct {
	Fault string    `json:"fault"`
	After *Duration `json:"after"`
	Hold  Duration  `json:"hold,omitempty"`
	Role  string    `json:"role,omitempty"`
	Nodes []string  `json:"nodes,omitempty"`
}

// MarshalJSON writes the step as a file holds it.
func (s FaultStep) MarshalJSON() ([]byte, error) {
	after := Duration(s.After)
	return json.Marshal(faultStepJSON{Fault: s.Fault, After: &after, Hold: Duration(s.Hold), Role: s.Role, Nodes: s.Nodes})
}

// UnmarshalJSON reads what MarshalJSON writes, and checks it: a fault
// named, an after given, no negative duration, a known role, no other
// field.
func (s *FaultStep) UnmarshalJSON(b []byte) error {
	var j faultStepJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("a step is {fault, after, hold, role, nodes}: %w", err)
	}
	switch {
	case j.Fault == "":
		return fmt.Errorf("a step names its fault (\"fault\": \"pause-holder\")")
	case j.After == nil:
		return fmt.Errorf("step %s: \"after\" (the quiet time before it, such as \"3s\") is missing", j.Fault)
	case *j.After < 0 || j.Hold < 0:
		return fmt.Errorf("step %s: a negative duration", j.Fault)
	case *j.After > MaxStepDuration || j.Hold > MaxStepDuration:
		return fmt.Errorf("step %s: after %s, hold %s: each at most %s", j.Fault, j.After.D(), j.Hold.D(), time.Duration(MaxStepDuration))
	}
	known := false
	for _, r := range faultStepRoles {
		known = known || j.Role == r
	}
	if !known {
		return fmt.Errorf("step %s: role %q: want \"holder\", \"leader\" or none", j.Fault, j.Role)
	}
	*s = FaultStep{Fault: j.Fault, After: j.After.D(), Hold: j.Hold.D(), Role: j.Role, Nodes: j.Nodes}
	return nil
}
