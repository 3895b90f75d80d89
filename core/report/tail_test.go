package report

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/packet"
)

// sendSIP routes one SIP request or response of a Call-ID into c.
func sendSIP(c *engine.Capture, at time.Time, callID, startLine string, cseq int, method string) {
	a, b := netip.MustParseAddrPort("192.0.2.1:5060"), netip.MustParseAddrPort("192.0.2.2:5060")
	msg := fmt.Sprintf("%s\r\nVia: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK%s%d%s\r\nFrom: <sip:a@x>;tag=1\r\nTo: <sip:b@x>\r\n"+
		"Call-ID: %s\r\nCSeq: %d %s\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n", startLine, callID, cseq, method, callID, cseq, method)
	c.HandlePacket(&packet.Packet{TS: at, Src: a, Dst: b, Transport: packet.TransportUDP, Payload: []byte(msg)})
}

// stillClock makes every walk due at once (a walk that took no time).
func stillClock(tl *Tail) *Tail {
	tl.now = func() time.Time { return time.Time{} }
	return tl
}

func nextIDs(t *testing.T, tl *Tail, final bool) []string {
	t.Helper()
	var got []string
	if err := tl.Next(final, func(m MessageOrder) error {
		got = append(got, fmt.Sprintf("%s/%d", m.Msg.Msg.CallID, m.Msg.Index))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestTailWritesEachMessageOnceInTimeOrder: each Next writes the messages
// retained since the previous one, in capture time order across Call-IDs,
// never one twice.
func TestTailWritesEachMessageOnceInTimeOrder(t *testing.T) {
	c := engine.New(engine.Config{}, nil)
	t0 := time.Unix(1700000000, 0)
	tl := stillClock(NewTail(c.Dialogs(), nil))
	if got := nextIDs(t, tl, false); len(got) != 0 {
		t.Fatalf("empty store: %v", got)
	}
	sendSIP(c, t0.Add(2*time.Second), "b", "OPTIONS sip:b@x SIP/2.0", 1, "OPTIONS")
	sendSIP(c, t0, "a", "INVITE sip:b@x SIP/2.0", 1, "INVITE")
	if got, want := fmt.Sprint(nextIDs(t, tl, false)), "[a/0 b/0]"; got != want {
		t.Fatalf("first poll %s, want %s", got, want)
	}
	sendSIP(c, t0.Add(3*time.Second), "a", "SIP/2.0 180 Ringing", 1, "INVITE")
	sendSIP(c, t0.Add(4*time.Second), "b", "SIP/2.0 200 OK", 1, "OPTIONS")
	if got, want := fmt.Sprint(nextIDs(t, tl, false)), "[a/1 b/1]"; got != want {
		t.Fatalf("second poll %s, want %s", got, want)
	}
	if got := nextIDs(t, tl, true); len(got) != 0 {
		t.Fatalf("nothing new, yet %v", got)
	}
}

// TestTailWritesEveryMessageOfACallIDOnceKept: a Call-ID the selection
// refuses is asked again when it gains a message; once kept, its earlier
// messages are written too; the final poll asks again whatever changed.
func TestTailWritesEveryMessageOfACallIDOnceKept(t *testing.T) {
	c := engine.New(engine.Config{}, nil)
	t0 := time.Unix(1700000000, 0)
	asked := map[string]int{}
	keepA := false
	tl := stillClock(NewTail(c.Dialogs(), func(id string) bool {
		asked[id]++
		return id == "a" && keepA
	}))
	sendSIP(c, t0, "a", "INVITE sip:b@x SIP/2.0", 1, "INVITE")
	sendSIP(c, t0.Add(time.Second), "b", "OPTIONS sip:b@x SIP/2.0", 1, "OPTIONS")
	if got := nextIDs(t, tl, false); len(got) != 0 {
		t.Fatalf("nothing kept, yet %v", got)
	}
	if got := nextIDs(t, tl, false); len(got) != 0 || asked["a"] != 1 || asked["b"] != 1 {
		t.Fatalf("unchanged Call-IDs asked again: %v, asked %v", got, asked)
	}
	keepA = true
	sendSIP(c, t0.Add(2*time.Second), "a", "SIP/2.0 180 Ringing", 1, "INVITE")
	if got, want := fmt.Sprint(nextIDs(t, tl, false)), "[a/0 a/1]"; got != want {
		t.Fatalf("kept Call-ID wrote %s, want %s", got, want)
	}
	if got := nextIDs(t, tl, true); len(got) != 0 || asked["b"] != 2 {
		t.Fatalf("final poll: %v, b asked %d times, want 2", got, asked["b"])
	}
}

// TestTailWhileTheRunWritesWritesEachMessageOnce: polls racing the
// single writer (run under -race in CI) write every message exactly once:
// 50 Call-IDs of 4 messages each, polled while they arrive and once more
// at the end.
func TestTailWhileTheRunWritesWritesEachMessageOnce(t *testing.T) {
	c := engine.New(engine.Config{}, nil)
	t0 := time.Unix(1700000000, 0)
	tl := stillClock(NewTail(c.Dialogs(), nil))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			id := fmt.Sprintf("c%d", i)
			at := t0.Add(time.Duration(i) * time.Second)
			sendSIP(c, at, id, "OPTIONS sip:b@x SIP/2.0", 1, "OPTIONS")
			sendSIP(c, at.Add(time.Millisecond), id, "SIP/2.0 200 OK", 1, "OPTIONS")
			sendSIP(c, at.Add(2*time.Millisecond), id, "OPTIONS sip:b@x SIP/2.0", 2, "OPTIONS")
			sendSIP(c, at.Add(3*time.Millisecond), id, "SIP/2.0 200 OK", 2, "OPTIONS")
		}
	}()
	seen := map[string]int{}
	poll := func(final bool) {
		for _, id := range nextIDs(t, tl, final) {
			seen[id]++
		}
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			poll(false)
		}
	}
	poll(true)
	if len(seen) != 200 {
		t.Fatalf("%d distinct messages written, want 200", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("%s written %d times", id, n)
		}
	}
}

