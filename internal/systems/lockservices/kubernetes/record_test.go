package kubernetes

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// client-go's leader election tells a renewal from none by comparing the
// Lease's record, as JSON, with the one it saw last (observedRawRecord),
// and that record keeps renewTime to the second (metav1.Time). So renewals
// whose clock readings fall in one second look like no renewal at all: a
// holder whose wall clock gains less than a second per lease duration
// (clock-rate:client below 1 s / TTL) renews unseen, and the others take
// the Lease. docs/targets.md's clock-rate finding rests on this.
func TestRecordKeepsSeconds(t *testing.T) {
	at := time.Date(2026, 12, 2, 17, 0, 0, 100_000_000, time.UTC)
	raw := func(renew time.Time) string {
		// As LeaseLock writes a record and reads it back (Update, Get).
		spec := resourcelock.LeaderElectionRecordToLeaseSpec(&resourcelock.LeaderElectionRecord{
			HolderIdentity: "a", LeaseDurationSeconds: 2, RenewTime: metav1.Time{Time: renew}, AcquireTime: metav1.Time{Time: at}, LeaderTransitions: 3})
		rec := resourcelock.LeaseSpecToLeaderElectionRecord(&spec)
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if raw(at) != raw(at.Add(800*time.Millisecond)) {
		t.Errorf("renewals 0.8s apart in one second differ: %s", raw(at.Add(800*time.Millisecond)))
	}
	if raw(at) == raw(at.Add(time.Second)) {
		t.Errorf("renewals a second apart look alike")
	}
}
