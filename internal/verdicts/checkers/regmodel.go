package checkers

import (
	"fmt"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// The register model of one key. Unknown outcomes are Porcupine's usual
// encoding: an info write or cas returns at infinity, after every other
// operation of its key, so the search may linearize it anywhere after its
// call, where it takes effect, or at the very end, where nothing sees it.
// An info cas linearized where the value is not its old value does nothing.

// regState is a key's value as Porcupine's state. States are interned per
// key, so two states are equal exactly when they are the same pointer
// (Porcupine's default Equal) and a step never allocates; regNil is every
// key's nil.
type regState struct {
	id int32
	v  RegisterValue
}

var regNil = &regState{}

// regKind is what a step does.
type regKind uint8

const (
	regRead     regKind = iota // legal only if the state is want
	regWrite                   // the state becomes next
	regCAS                     // legal only if the state is want; it becomes next
	regMaybeCAS                // an info cas: if the state is want, it becomes next
)

// regStep is a Porcupine operation's input: all a step needs, decided when
// the key's operations are built.
type regStep struct {
	kind  regKind
	maybe bool  // an info write or cas
	pos   int32 // among the key's operations, for progress
	want  *regState
	next  *regState
	op    *RegisterOp
	index int // in the checked slice, for descriptions
}

func regStepFunc(state, input, _ any) (bool, any) {
	s, in := state.(*regState), input.(*regStep)
	switch in.kind {
	case regRead:
		return s == in.want, state
	case regWrite:
		return true, in.next
	case regCAS:
		if s == in.want {
			return true, in.next
		}
		return false, state
	default: // regMaybeCAS
		if s == in.want {
			return true, in.next
		}
		return true, state
	}
}

// registerModel is the model of one register key, initially nil.
var registerModel = porcupine.Model{
	Init: func() any { return regNil },
	Step: regStepFunc,
	Hash: func(s any) uint64 { return mix(uint64(s.(*regState).id)) },
	DescribeOperation: func(input, _ any) string {
		in := input.(*regStep)
		o := in.op
		switch {
		case o.F == RegisterRead:
			return "read() -> " + o.Value.String()
		case o.F == RegisterWrite && in.maybe:
			return "write(" + o.Value.String() + ") -> unknown"
		case o.F == RegisterWrite:
			return "write(" + o.Value.String() + ")"
		case in.maybe:
			return "cas(" + o.Old.String() + ", " + o.Value.String() + ") -> unknown"
		default:
			return "cas(" + o.Old.String() + ", " + o.Value.String() + ") -> ok"
		}
	},
	DescribeState:             func(s any) string { return s.(*regState).v.String() },
	DescribeOperationMetadata: registerMeta(Options{}.client),
}

// registerModelFor is registerModel with each operation's metadata naming
// its client as client does (Options.client).
func registerModelFor(client func(history.Process) string) porcupine.Model {
	m := registerModel
	m.DescribeOperationMetadata = registerMeta(client)
	return m
}

// registerMeta describes an operation's metadata for the visualization:
// `key "k3", w2, operation 17`.
func registerMeta(client func(history.Process) string) func(any) string {
	return func(m any) string {
		if m == nil {
			return ""
		}
		in := m.(*regStep)
		s := fmt.Sprintf("%s, operation %d", client(history.Process(in.op.Process)), in.index)
		if in.op.Key != "" {
			s = fmt.Sprintf("key %q, ", in.op.Key) + s
		}
		return s
	}
}

// buildRegister returns the Porcupine operations of one key's ops (idx).
// Info writes and cas (maybe) return at infinity: after every call and
// return of the key.
func buildRegister(ops []RegisterOp, idx []int32, maybe []bool, meta bool) []porcupine.Operation {
	states := map[RegisterValue]*regState{{}: regNil}
	state := func(v RegisterValue) *regState {
		s, ok := states[v]
		if !ok {
			s = &regState{id: int32(len(states)), v: v}
			states[v] = s
		}
		return s
	}
	var last int64
	for _, i := range idx {
		last = max(last, ops[i].Call)
		if !maybe[i] {
			last = max(last, ops[i].Return)
		}
	}
	steps := make([]regStep, len(idx))
	out := make([]porcupine.Operation, len(idx))
	for j, i := range idx {
		o := &ops[i]
		s := &steps[j]
		*s = regStep{maybe: maybe[i], pos: int32(j), op: o, index: int(i)}
		switch o.F {
		case RegisterRead:
			s.kind, s.want = regRead, state(o.Value)
		case RegisterWrite:
			s.kind, s.next = regWrite, state(o.Value)
		default:
			s.kind, s.want, s.next = regCAS, state(o.Old), state(o.Value)
			if s.maybe {
				s.kind = regMaybeCAS
			}
		}
		ret := o.Return
		if s.maybe {
			ret = last + 1
		}
		out[j] = porcupine.Operation{ClientId: max(o.Process, 0), Input: s, Call: o.Call, Return: ret}
		if meta {
			out[j].Metadata = s
		}
	}
	return out
}