// TestTailWalksOnlyWhenTheStoreMovedAndTheWalkIsDue: an unchanged store
// revision skips the walk; a walk that took d defers the next by 9d; the
// final call walks regardless.
func TestTailWalksOnlyWhenTheStoreMovedAndTheWalkIsDue(t *testing.T) {
	c := engine.New(engine.Config{}, nil)
	t0 := time.Unix(1700000000, 0)
	clock := t0
	tl := NewTail(c.Dialogs(), nil)
	tl.now = func() time.Time {
		now := clock
		clock = clock.Add(10 * time.Millisecond) // every walk takes 10 ms
		return now
	}
	sendSIP(c, t0, "a", "INVITE sip:b@x SIP/2.0", 1, "INVITE")
	if got := fmt.Sprint(nextIDs(t, tl, false)); got != "[a/0]" {
		t.Fatalf("first walk %s", got)
	}
	// The walk ran from t0 to t0+10ms: the next is due at t0+90ms.
	sendSIP(c, t0.Add(time.Second), "a", "SIP/2.0 180 Ringing", 1, "INVITE")
	if got := nextIDs(t, tl, false); len(got) != 0 {
		t.Fatalf("walk before it was due wrote %v", got)
	}
	clock = t0.Add(100 * time.Millisecond)
	if got := fmt.Sprint(nextIDs(t, tl, false)); got != "[a/1]" {
		t.Fatalf("due walk %s, want [a/1]", got)
	}
	clock = clock.Add(time.Hour)
	rev := c.Dialogs().Revision()
	if got := nextIDs(t, tl, false); len(got) != 0 || tl.rev != rev {
		t.Fatalf("unchanged store: %v", got)
	}
	sendSIP(c, t0.Add(2*time.Second), "a", "SIP/2.0 200 OK", 1, "INVITE")
	if got := fmt.Sprint(nextIDs(t, tl, true)); got != "[a/2]" {
		t.Fatalf("final walk %s, want [a/2]", got)
	}
}
