package worker

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
)

// Every knob the workers read (spec.WorkerKnobs) reaches a worker as it
// is: a setup with each of them set comes through the protocol's JSON
// the same, so a new knob needs no plumbing and cannot be dropped on the
// way (a field the JSON leaves out fails here).
func TestSetupCarriesEveryWorkerKnob(t *testing.T) {
	var k spec.WorkerKnobs
	v := reflect.ValueOf(&k).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64:
			if f.Type() == reflect.TypeOf(time.Duration(0)) {
				f.SetInt(int64(time.Duration(i+1) * time.Second))
			} else {
				f.SetInt(int64(i + 2))
			}
		case reflect.String:
			f.SetString("value-" + v.Type().Field(i).Name)
		default:
			t.Fatalf("WorkerKnobs.%s: a %s, which this test cannot set: teach it", v.Type().Field(i).Name, f.Kind())
		}
	}
	sent := Message{Kind: KindSetup, Protocol: Protocol, Setup: &Setup{Config: workloads.Config{WorkerKnobs: k, Lock: 1}}}
	b, err := json.Marshal(sent)
	if err != nil {
		t.Fatal(err)
	}
	var got Message
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Setup == nil || got.Setup.Config.WorkerKnobs != k {
		t.Errorf("the worker's setup lost knobs:\n sent %+v\n  got %+v\n(%s)", k, got.Setup, b)
	}
}
