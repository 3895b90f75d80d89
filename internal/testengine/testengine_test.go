package testengine

import (
	"testing"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
)

// TestPublicLoadsTheWholeCapture: the sample capture loads to the end with
// its two INVITE dialogs and the node name given.
func TestPublicLoadsTheWholeCapture(t *testing.T) {
	c := Public(t, engine.Config{Node: "n1"}, "sip-rtp-g711.pcap")
	st := c.Status()
	if !st.Complete || st.Loading {
		t.Errorf("complete %v loading %v, want a whole, finished load", st.Complete, st.Loading)
	}
	if n := len(c.Dialogs().Summaries(dialog.ByCreated)); n != 2 {
		t.Errorf("%d dialogs, want 2", n)
	}
}
