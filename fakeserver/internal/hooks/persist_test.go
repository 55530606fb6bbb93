package hooks

import (
	"errors"
	"fmt"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/clock"
)

// TestRestoreTrimsDeletedWithoutNotes (issue 26): records holding more
// than MaxDeletedPerAccount deleted subscriptions of one account (an
// older build forgot the oldest without a record) restore the last
// deleted ones, as memory remembered them, and the restore itself notes
// none as forgotten (only what the server does after it is written).
// Records with a pass time keep every deleted one whatever the clock;
// records without one (an older build's) drop those past HistoryWindow
// and count the pass as run now.
func TestRestoreTrimsDeletedWithoutNotes(t *testing.T) {
	c := clock.NewVirtual(boundsStart)
	h := New(Config{Clock: c, Timeout: time.Hour, Transport: hang{arrived: make(chan struct{}, 1)}})
	defer h.Close()
	h.Track()
	old := boundsStart.Add(-HistoryWindow - time.Hour)
	var recs Changes
	for i := range MaxDeletedPerAccount + 2 {
		r := SubRecord{Network: confpay.NetworkTest, ID: fmt.Sprintf("wh_%d", i), Acct: "acct_a", CreatedAt: old, Seq: uint64(i + 1),
			Deleted: &old, DeletedSeq: uint64(i + 1)}
		recs.Subs = append(recs.Subs, r)
	}
	never := recs
	never.Pruned = []Pruned{{Network: confpay.NetworkTest}}
	if err := h.Restore(confpay.NetworkTest, never, nil); err != nil {
		t.Fatal(err)
	}
	var got Changes
	h.TakeChangesInto(&got, nil)
	if !got.Empty() {
		t.Errorf("the restore noted changes: %+v", got)
	}
	for i, want := range map[int]error{0: ErrNoWebhook, 1: ErrNoWebhook, 2: nil, MaxDeletedPerAccount + 1: nil} {
		if err := h.Unsubscribe(confpay.NetworkTest, "acct_a", fmt.Sprintf("wh_%d", i)); !errors.Is(err, want) {
			t.Errorf("deleting wh_%d again after the restore: %v, want %v", i, err, want)
		}
	}
	if err := h.Restore(confpay.NetworkTest, recs, nil); err != nil { // an older build's
		t.Fatal(err)
	}
	if err := h.Unsubscribe(confpay.NetworkTest, "acct_a", "wh_2"); !errors.Is(err, ErrNoWebhook) {
		t.Errorf("deleting wh_2 again after an older build's records: %v, want ErrNoWebhook (past the window)", err)
	}
	h.mu.Lock()
	last := h.books[confpay.NetworkTest].lastPrune
	h.mu.Unlock()
	if !last.Equal(boundsStart) {
		t.Errorf("an older build's records: the last pass at %v, want the restore's %v", last, boundsStart)
	}
}
