package nemesis

import "fmt"

// table lists every fault --nemesis can name. Adding a fault is one file and
// one row here.
var table = []entry{
	{
		Name: "pause-holder",
		Doc:  "SIGSTOP the lock holder's client inside its critical section for 1.5-3 leases, then SIGCONT",
		New:  noScope(PauseHolder{}),
	},
}

// noScope is the constructor of a fault that takes no :scope.
func noScope(f Fault) func(string) (Fault, error) {
	return func(scope string) (Fault, error) {
		if scope != "" {
			return nil, fmt.Errorf("%s takes no scope", f.Name())
		}
		return f, nil
	}
}
