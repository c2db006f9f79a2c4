package cli

import "flag"

// isList says whether a matrix flag's value takes a list, one value a time
// (experiment.ForMatrix).
func isList(v flag.Value) bool {
	switch v.(type) {
	case *listFlag, *multiFlag, *knobList, boolKnobList:
		return true
	}
	return false
}
