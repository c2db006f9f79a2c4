package redis

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/targets"
)

// An attached Redis is one endpoint whose scheme agrees with the
// credentials, of the plain redis target only.
func TestAttach(t *testing.T) {
	tlsOn := &targets.Credentials{TLS: true, Password: "pw"}
	at, nodes, err := Target{}.Attach([]string{"rediss://10.0.0.1:6380"}, tlsOn)
	if err != nil || len(nodes) != 1 || nodes[0].Name != "s1" || nodes[0].Addr != "rediss://10.0.0.1:6380" || at.(Target).Creds != tlsOn {
		t.Fatalf("rediss: %+v, %v", nodes, err)
	}
	for _, c := range []struct {
		t     Target
		eps   []string
		creds *targets.Credentials
		want  string
	}{
		{Target{}, []string{"redis://10.0.0.1:6379"}, tlsOn, "say rediss://"},
		{Target{}, []string{"a:1", "b:2"}, nil, "give one endpoint, not 2"},
		{Target{NoPersistence: true}, []string{"a:1"}, nil, "use --target redis"},
		{Target{Everysec: true}, []string{"a:1"}, nil, "use --target redis"},
		{Target{}, []string{"http://a:1"}, nil, "this target takes redis, rediss"},
	} {
		if _, _, err := c.t.Attach(c.eps, c.creds); !errors.Is(err, targets.ErrBadConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v, want %q", c.t.Name(), c.eps, err, c.want)
		}
	}
}
